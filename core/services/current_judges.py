"""Each run's current judging and its judge, for labels and tables that name the judge.

Why: `runs.judge_model` is the judge of the run's first judging; after a `rescore` the numbers
every page shows come from the run's current judging (`current_judgings`), judged by another
model. A label or a Runs table that read `runs.judge_model` named the wrong judge, and two runs
of one model judged by different judges read alike on the Compare page (issue 31)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from core.store import Store


def current_judges(store: Store) -> pd.DataFrame:
    """One row per run: run_id, judging (its current one), judge_model and judge_template of
    that judging when it is an LLM judging (NULL for a code-scored one)."""
    return store.df(
        """
        SELECT c.run_id, c.judging,
               CASE WHEN a.kind = 'judge' THEN a.judge_model END AS judge_model,
               CASE WHEN a.kind = 'judge' THEN a.template_id END AS judge_template
        FROM current_judgings c
        JOIN all_judgings a ON a.run_id = c.run_id AND a.judging = c.judging
        ORDER BY c.run_id"""
    )


def judge_suffix(judge_model: object, judging: object) -> str:
    """' · judge M' (and ' · judging J' when it is not the run's own 'default'), '' for a run
    without an LLM judge: what the Compare page's run labels add."""
    text = ""
    if isinstance(judge_model, str) and judge_model:
        text += f" · judge {judge_model}"
    if isinstance(judging, str) and judging and judging != "default" and text:
        text += f" · judging {judging}"
    return text
