"""The BIG-Bench Mistake paper's published tables (registry `published`, `published_sources`):
Tables 4, 5 and 9, unchanged; the source id names paper and table (`bigbench_mistake:T4`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from core.services.published import PUBLISHED_DIR
from core.store import Store


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


def sources(store: Store) -> pd.DataFrame:
    """One row per published table: source, title, evaluator, models, settings, cells."""
    bbm = store.df("""
        SELECT source, count(*) AS cells, count(DISTINCT model) AS models,
               string_agg(DISTINCT method, ', ') AS settings
        FROM published_bbm GROUP BY source""")
    bbm["evaluator"] = "exact match"
    bbm["title"] = (
        "BIG-Bench Mistake paper, Table " + bbm["source"].astype(str).str.split("T").str[-1]
    )
    return bbm
