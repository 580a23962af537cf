"""`init`: create or migrate the database, load published tables and the built-in samples.

Running it twice leaves the same rows: published tables are replaced wholesale and each
built-in item set is re-imported under its fixed name.
"""

from __future__ import annotations

import argparse
import importlib

from core import published
from core.storage import PROJECT_ROOT, Store

SAMPLES_DIR = PROJECT_ROOT / "data" / "samples"

# (item set name, module with `import_builtin(store, path, name)`, sample file)
BUILTIN_SAMPLES: list[tuple[str, str, str]] = [
    ("misprompt-sample", "core.misprompt.items", "misprompt_sample.csv"),
    ("errorbench-sample", "core.errorbench.cli", "errorbench_sample.m2"),
    ("bbm-sample", "core.bbm", "bbm_sample.jsonl"),
]


def init(store: Store) -> dict[str, int]:
    """Idempotent set-up of a database; returns row counts per thing loaded."""
    published.refresh_copies()
    counts = published.load_published(store)
    for name, module_name, filename in BUILTIN_SAMPLES:
        path = SAMPLES_DIR / filename
        if not path.exists():
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        counts[f"items:{name}"] = module.import_builtin(store, path, name)
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
