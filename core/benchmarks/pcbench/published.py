"""The PCBench paper's per-model tables (registry `published`, `published_sources`).

The repository's README shows its results table as an image only; the numbers behind it are
published as files: evaluation/statistics/<model>_eval_statistics.json of
github.com/MLGroupJLU/Premise_Critique (MIT), one per model, with counts per error type ×
difficulty for the "active" (our proactive) and "passive" (our assisted) settings and mean
response lengths in tokens. data/published/pcbench_statistics.csv holds them unchanged for the
15 models of the paper's summary (all_models_overall_summary.csv), one row per model × error
type × difficulty × variant ('all' = the file's overall and by-type / by-difficulty blocks),
with the file and commit each row comes from.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from core.services.published import PUBLISHED_DIR
from core.store import Store

SOURCE = "pcbench:statistics"
CSV_NAME = "pcbench_statistics.csv"
TITLE = "PCBench paper, per-model statistics (repository evaluation/statistics, o3-mini judge)"


def read(path: Path | None = None) -> pd.DataFrame:
    """The CSV as published_pcbench rows (rate in percent, from the published counts)."""
    raw = pd.read_csv(path or PUBLISHED_DIR / CSV_NAME)
    return pd.DataFrame(
        {
            "source": SOURCE,
            "paper": raw["paper"],
            "model": raw["model"],
            "error_type": raw["error_type"],
            "difficulty": raw["difficulty"],
            "variant": raw["variant"],
            "n": raw["n"].astype(int),
            "critiqued": raw["critiqued"].astype(int),
            "rate": 100 * raw["rate_published"].astype(float),
            "mean_len_tokens": raw["mean_len_tokens"].astype(float),
            "note": raw["source_file"] + " @ " + raw["commit"].str[:7],
        }
    )


def sources(store: Store) -> pd.DataFrame:
    """One row per published table: source, title, evaluator, models, settings, cells."""
    pub = store.df("""
        SELECT source, count(*) AS cells, count(DISTINCT model) AS models,
               string_agg(DISTINCT variant, ', ') AS settings
        FROM published_pcbench GROUP BY source""")
    pub["evaluator"] = "judge (o3-mini)"
    pub["title"] = TITLE
    return pub
