"""Mis-prompt's F1 for the judge audit (the registry's `label_metrics`).

core/services/audit/ compares the judge's F1 with the F1 from people's labels on the same items;
it is scored here by core.benchmarks.misprompt.metrics, the same code as every other Mis-prompt
view, so the audit's judge numbers match the results pages.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.benchmarks.misprompt import metrics as mm
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS

RECALL_NOTE = "recall (no controls: precision unavailable)"


def overall_f1(item_rows: pd.DataFrame) -> pd.DataFrame:
    """Overall F1 per (run_id, evaluator) row group.

    `item_rows`: one row per response with run_id, model, setting, evaluator (the source name),
    is_error, primary_category, secondary_category and the six labels. Returns one row per
    (run_id, evaluator) as (run_id, source): the six labels and `average` in percent, and
    `metric` (F1, or recall when the group has no control items).
    """
    frame = item_rows.rename(columns={"run_id": "source"})
    long = mm.f1_table(frame)
    long = long[long["category_level"] == "all"]
    long = long.assign(
        label=long["metric"].str.replace(mm.RECALL_SUFFIX, "", regex=False),
        recall=long["metric"].str.endswith(mm.RECALL_SUFFIX),
    )
    wide = long.pivot_table(
        index=["source", "evaluator"], columns="label", values="f1", aggfunc="first", dropna=False
    )
    recall = long.groupby(["source", "evaluator"])["recall"].any()
    wide = wide.reindex(columns=[*JUDGE_LABELS, "average"])
    wide["metric"] = np.where(recall.reindex(wide.index).to_numpy(), RECALL_NOTE, "F1")
    return wide.reset_index().rename(columns={"source": "run_id", "evaluator": "source"})
