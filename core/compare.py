"""Proactive vs passive error handling, per model (issue 6 item 5).

Proactive: Mis-prompt detection F1 in the zero-shot setting (the model is not told to look for
errors). Passive: the same Mis-prompt items in passive mode (told to check for errors), and
BIG-Bench Mistake mistake-location accuracy (told to find the first wrong step).

Sources: the Mis-prompt paper's Table 3 (judge, zero-shot, all categories, detection), the
BIG-Bench Mistake paper's Table 4 (Overall, per method), and runs in this database. Detection F1
of a run is computed per SPEC §1 — erroneous item with detection true → TP, false → FN; control
item with detection true → FP; F1 = 2TP / (2TP + FP + FN) — by `core.misprompt.metrics` (the
Mis-prompt module's function, so both pages show one number); `detection_f1` below is the same
formula on item rows, used where that module is absent and by the tests as an independent check.

Model names differ between the papers (GPT-4o vs GPT-4, Gemini-1.5 vs Gemini Pro): rows are
never merged across different spellings; a model missing from a source shows a blank.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from core.bbm.metrics import ACCURACY, OVERALL
from core.bbm.prompts import METHOD_LABELS
from core.storage import Store

MISPROMPT_PAPER = "Mis-prompt paper, Table 3 (GPT-4o judge, zero-shot, all categories)"
BBM_PAPER = "BIG-Bench Mistake paper, Table 4 (Overall)"
PROACTIVE = "Mis-prompt detection F1 — proactive (zero-shot)"
PASSIVE = "Mis-prompt detection F1 — passive"
# a run without control items has no precision: its recall is a measure of its own, never F1
PROACTIVE_RECALL = "Mis-prompt detection recall (no controls) — proactive (zero-shot)"
PASSIVE_RECALL = "Mis-prompt detection recall (no controls) — passive"
PAPER_JUDGE = "GPT-4o (paper)"
NO_JUDGE = "none (exact match)"
LONG_COLUMNS = [
    "model",
    "measure_label",
    "kind",
    "mode",
    "judge",
    "source",
    "value",
    "recall",
    "note",
]


def bbm_label(method: str) -> str:
    return f"BBM accuracy — {METHOD_LABELS.get(method, method)}"


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
           ORDER BY rowid"""
    )
    mis = mis.assign(
        measure_label=PROACTIVE,
        kind="published",
        note="",
        mode="proactive",
        judge=PAPER_JUDGE,
        recall=False,
    )
    bbm = store.df(
        """SELECT model, method, value, source, note FROM published_bbm
           WHERE table_id = '4' AND task = ? AND subset = 'all' AND measure = ?
           ORDER BY rowid""",
        [OVERALL, ACCURACY],
    )
    bbm = bbm.assign(
        measure_label=[bbm_label(m) for m in bbm["method"]],
        kind="published",
        mode="passive",
        judge=NO_JUDGE,
        recall=False,
    )
    return pd.concat([mis[LONG_COLUMNS], bbm[LONG_COLUMNS]], ignore_index=True)


def _misprompt_run_detection(store: Store) -> pd.DataFrame:
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
    from core.misprompt.metrics import run_metrics

    table = run_metrics(store, list(runs["run_id"]), ci=False)
    table = table[
        (table["evaluator"] == "judge")
        & (table["category_level"] == "all")
        & table["metric"].isin(["detection", "detection_recall"])
    ]
    rows = [{"run_id": r.source, "value": r.f1, "metric": r.metric} for r in table.itertuples()]
    scored = pd.DataFrame(rows, columns=["run_id", "value", "metric"])
    out = runs.merge(scored, on="run_id", how="inner")
    out["note"] = [
        "recall (no control items: precision unavailable)" if m.endswith("_recall") else ""
        for m in out["metric"]
    ]
    return out


def judge_name(judge_model: object, judge_template: object) -> str:
    """'SmolLM2 (judge.v1)': the judge that produced a run's verdicts, as labels show it."""
    model = "?" if judge_model is None or pd.isna(judge_model) else str(judge_model)
    template = (
        "judge template unknown"
        if judge_template is None or pd.isna(judge_template) or not str(judge_template)
        else str(judge_template).split("/", 1)[-1]
    )
    return f"{model} ({template})"


