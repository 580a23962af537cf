"""Published tables of the source papers: copied into data/published/ and loaded into the store.

The CSVs are the papers' numbers, unchanged. Each benchmark names its tables and their readers
in its registry entry (`published`) and declares their columns (core/declared.py
`PublishedTable`): the rows go into the store's one long `published` table, and the package's
view of the table's name reads them back as its reader made them. A benchmark's own vocabulary
(its setting names, its tables' titles) lives in its package.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from core.declared import published_tables
from core.registry import BENCHMARKS
from core.store import PROJECT_ROOT, Store, insert_frame

SHARED_PUBLISHED = PROJECT_ROOT.parent / "shared" / "published"
PUBLISHED_DIR = PROJECT_ROOT / "data" / "published"


def refresh_copies(src: Path = SHARED_PUBLISHED, dst: Path = PUBLISHED_DIR) -> list[Path]:
    """Copy the shared CSVs into data/published/ when the shared folder is there."""
    copied: list[Path] = []
    if not src.is_dir():
        return copied
    dst.mkdir(parents=True, exist_ok=True)
    for csv in sorted(src.glob("*.csv")):
        target = dst / csv.name
        if not target.exists() or target.read_bytes() != csv.read_bytes():
            shutil.copyfile(csv, target)
        copied.append(target)
    return copied


def load_published(store: Store) -> dict[str, int]:
    """Replace the published tables with the CSVs' contents (idempotent, one transaction):
    every benchmark's `published` (store table, reader) pairs, in registry order."""
    frames = {
        table: reader() for bench in BENCHMARKS.values() for table, reader in bench.paper.tables
    }

    declared = published_tables()

    def write(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
        counts = {}
        for table, frame in frames.items():
            if table in declared:  # a view over the long table
                con.execute("DELETE FROM published WHERE table_name = ?", [table])
                counts[table] = insert_frame(con, "published", declared[table].long_rows(frame))
            else:  # a table of the package's own
                con.execute(f"DELETE FROM {table}")
                counts[table] = insert_frame(con, table, frame)
        return counts

    return store.transaction(write)
