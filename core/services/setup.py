"""`init`: create or migrate the database, load published tables and the built-in samples.

Running it twice leaves the same rows: published tables are replaced wholesale and each
registered benchmark's built-in item set is re-imported under its fixed name. A built-in set
that runs use is never changed (item sets that runs use are immutable, see
core.store.replace_item_set): when the sample file is unchanged the re-import is a no-op; when
the shipped file changed (a newer checkout), the old set is kept for those runs and `init`
warns, naming the runs.
"""

from __future__ import annotations

import argparse
import sys

from core.registry import BENCHMARKS
from core.services import published
from core.store import PROJECT_ROOT, ItemSetInUse, Store

SAMPLES_DIR = PROJECT_ROOT / "data" / "samples"


def _in_use(exc: BaseException | None) -> ItemSetInUse | None:
    """The ItemSetInUse behind an importer's own error type (they chain it as __cause__)."""
    while exc is not None:
        if isinstance(exc, ItemSetInUse):
            return exc
        exc = exc.__cause__
    return None


def init(store: Store, warnings: list[str] | None = None) -> dict[str, int]:
    """Idempotent set-up of a database; returns row counts per thing loaded. A built-in set
    that runs use and whose shipped file changed is kept as it is; the reason is appended to
    `warnings` (or printed to stderr when no list is given). A missing sample file is an error
    (the repository ships them), not something to skip silently."""
    published.refresh_copies()
    with store.session():  # ~40 small reads and writes: one open of the file, not ~40
        return _load(store, warnings)


def _load(store: Store, warnings: list[str] | None) -> dict[str, int]:
    counts = published.load_published(store)
    for bench in BENCHMARKS.values():
        if bench.imports.builtin is None:
            continue
        name, filename, importer = bench.imports.builtin
        path = SAMPLES_DIR / filename
        try:
            counts[f"items:{name}"] = importer()(store, path, name)
        except Exception as exc:
            used = _in_use(exc)
            if used is None:
                raise
            note = (
                f"warning: {path.name} changed since item set {name!r} was loaded, but "
                f"{len(used.runs)} run(s) use that set ({', '.join(used.runs[:5])}"
                f"{' …' if len(used.runs) > 5 else ''}); kept the old set so their "
                f"results keep their meaning. To use the new sample, import it under "
                f"another name: python -m core import {bench.imports.word} "
                f"{path} --name {used.suggestion}"
            )
            if warnings is None:
                print(note, file=sys.stderr)
            else:
                warnings.append(note)
            counts[f"items:{name}"] = int(
                store.scalar("SELECT count(*) FROM items WHERE item_set = ?", [name]) or 0
            )
    return counts


def configure(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    pass


def main(args: argparse.Namespace) -> int:
    store = Store.open(args.db)
    counts = init(store)
    print(f"database: {store.display}")
    for key, n in counts.items():
        print(f"  {key}: {n} rows")
    return 0
