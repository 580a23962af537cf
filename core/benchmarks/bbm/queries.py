"""Data access for BIG-Bench Mistake (pages and the metrics command). Every function takes a Store
first so pages can call it through `pages.ui.common.cached`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from core.benchmarks.bbm.items import BENCHMARK, task_label
from core.benchmarks.bbm.metrics import OUTPUT_COLUMNS, metrics_from_traces, published_metrics
from core.benchmarks.bbm.published import read_bbm
from core.services.queries import (
    benchmark_item_sets,
    check_run_source,
    item_with_payload,
    natural_key,
    natural_order,
)
from core.services.queries import json_value as _json
from core.store import Store

PUBLISHED = "published"


class UnknownSource(ValueError):
    pass


def published_table(store: Store) -> pd.DataFrame:
    """The paper's Tables 4, 5, 9 (published_bbm); from the CSV when the table is still empty."""
    frame = store.df("SELECT * EXCLUDE (position) FROM published_bbm ORDER BY position")
    if frame.empty:
        frame = read_bbm()
    return frame


def bbm_runs(store: Store) -> pd.DataFrame:
    """Runs with their protocol (`paper` = the paper's own prompts, else `ours`) and how their
    item set holds Dyck languages (`dyck`: subsample N (seed S) / all N traces / none)."""
    frame = store.df(
        """SELECT r.run_id, r.model, r.endpoint, r.setting AS method, r.item_set, r.status,
                  r.weak_model, r.template_id, r.n_planned, r.created_at,
                  count(x.item_id) FILTER (WHERE x.status = 'ok') AS n_ok,
                  count(x.item_id) FILTER (WHERE x.status = 'failed') AS n_failed,
                  any_value(TRY_CAST(json_extract(s.info, '$.dyck_sample.traces') AS BIGINT))
                      AS dyck_sample,
                  any_value(TRY_CAST(json_extract(s.info, '$.dyck_sample.seed') AS BIGINT))
                      AS dyck_seed,
                  any_value(TRY_CAST(json_extract(s.info, '$.tasks.dyck_languages.traces')
                                     AS BIGINT)) AS dyck_traces
           FROM runs r LEFT JOIN responses x ON x.run_id = r.run_id
           LEFT JOIN item_sets s ON s.name = r.item_set
           WHERE r.benchmark = ? AND coalesce(r.kind, 'eval') = 'eval'
           GROUP BY ALL ORDER BY r.created_at DESC, r.run_id""",
        [BENCHMARK],
    )
    from core.benchmarks.bbm.paper_prompts import is_paper_template

    frame["protocol"] = ["paper" if is_paper_template(t) else "ours" for t in frame["template_id"]]
    frame["dyck"] = [
        dyck_label(n, seed, total)
        for n, seed, total in zip(frame["dyck_sample"], frame["dyck_seed"], frame["dyck_traces"])
    ]
    return frame.drop(columns=["dyck_sample", "dyck_seed", "dyck_traces"])


def dyck_label(sample: Any, seed: Any, traces: Any) -> str:
    """How an item set holds Dyck languages, for the runs table."""
    if sample is not None and not pd.isna(sample):
        return f"subsample {int(sample)} (seed {int(seed)}; 15/85 like the paper's 592)"
    if traces is not None and not pd.isna(traces) and int(traces):
        return f"all {int(traces)} traces (the paper's cells used 592)"
    return "none"


def known_sources(store: Store) -> list[str]:
    return [PUBLISHED] + list(bbm_runs(store)["run_id"])


