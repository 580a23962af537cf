"""Metrics of a judged-example run under one judging (the run's current one unless named):
how often the judge says the answer noticed / fixed the planted error, false alarms on
controls, and accuracy (the record's `correct`)."""

from __future__ import annotations

import pandas as pd

from core.store import Store, runs_without_judging


def metrics(store: Store, run_id: str, judging: str | None = None) -> pd.DataFrame:
    """One row: source, judging, n (ok verdicts), n_error, n_control, noticed_pct and
    fixed_pct (of items with an error), false_alarm_pct (noticed on controls), accuracy_pct."""
    if judging is not None and runs_without_judging(store, [run_id], judging):
        raise ValueError(f"run {run_id!r} has no judging {judging!r} (see `rescore`)")
    name = judging or store.scalar(
        "SELECT judging FROM current_judgings WHERE run_id = ?", [run_id]
    )
    frame = store.df(
        "SELECT v.noticed, v.fixed, v.correct, i.is_error FROM judged_verdicts v "
        "JOIN runs r USING (run_id) JOIN items i ON i.item_set = r.item_set "
        "AND i.item_id = v.item_id WHERE v.run_id = ? AND v.judging = ? AND v.status = 'ok'",
        [run_id, name],
    )
    errors, controls = frame[frame["is_error"]], frame[~frame["is_error"]]

    def pct(part: pd.Series) -> float | None:
        return round(100 * float(part.mean()), 1) if len(part) else None

    return pd.DataFrame(
        [
            {
                "source": run_id,
                "judging": name,
                "n": len(frame),
                "n_error": len(errors),
                "n_control": len(controls),
                "noticed_pct": pct(errors["noticed"]),
                "fixed_pct": pct(errors["fixed"]),
                "false_alarm_pct": pct(controls["noticed"]),
                "accuracy_pct": pct(frame["correct"]),
            }
        ]
    )


def verdicts(store: Store, run_id: str) -> pd.DataFrame:
    """Each response of a run with its current judging's record (the results page's table)."""
    return store.df(
        "SELECT x.item_id, v.judging, v.status, v.answer, v.correct, v.explanation, x.response "
        "FROM responses x LEFT JOIN current_results v USING (run_id, item_id, variant) "
        "WHERE x.run_id = ? ORDER BY x.item_id",
        [run_id],
    )
