"""`init`: create or migrate the database, load published tables and the built-in samples.

Running it twice leaves the same rows: published tables are replaced wholesale and each
built-in item set is re-imported under its fixed name.
"""

from __future__ import annotations

import argparse

from core import published
from core.benchmarks import BENCHMARKS, resolve
from core.storage import PROJECT_ROOT, Store

SAMPLES_DIR = PROJECT_ROOT / "data" / "samples"


def init(store: Store) -> dict[str, int]:
    """Idempotent set-up of a database; returns row counts per thing loaded.

    Every registered benchmark's built-in sample is (re)loaded; a sample file that is missing
    is an error (the repository ships them), not something to skip silently."""
    published.refresh_copies()
    counts = published.load_published(store)
    for bench in BENCHMARKS.values():
        if bench.builtin is None:
            continue
        name, filename, importer = bench.builtin
        path = SAMPLES_DIR / filename
        counts[f"items:{name}"] = resolve(importer)(store, path, name)
    return counts


def configure(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    pass


def main(args: argparse.Namespace) -> int:
    store = Store.open(args.db)
    counts = init(store)
    print(f"database: {store.path}")
    for key, n in counts.items():
        print(f"  {key}: {n} rows")
    return 0
