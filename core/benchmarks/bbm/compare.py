"""BIG-Bench Mistake's part of the proactive-vs-passive comparison (core.services.compare).

Passive: mistake-location accuracy (the model is told to find the first wrong step), per method.
Sources: the BIG-Bench Mistake paper's Table 4 (Overall, per method) and runs in this database,
whose accuracy is the mean over the tasks of the run's item set (Table 4's Overall rule).
"""

from __future__ import annotations

import pandas as pd

from core.benchmarks.bbm.metrics import ACCURACY, OVERALL
from core.benchmarks.bbm.prompts import METHOD_LABELS
from core.services.compare import LONG_COLUMNS, NO_JUDGE, Contribution
from core.store import Store

BBM_PAPER = "BIG-Bench Mistake paper, Table 4 (Overall)"
NOTE = (
    "BIG-Bench Mistake (passive: the model is asked to find the first mistake in a trace): "
    "mistake-location accuracy; a run's accuracy is the mean over the tasks in its item set "
    "(Table 4's Overall rule)."
)


def bbm_label(method: str) -> str:
    return f"BBM accuracy — {METHOD_LABELS.get(method, method)}"


def published_rows(store: Store) -> pd.DataFrame:
    bbm = store.df(
        """SELECT model, method, value, source, note FROM published_bbm
           WHERE table_id = '4' AND task = ? AND subset = 'all' AND measure = ?
           ORDER BY position""",
        [OVERALL, ACCURACY],
    )
    bbm = bbm.assign(
        measure_label=[bbm_label(m) for m in bbm["method"]],
        kind="published",
        mode="passive",
        judge=NO_JUDGE,
        recall=False,
    )
    return bbm[LONG_COLUMNS]


def run_rows(store: Store) -> pd.DataFrame | None:
    """One row per run and method with an Overall accuracy; None when there is none."""
    from core.benchmarks.bbm.queries import bbm_runs, run_metrics

    frames = []
    runs = bbm_runs(store)
    for r in runs.to_dict("records"):
        m = run_metrics(store, r["run_id"])
        overall = m[(m["task"] == OVERALL) & (m["subset"] == "all") & (m["measure"] == ACCURACY)]
        for row in overall.to_dict("records"):
            n_tasks = m[
                (m["measure"] == ACCURACY) & (m["subset"] == "all") & (m["task"] != OVERALL)
            ]["task"].nunique()
            frames.append(
                pd.DataFrame(
                    [
                        {
                            "model": r["model"] or "",
                            "measure_label": bbm_label(row["method"]),
                            "kind": "run",
                            "mode": "passive",
                            "judge": NO_JUDGE,
                            "recall": False,
                            "source": r["run_id"],
                            "value": row["value"],
                            "n": row["n"],
                            "ci_low": row["ci_low"],
                            "ci_high": row["ci_high"],
                            "note": f"mean over {n_tasks} task(s) of item set {r['item_set']}",
                            "created_at": r["created_at"],
                            "weak_model": bool(r["weak_model"]),
                        }
                    ]
                )
            )
    return pd.concat(frames, ignore_index=True) if frames else None


COMPARISON: Contribution = Contribution(
    published=published_rows,
    runs=run_rows,
    measures=tuple(bbm_label(m) for m in METHOD_LABELS),
    paper=BBM_PAPER,
    note=NOTE,
)
