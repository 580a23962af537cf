"""The Mis-prompt paper's published tables (registry `published`, `published_sources`).

The CSVs are the paper's numbers, unchanged; names are normalised by core.services.published's maps
(settings zero-shot | one-shot | three-shot | cot | sft, evaluator judge | human). The source id
names paper and table (`misprompt:T6`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from core.services.published import EVALUATOR_NAMES, PUBLISHED_DIR, SETTING_NAMES
from core.store import Store


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


def sources(store: Store) -> pd.DataFrame:
    """One row per published table: source, title, evaluator, models, settings, cells."""
    from core.benchmarks.misprompt.queries import source_title

    mis = store.df("""
        SELECT source, min(evaluator) AS evaluator, count(*) AS cells,
               count(DISTINCT model) FILTER (WHERE model <> 'Avg') AS models, string_agg(DISTINCT setting, ', ') AS settings
        FROM published_misprompt GROUP BY source""")
    mis["title"] = mis["source"].astype(str).map(source_title)
    return mis
