"""The Mis-prompt paper's published tables (registry `published`, `published_sources`).

The CSVs are the paper's numbers, unchanged; names are normalised by the maps below (settings
zero-shot | one-shot | three-shot | cot | sft, evaluator judge | human), so that published rows
and runs share one vocabulary. The source id names paper and table (`misprompt:T6`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from core.services.published import PUBLISHED_DIR
from core.store import Store

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


def read_counts(path: Path | None = None) -> pd.DataFrame:
    raw = pd.read_csv(path or PUBLISHED_DIR / "misprompt_dataset_counts.csv")
    raw.insert(0, "paper", "misprompt")
    return raw


def source_title(source: str) -> str:
    """'misprompt:T7' -> 'Mis-prompt paper, Table 7 — Language Errors'; a run id -> 'run <id>'."""
    if source.startswith("misprompt:T"):
        table = source.split("T", 1)[1]
        return f"Mis-prompt paper, {TABLE_TITLES.get(table, 'Table ' + table)}"
    return f"run {source}"


def sources(store: Store) -> pd.DataFrame:
    """One row per published table: source, title, evaluator, models, settings, cells."""
    mis = store.df("""
        SELECT source, min(evaluator) AS evaluator, count(*) AS cells,
               count(DISTINCT model) FILTER (WHERE model <> 'Avg') AS models, string_agg(DISTINCT setting, ', ') AS settings
        FROM published_misprompt GROUP BY source""")
    mis["title"] = mis["source"].astype(str).map(source_title)
    return mis
