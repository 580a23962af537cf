"""Mis-prompt's part of the proactive-vs-passive comparison (core.services.compare): detection F1.

Proactive: detection F1 in the zero-shot setting (the model is not told to look for errors).
Passive: the same items in passive mode (told to check for errors); the paper publishes no
passive numbers, so those come from runs only.

Sources: the Mis-prompt paper's Table 3 (judge, zero-shot, all categories, detection) and runs in
this database. Detection F1 of a run is computed per SPEC §1 — erroneous item with detection
true → TP, false → FN; control item with detection true → FP; F1 = 2TP / (2TP + FP + FN) — by
`core.benchmarks.misprompt.metrics` (the Mis-prompt page's function, so both pages show one number);
`detection_f1` below is the same formula on item rows, used by the tests as an independent check.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from core.engine import templates
from core.services.compare import LONG_COLUMNS, Contribution
from core.store import Store

MISPROMPT_PAPER = "Mis-prompt paper, Table 3 (GPT-4o judge, zero-shot, all categories)"
PROACTIVE = "Mis-prompt detection F1 — proactive (zero-shot)"
PASSIVE = "Mis-prompt detection F1 — passive"
# a run without control items has no precision: its recall is a measure of its own, never F1
PROACTIVE_RECALL = "Mis-prompt detection recall (no controls) — proactive (zero-shot)"
PASSIVE_RECALL = "Mis-prompt detection recall (no controls) — passive"
PAPER_JUDGE = "GPT-4o (paper)"
NOTE = (
    "Mis-prompt detection F1 of a run: an erroneous item the model flags is a TP, one it misses "
    "a FN, a control item it flags a FP; F1 = 2TP / (2TP + FP + FN), over all categories, as the "
    "Mis-prompt results page computes it (core.benchmarks.misprompt.metrics). Passive mode wraps "
    "the same items in a check-for-errors instruction; the paper publishes no passive-mode "
    "numbers, so passive detection exists for runs only. A run without control items has no "
    "precision: its value is detection **recall**, in columns of its own, never beside F1. "
    "Published detection F1: GPT-4o as judge (the paper)."
)


def detection_f1(is_error: Iterable[bool], detection: Iterable[bool | None]) -> float:
    """SPEC §1 detection F1 in percent from item rows (missing labels are skipped).

    Without any control item precision is undefined: returns recall and callers must say so.
    """
    tp = fp = fn = 0
    for err, det in zip(is_error, detection):
        if det is None or (isinstance(det, float) and pd.isna(det)):
            continue
        if err and det:
            tp += 1
        elif err:
            fn += 1
        elif det:
            fp += 1
    denom = 2 * tp + fp + fn
    return 100.0 * 2 * tp / denom if denom else float("nan")


def published_rows(store: Store) -> pd.DataFrame:
    mis = store.df(
        """SELECT model, f1 AS value, source FROM published_misprompt
           WHERE table_id = '3' AND evaluator = 'judge' AND setting = 'zero-shot'
             AND category_level = 'all' AND metric = 'detection' AND model <> 'Avg'
           ORDER BY position"""
    )
    mis = mis.assign(
        measure_label=PROACTIVE,
        kind="published",
        note="",
        mode="proactive",
        judge=PAPER_JUDGE,
        recall=False,
    )
    return mis[LONG_COLUMNS]


def _run_detection(store: Store) -> pd.DataFrame:
    """Per Mis-prompt run: detection F1 (or recall without controls), mode, setting."""
    # judge and template of each run's current judging (the one its F1 comes from)
    runs = store.df("""SELECT r.run_id, r.model, r.setting, coalesce(r.mode, 'proactive') AS mode,
                              coalesce(r.weak_model, false) AS weak_model, r.created_at,
                              coalesce(a.judge_model, r.judge_model) AS judge_model,
                              coalesce(a.template_id, json_extract_string(
                                  r.params, '$.judge_template')) AS judge_template
                       FROM runs r
                       LEFT JOIN current_judgings c ON c.run_id = r.run_id
                       LEFT JOIN all_judgings a ON a.run_id = c.run_id AND a.judging = c.judging
                       WHERE r.benchmark = 'misprompt'
                         AND coalesce(r.kind, 'eval') = 'eval'""")
    if runs.empty:
        return pd.DataFrame(columns=["run_id", "value", "metric", "note"])
    from core.benchmarks.misprompt.metrics import run_metrics

    # with its bootstrap interval over the run's items (all categories only: one level)
    table = run_metrics(store, list(runs["run_id"]), ci=True, levels=("all",))
    table = table[
        (table["evaluator"] == "judge")
        & (table["category_level"] == "all")
        & table["metric"].isin(["detection", "detection_recall"])
    ]
    rows = [
        {
            "run_id": r.source,
            "value": r.f1,
            "metric": r.metric,
            "n": r.n_error,  # the items TP and FN rest on, as `metrics misprompt` says n
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
        }
        for r in table.itertuples()
    ]
    scored = pd.DataFrame(rows, columns=["run_id", "value", "metric", "n", "ci_low", "ci_high"])
    out = runs.merge(scored, on="run_id", how="inner")
    out["note"] = [
        "recall (no control items: precision unavailable)" if m.endswith("_recall") else ""
        for m in out["metric"]
    ]
    return out


def judge_name(judge_model: object, judge_template: object) -> str:
    """'SmolLM2 (misprompt/judge.v1)': the judge that produced a run's verdicts, as labels
    show it (the full template id, as everywhere)."""
    model = judge_model if isinstance(judge_model, str) else "?"  # None or NaN: not recorded
    return f"{model} ({templates.shown_id(judge_template) or 'judge template unknown'})"


def run_rows(store: Store) -> pd.DataFrame | None:
    """One row per run: proactive zero-shot or passive (any setting); None without a run."""
    mis = _run_detection(store)
    if not len(mis):
        return None
    keep = (mis["mode"] == "passive") | (mis["setting"].fillna("zero-shot") == "zero-shot")
    mis = mis[keep]
    labels = []
    recall = mis["metric"].astype(str).str.endswith("_recall")
    for r, is_recall in zip(mis.to_dict("records"), recall):
        if r["mode"] == "passive":
            setting = r["setting"] or "zero-shot"
            labels.append(
                (PASSIVE_RECALL if is_recall else PASSIVE)
                + ("" if setting == "zero-shot" else f" ({setting})")
            )
        else:
            labels.append(PROACTIVE_RECALL if is_recall else PROACTIVE)
    return pd.DataFrame(
        {
            "model": mis["model"].fillna(""),
            "measure_label": labels,
            "kind": "run",
            "mode": mis["mode"],
            "judge": [judge_name(j, t) for j, t in zip(mis["judge_model"], mis["judge_template"])],
            "source": mis["run_id"],
            "value": mis["value"],
            "n": mis["n"],
            "ci_low": mis["ci_low"],
            "ci_high": mis["ci_high"],
            "recall": recall.to_numpy(),
            "note": mis["note"],
            "created_at": mis["created_at"],
            "weak_model": mis["weak_model"],
        }
    )


COMPARISON: Contribution = Contribution(
    published=published_rows,
    runs=run_rows,
    measures=(PROACTIVE, PASSIVE, PROACTIVE_RECALL, PASSIVE_RECALL),
    paper=MISPROMPT_PAPER,
    note=NOTE,
)