def run_rows(store: Store) -> pd.DataFrame:
    frames = []
    mis = _misprompt_run_detection(store)
    if len(mis):
        keep = (mis["mode"] == "passive") | (mis["setting"].fillna("zero-shot") == "zero-shot")
        mis = mis[keep]
        labels = []
        recall = mis["metric"].astype(str).str.endswith("_recall")
        for r, is_recall in zip(mis.itertuples(), recall):
            if r.mode == "passive":
                setting = r.setting or "zero-shot"
                labels.append(
                    (PASSIVE_RECALL if is_recall else PASSIVE)
                    + ("" if setting == "zero-shot" else f" ({setting})")
                )
            else:
                labels.append(PROACTIVE_RECALL if is_recall else PROACTIVE)
        frames.append(
            pd.DataFrame(
                {
                    "model": mis["model"].fillna(""),
                    "measure_label": labels,
                    "kind": "run",
                    "mode": mis["mode"],
                    "judge": [
                        judge_name(j, t) for j, t in zip(mis["judge_model"], mis["judge_template"])
                    ],
                    "source": mis["run_id"],
                    "value": mis["value"],
                    "recall": recall.to_numpy(),
                    "note": mis["note"],
                    "created_at": mis["created_at"],
                    "weak_model": mis["weak_model"],
                }
            )
        )
    from core.bbm.queries import bbm_runs, run_metrics

    runs = bbm_runs(store)
    for r in runs.itertuples():
        m = run_metrics(store, r.run_id)
        overall = m[(m["task"] == OVERALL) & (m["subset"] == "all") & (m["measure"] == ACCURACY)]
        for row in overall.itertuples():
            n_tasks = m[
                (m["measure"] == ACCURACY) & (m["subset"] == "all") & (m["task"] != OVERALL)
            ]["task"].nunique()
            frames.append(
                pd.DataFrame(
                    [
                        {
                            "model": r.model or "",
                            "measure_label": bbm_label(row.method),
                            "kind": "run",
                            "mode": "passive",
                            "judge": NO_JUDGE,
                            "recall": False,
                            "source": r.run_id,
                            "value": row.value,
                            "note": f"mean over {n_tasks} task(s) of item set {r.item_set}",
                            "created_at": r.created_at,
                            "weak_model": bool(r.weak_model),
                        }
                    ]
                )
            )
    if not frames:
        return pd.DataFrame(columns=LONG_COLUMNS + ["created_at", "weak_model"])
    return pd.concat(frames, ignore_index=True)


def long_table(store: Store) -> pd.DataFrame:
    """Every value with its source: published cells and one row per run."""
    pub = published_rows(store).assign(created_at=pd.NaT, weak_model=False)
    runs = run_rows(store)
    frames = [f for f in (pub, runs) if len(f)]
    if not frames:
        return pd.DataFrame(columns=LONG_COLUMNS + ["created_at", "weak_model"])
    return pd.concat(frames, ignore_index=True)


def wide_table(long: pd.DataFrame) -> pd.DataFrame:
    """One row per model name, one column per measure and kind; a run column holds the latest run.

    Blanks mean the source has no value for that name. Columns: `model`, then e.g.
    `Mis-prompt detection F1 — proactive (zero-shot) [published]`, `... [runs]`.
    """
    if long.empty:
        return pd.DataFrame(columns=["model"])
    frame = long.copy()
    frame["column"] = (
        frame["measure_label"]
        + " ["
        + frame["kind"].map({"published": "published", "run": "runs"})
        + "]"
    )
    frame = frame.sort_values("created_at", kind="stable", na_position="first")
    latest = frame.groupby(["model", "column"], sort=False).tail(1)
    wide = latest.pivot(index="model", columns="column", values="value")
    order = []
    for label in [PROACTIVE, PASSIVE, PROACTIVE_RECALL, PASSIVE_RECALL] + [
        bbm_label(m) for m in METHOD_LABELS
    ]:
        for kind in ("published", "runs"):
            col = f"{label} [{kind}]"
            if col in wide.columns:
                order.append(col)
    order += [c for c in wide.columns if c not in order]
    models = list(dict.fromkeys(frame["model"]))
    return wide.reindex(index=models, columns=order).reset_index()


def name_overlap(long: pd.DataFrame) -> dict[str, list[str]]:
    """Which model names appear on the proactive side, the passive side, and both."""
    pro = set(long[long["measure_label"].str.startswith("Mis-prompt")]["model"])
    pas = set(long[long["measure_label"].str.startswith("BBM")]["model"])
    return {
        "proactive_only": sorted(pro - pas),
        "passive_only": sorted(pas - pro),
        "both": sorted(pro & pas),
    }
