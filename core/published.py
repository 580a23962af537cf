"""Published tables of the source papers: copied into data/published/ and loaded into the store.

The CSVs are the papers' numbers, unchanged. Only names are normalised so that published rows
and runs share one vocabulary: settings become zero-shot | one-shot | three-shot | cot | sft and
the evaluator becomes judge | human. The source id names paper and table (`misprompt:T6`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from core.storage import PROJECT_ROOT, Store, insert_frame

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


def misprompt_source(table: str | int) -> str:
    return f"misprompt:T{table}"


def read_misprompt_f1(path: Path | None = None) -> pd.DataFrame:
    """The long-format Mis-prompt CSV, normalised to the published_misprompt columns."""
    raw = pd.read_csv(path or PUBLISHED_DIR / "misprompt_f1.csv", dtype={"table": str})
    return pd.DataFrame(
        {
            "source": raw["table"].map(misprompt_source),
            "paper": raw["paper"],
            "table_id": raw["table"],
            "evaluator": raw["evaluator"].map(EVALUATOR_NAMES),
            "model": raw["model"],
            "setting": raw["setting"].map(SETTING_NAMES),
            "category_level": raw["category_level"],
            "category": raw["category"],
            "metric": raw["metric"],
            "f1": raw["f1_percent"].astype(float),
        }
    )


def read_bbm(path: Path | None = None) -> pd.DataFrame:
    raw = pd.read_csv(path or PUBLISHED_DIR / "bigbench_mistake_accuracy.csv", dtype={"table": str})
    return pd.DataFrame(
        {
            "source": "bigbench_mistake:T" + raw["table"],
            "paper": raw["paper"],
            "table_id": raw["table"],
            "subset": raw["subset"],
            "task": raw["task"],
            "model": raw["model"],
            "method": raw["method"],
            "measure": raw["measure"],
            "value": raw["value_percent"].astype(float),
            "note": raw["note"].fillna(""),
        }
    )


def read_counts(path: Path | None = None) -> pd.DataFrame:
    raw = pd.read_csv(path or PUBLISHED_DIR / "misprompt_dataset_counts.csv")
    raw.insert(0, "paper", "misprompt")
    return raw


def load_published(store: Store) -> dict[str, int]:
    """Replace the published tables with the CSVs' contents (idempotent, one transaction)."""
    frames = {
        "published_misprompt": read_misprompt_f1(),
        "published_bbm": read_bbm(),
        "published_counts": read_counts(),
    }

    def write(con) -> dict[str, int]:
        counts = {}
        for table, frame in frames.items():
            con.execute(f"DELETE FROM {table}")
            counts[table] = insert_frame(con, table, frame)
        return counts

    return store.transaction(write)