def run_traces(store: Store, run_id: str, judging: str | None = None) -> pd.DataFrame:
    """One row per response of a run, with the gold from its item. Scores are the run's own
    (judging 'default'), or those of a named `rescore` judging.

    The JSON fields are extracted by DuckDB, so a trace's steps (kilobytes each) are never
    parsed in Python: scoring 10,000 responses takes a fraction of a second.
    """
    frame = store.df(
        """SELECT x.run_id AS source, coalesce(r.model, '') AS model,
                  coalesce(i.primary_category, '?') AS task_slug, x.variant AS method,
                  x.item_id, x.status,
                  TRY_CAST(json_extract(i.payload, '$.mistake_index') AS BIGINT) AS gold_index,
                  TRY_CAST(json_extract(sc.scores, '$.predicted_index') AS BIGINT) AS pred_index,
                  TRY_CAST(json_extract(sc.scores, '$.predicted_step') AS BIGINT) AS pred_step,
                  coalesce(json_extract_string(sc.scores, '$.parse_status'), 'unparsable')
                      AS parse_status,
                  TRY_CAST(json_extract(sc.scores, '$.n_unparsable_steps') AS BIGINT)
                      AS n_unparsable_steps,
                  TRY_CAST(json_extract(sc.scores, '$.n_calls') AS BIGINT) AS n_calls,
                  coalesce(TRY_CAST(json_extract(i.payload, '$.answer_correct') AS BOOLEAN),
                           false) AS answer_correct,
                  coalesce(json_array_length(i.payload, '$.steps'), 0) AS n_steps,
                  nullif(json_extract_string(i.payload, '$.group'), '') AS cluster,
                  x.error
           FROM responses x JOIN runs r ON r.run_id = x.run_id
           LEFT JOIN results v ON v.run_id = x.run_id AND v.judging = ?
                AND v.item_id = x.item_id AND v.variant = x.variant AND v.epoch = x.epoch
           CROSS JOIN LATERAL (SELECT CASE WHEN ? IS NULL THEN x.scores ELSE v.metadata END
                               AS scores) sc
           LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = x.item_id
           WHERE x.run_id = ?""",
        [judging, judging, run_id],
    )
    frame["task"] = [task_label(t) for t in frame["task_slug"]]
    frame = natural_order(frame)  # `bbm_sample:2` before `bbm_sample:10` (ids are FILE:LINE)
    for col in (
        "gold_index",
        "pred_index",
        "pred_step",
        "n_unparsable_steps",
        "n_calls",
        "n_steps",
    ):
        frame[col] = frame[col].astype("Int64")
    frame["answer_correct"] = frame["answer_correct"].astype(bool)
    return frame[
        [
            "source",
            "model",
            "task",
            "method",
            "item_id",
            "status",
            "gold_index",
            "pred_index",
            "pred_step",
            "parse_status",
            "n_unparsable_steps",
            "n_calls",
            "answer_correct",
            "n_steps",
            "error",
            "cluster",
        ]
    ]


def run_trace_table(store: Store, run_id: str) -> pd.DataFrame:
    """Per-trace view for the drill-down: gold, prediction, whether the location was right."""
    from core.benchmarks.bbm.metrics import score_traces

    traces = run_traces(store, run_id)
    if traces.empty:
        return traces
    scored = score_traces(traces)
    scored["location_correct"] = scored["location_correct"].astype("boolean")
    scored.loc[scored["status"] != "ok", "location_correct"] = pd.NA
    gold_step = scored["gold_index"] + 1
    scored["gold_step"] = gold_step
    return scored[
        [
            "item_id",
            "task",
            "method",
            "status",
            "gold_step",
            "pred_step",
            "location_correct",
            "parse_status",
            "answer_correct",
            "n_steps",
            "n_calls",
            "error",
        ]
    ]


def run_metrics(store: Store, run_id: str, judging: str | None = None) -> pd.DataFrame:
    return metrics_from_traces(run_traces(store, run_id, judging))


def run_counts(store: Store, run_id: str) -> dict[str, int]:
    """How many traces were scored / failed / unparsable / ambiguous / out of range / partly parsed /
    cut at max_tokens (truncated)."""
    t = run_traces(store, run_id)
    ok = t[t["status"] == "ok"]
    return {
        "responses": len(t),
        "scored": len(ok),
        "failed": int((t["status"] != "ok").sum()),
        "unparsable": int((ok["parse_status"] == "unparsable").sum()),
        "ambiguous": int((ok["parse_status"] == "ambiguous").sum()),
        "out_of_range": int((ok["parse_status"] == "out_of_range").sum()),
        "partial": int((ok["parse_status"] == "partial").sum()),
        "truncated": int((ok["parse_status"] == "truncated").sum()),
    }


def unparsed_warnings(
    store: Store, run_ids: tuple[str, ...], threshold: float | None = None
) -> list[dict[str, Any]]:
    """Runs whose unparsable + out-of-range share of scored answers is at least `threshold`
    (default metrics.UNPARSED_WARN_SHARE): their charts mostly show parsing, not finding."""
    from core.benchmarks.bbm.metrics import UNPARSED_WARN_SHARE

    limit = UNPARSED_WARN_SHARE if threshold is None else threshold
    out = []
    for run_id in run_ids:
        c = run_counts(store, run_id)
        bad = c["unparsable"] + c["ambiguous"] + c["out_of_range"]
        if c["scored"] and bad / c["scored"] >= limit:
            out.append({"run_id": run_id, **c, "share": bad / c["scored"]})
    return out


def metrics_for_source(store: Store, source: str, judging: str | None = None) -> pd.DataFrame:
    """`published` or a bbm run id (its run-time scores, or a named judging's); UnknownSource
    lists the known ones."""
    from core.services.labels import PUBLISHED_JUDGING, judgings_shown

    if source == PUBLISHED:
        frame = published_metrics(published_table(store))  # keeps the paper's `note` column
        # the paper's tables give no n per cell: no interval either
        stats = pd.DataFrame({"n": pd.array([pd.NA] * len(frame), dtype="Int64")})
        stats["ci_low"] = stats["ci_high"] = float("nan")
        stats["judging"] = PUBLISHED_JUDGING
        return pd.concat([frame[OUTPUT_COLUMNS], stats, frame.drop(columns=OUTPUT_COLUMNS)], axis=1)
    check_run_source(store, source, known_sources(store), judging, error=UnknownSource)
    frame = run_metrics(store, source, None if judging == "default" else judging)
    # without --judging: the run's own scores, its 'default' judging (never the latest rescore)
    frame["judging"] = judgings_shown(store, [source], judging or "default").get(source, "")
    return frame


