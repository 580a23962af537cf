"""Published tables of the source papers: copied into data/published/ and loaded into the store.

The CSVs are the papers' numbers, unchanged. Each benchmark names its tables and their readers
in its registry entry (`published`); the readers live in its package. Only names are normalised
so that published rows and runs share one vocabulary: settings become zero-shot | one-shot |
three-shot | cot | sft and the evaluator becomes judge | human (the maps below).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from core.registry import BENCHMARKS
from core.store import PROJECT_ROOT, Store, insert_frame

SHARED_PUBLISHED = PROJECT_ROOT.parent / "shared" / "published"
PUBLISHED_DIR = PROJECT_ROOT / "data" / "published"

SETTING_NAMES = {
    "zero-shot": "zero-shot",
    "1-shot": "one-shot",
    "one-shot": "one-shot",
    "3-shot": "three-shot",
    "three-shot": "three-shot",
    "cot": "cot",
    "CoT": "cot",
    "SFT": "sft",
    "sft": "sft",
}
SETTING_ORDER = ["zero-shot", "one-shot", "three-shot", "cot", "sft"]
SETTING_LABELS = {
    "zero-shot": "zero-shot",
    "one-shot": "1-shot",
    "three-shot": "3-shot",
    "cot": "CoT",
    "sft": "SFT",
}
EVALUATOR_NAMES = {"gpt-4o-judge": "judge", "human": "human"}
TABLE_TITLES = {
    "3": "Table 3 — 13 models, zero-shot",
    "4": "Table 4 — GPT-4o by primary category",
    "6": "Table 6 — 13 models × settings",
    "7": "Table 7 — Language Errors",
    "8": "Table 8 — Incomplete Information",
    "9": "Table 9 — Factual Errors",
    "10": "Table 10 — Logical Errors",
    "11": "Table 11 — GPT-4o by secondary category",
    "12": "Table 12 — human evaluation",
}


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
    frames = {table: reader() for bench in BENCHMARKS.values() for table, reader in bench.published}

    def write(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
        counts = {}
        for table, frame in frames.items():
            con.execute(f"DELETE FROM {table}")
            counts[table] = insert_frame(con, table, frame)
        return counts

    return store.transaction(write)