def combined_metrics(store: Store, run_ids: tuple[str, ...] = ()) -> pd.DataFrame:
    """Published rows plus the chosen runs, in one long frame (a `kind` column tells which)."""
    frames = [published_metrics(published_table(store)).assign(kind="published")]
    for run_id in run_ids:
        frames.append(run_metrics(store, run_id).assign(kind="run"))
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=OUTPUT_COLUMNS + ["kind"])
    return pd.concat(frames, ignore_index=True)


def item_sets(store: Store) -> pd.DataFrame:
    return benchmark_item_sets(store, BENCHMARK)


def set_items(store: Store, item_set: str) -> pd.DataFrame:
    raw = store.df(
        "SELECT item_id, primary_category, payload FROM items WHERE item_set = ? ORDER BY item_id",
        [item_set],
    )
    rows = []
    for rec in raw.to_dict("records"):
        p = _json(rec["payload"]) or {}
        mi = p.get("mistake_index")
        rows.append(
            {
                "item_id": rec["item_id"],
                "task": task_label(rec["primary_category"]),
                "n_steps": len(p.get("steps") or []),
                "gold_step": None if mi is None else mi + 1,
                "answer_correct": bool(p.get("answer_correct")),
            }
        )
    rows.sort(key=lambda r: natural_key(r["item_id"]))
    frame = pd.DataFrame(
        rows, columns=["item_id", "task", "n_steps", "gold_step", "answer_correct"]
    )
    frame["gold_step"] = frame["gold_step"].astype("Int64")
    return frame


def trace_detail(
    store: Store, item_set: str, item_id: str, run_id: str | None = None
) -> dict[str, Any] | None:
    """A trace with its gold and (given a run) the model's prediction and per-step answers."""
    item = item_with_payload(store, item_set, item_id, "prompt, primary_category")
    if item is None:
        return None
    p, (prompt, task) = item
    detail: dict[str, Any] = {
        "item_id": item_id,
        "task": task_label(task),
        "input": prompt,
        "steps": list(p.get("steps") or []),
        "answer": p.get("answer"),
        "target": p.get("target"),
        "gold_index": p.get("mistake_index"),
        "answer_correct": bool(p.get("answer_correct")),
        "prediction": None,
    }
    if run_id:
        resp = store.rows(
            "SELECT variant, status, response, scores, error FROM responses "
            "WHERE run_id = ? AND item_id = ? ORDER BY epoch",  # a run of K epochs: the first
            [run_id, item_id],
        )
        if resp:
            variant, status, text, scores, error = resp[0]
            detail["prediction"] = {
                "method": variant,
                "status": status,
                "response": text,
                "scores": _json(scores) or {},
                "error": error,
            }
    return detail


def paper_layout(metrics: pd.DataFrame, measure: str, subset: str) -> pd.DataFrame:
    """Rows task × model, one column per method (the paper's table layout)."""
    from core.benchmarks.bbm.charts import column_label
    from core.benchmarks.bbm.metrics import order_tasks
    from core.benchmarks.bbm.prompts import METHOD_LABELS

    part = metrics[(metrics["measure"] == measure) & (metrics["subset"] == subset)].copy()
    if part.empty:
        return pd.DataFrame(columns=["task", "model", *METHOD_LABELS.values()])
    if "kind" not in part:
        part["kind"] = "published"
    part["model"] = part.apply(column_label, axis=1)
    wide = part.pivot_table(
        index=["task", "model"], columns="method", values="value", aggfunc="first", sort=False
    ).reset_index()
    wide = wide.rename(columns=METHOD_LABELS)
    for label in METHOD_LABELS.values():
        if label not in wide:
            wide[label] = float("nan")
    order = {t: i for i, t in enumerate(order_tasks(wide["task"]))}
    wide = wide.sort_values("task", key=lambda s: s.map(order), kind="stable")
    return wide[["task", "model", *METHOD_LABELS.values()]].reset_index(drop=True)


def table9_consistency(store: Store) -> pd.DataFrame:
    """Table 9a/9b with Table 2's counts vs Table 4 (see core.benchmarks.bbm.consistency)."""
    from core.benchmarks.bbm.consistency import table9_vs_table4

    return table9_vs_table4(published_table(store))


def overall_consistency(store: Store) -> pd.DataFrame:
    """Table 4's printed Overall vs the mean of its task cells (see metrics.overall_check)."""
    from core.benchmarks.bbm.metrics import overall_check

    return overall_check(published_table(store))
