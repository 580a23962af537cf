"""Data access for ProcessBench (its page and `metrics processbench`). Every function takes a
Store first so pages can call it through `pages.ui.common.cached`.

Scores are read from `results`: a run's current judging (`current_judgings`: its latest
finished `rescore`, else its own scoring), or a judging named with `--judging`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from core.benchmarks.processbench.items import BENCHMARK
from core.benchmarks.processbench.metrics import COLUMNS, metrics_from_items, split_order
from core.services.queries import (
    benchmark_item_sets,
    check_run_source,
    item_with_payload,
    natural_order,
)
from core.services.queries import json_value as _json
from core.store import Store

PUBLISHED = "published"
# Why there is no published table (the page and `metrics --source published` say so).
NO_PUBLISHED = (
    "The ProcessBench paper's per-model table (Table 3: error / correct accuracy and F1 per "
    "split for each critic model and PRM) is not shipped: the public repository "
    "(github.com/QwenLM/ProcessBench) has no results table in its README or code, and the "
    "paper's text was not available to transcribe from. Nothing is guessed; runs are shown "
    "on their own."
)


class UnknownSource(ValueError):
    pass


def processbench_runs(store: Store) -> pd.DataFrame:
    """Runs with their current judging, its template and the counts of their responses."""
    return store.df(
        """SELECT r.run_id, r.model, r.item_set, r.status, r.weak_model, r.template_id,
                  r.n_planned, r.created_at, coalesce(c.judging, 'default') AS judging,
                  count(x.item_id) FILTER (WHERE x.status = 'ok') AS n_ok,
                  count(x.item_id) FILTER (WHERE x.status = 'failed') AS n_failed
           FROM runs r LEFT JOIN responses x ON x.run_id = r.run_id
           LEFT JOIN current_judgings c ON c.run_id = r.run_id
           WHERE r.benchmark = ? AND coalesce(r.kind, 'eval') = 'eval'
           GROUP BY ALL ORDER BY r.created_at DESC, r.run_id""",
        [BENCHMARK],
    )


def judging_template(store: Store, run_id: str, judging: str) -> str | None:
    """The template a judging used: the run's prompt template for its own scoring ('default'),
    else what `rescore` stored (the scorer's id)."""
    if judging == "default":
        value = store.scalar("SELECT template_id FROM runs WHERE run_id = ?", [run_id])
    else:
        value = store.scalar(
            "SELECT template_id FROM judgings WHERE run_id = ? AND judging = ?",
            [run_id, judging],
        )
    return None if value is None else str(value)


def current_judging(store: Store, run_id: str) -> str:
    value = store.scalar("SELECT judging FROM current_judgings WHERE run_id = ?", [run_id])
    return "default" if value is None else str(value)


def run_items(store: Store, run_id: str, judging: str | None = None) -> pd.DataFrame:
    """One row per response of a run with its item's split and label and the judging's reading
    (`judging` None = the run's current one). A response without a result of that judging
    (failed, or not judged yet) has status 'failed' and is left out of the metrics."""
    judging = judging or current_judging(store, run_id)
    frame = store.df(
        """SELECT x.item_id, coalesce(i.split, '?') AS split,
                  TRY_CAST(i.gold AS INTEGER) AS label,
                  CASE WHEN x.status = 'ok' AND v.status IS NOT NULL AND v.status <> 'failed'
                       THEN 'ok' ELSE 'failed' END AS status,
                  coalesce(v.status, 'failed') AS parse_status,
                  coalesce(v.correct, false) AS match,
                  TRY_CAST(v.metadata->>'predicted_index' AS INTEGER) AS predicted_index,
                  v.answer, coalesce(json_array_length(i.payload, '$.steps'), 0) AS n_steps,
                  x.error
           FROM responses x JOIN runs r ON r.run_id = x.run_id
           LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = x.item_id
           LEFT JOIN results v ON v.run_id = x.run_id AND v.judging = ?
                AND v.item_id = x.item_id AND v.variant = x.variant AND v.epoch = x.epoch
           WHERE x.run_id = ? ORDER BY x.item_id, x.epoch""",
        [judging, run_id],
    )
    frame["label"] = frame["label"].astype("Int64")
    frame["predicted_index"] = frame["predicted_index"].astype("Int64")
    frame["match"] = frame["match"].astype(bool)
    return natural_order(frame)


def run_metrics(store: Store, run_id: str, judging: str | None = None) -> pd.DataFrame:
    """The metrics rows of one run under one judging, with the source columns every metrics
    row carries (source, model, mode, judging, judging_template)."""
    judging = judging or current_judging(store, run_id)
    rows = metrics_from_items(run_items(store, run_id, judging))
    model = store.scalar("SELECT model FROM runs WHERE run_id = ?", [run_id])
    rows.insert(0, "source", run_id)
    rows.insert(1, "model", "" if model is None else str(model))
    rows.insert(2, "mode", "passive")  # the critic is asked to find the error
    rows["judging"] = judging
    rows["judging_template"] = judging_template(store, run_id, judging)
    return rows[COLUMNS].reset_index(drop=True)


def known_sources(store: Store) -> list[str]:
    return list(processbench_runs(store)["run_id"])


def metrics_for_source(store: Store, source: str, judging: str | None = None) -> pd.DataFrame:
    """A run's metrics (its current judging, or `judging`); `published` and unknown sources are
    an UnknownSource saying why (no published table is shipped, see NO_PUBLISHED)."""
    if source == PUBLISHED:
        raise UnknownSource(NO_PUBLISHED)
    check_run_source(
        store,
        source,
        known_sources(store),
        judging,
        known_as="known ProcessBench runs",
        none_yet="none yet (run `python -m core run processbench`)",
        error=UnknownSource,
    )
    return run_metrics(store, source, judging)


def combined_metrics(store: Store, run_ids: tuple[str, ...] = ()) -> pd.DataFrame:
    """The chosen runs' rows in one frame (no published rows: none are shipped)."""
    frames = [run_metrics(store, r) for r in run_ids]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def heatmap_table(metrics: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Split × model (run) of one measure, with each cell's n: the heatmap's source table."""
    if metrics.empty:
        return pd.DataFrame(columns=["split", "model", "source", measure, "n"])
    out = metrics[["split", "model", "source", measure, "n"]].copy()
    order = {s: i for i, s in enumerate([*split_order(list(out["split"].unique()))])}
    return out.sort_values(
        ["split", "source"], key=lambda c: c.map(order) if c.name == "split" else c
    )


def item_sets(store: Store) -> pd.DataFrame:
    return benchmark_item_sets(store, BENCHMARK)


def set_items(store: Store, item_set: str) -> pd.DataFrame:
    """An item set's solutions: id, split, generator, label, number of steps."""
    return natural_order(
        store.df(
            """SELECT item_id, split, secondary_category AS generator,
                      TRY_CAST(gold AS INTEGER) AS label,
                      coalesce(json_array_length(payload, '$.steps'), 0) AS n_steps
               FROM items WHERE item_set = ? AND benchmark = ? ORDER BY item_id""",
            [item_set, BENCHMARK],
        )
    )


def solution_detail(
    store: Store, item_set: str, item_id: str, run_id: str | None = None
) -> dict[str, Any] | None:
    """A solution with its steps and label and, given a run, the critique and its reading
    under the run's current judging."""
    item = item_with_payload(store, item_set, item_id, "prompt, split")
    if item is None:
        return None
    p, (problem, split) = item
    detail: dict[str, Any] = {
        "item_id": item_id,
        "split": split,
        "problem": problem,
        "steps": list(p.get("steps") or []),
        "label": p.get("label"),
        "generator": p.get("generator"),
        "final_answer_correct": p.get("final_answer_correct"),
        "verdict": None,
    }
    if run_id:
        judging = current_judging(store, run_id)
        found = store.rows(
            """SELECT x.status, x.response, x.error, v.status, v.answer, v.correct, v.metadata
               FROM responses x LEFT JOIN results v ON v.run_id = x.run_id AND v.judging = ?
                    AND v.item_id = x.item_id AND v.variant = x.variant AND v.epoch = x.epoch
               WHERE x.run_id = ? AND x.item_id = ? ORDER BY x.epoch""",  # K epochs: the first
            [judging, run_id, item_id],
        )
        if found:
            status, text, error, parse_status, answer, correct, meta = found[0]
            meta = _json(meta) or {}
            detail["verdict"] = {
                "judging": judging,
                "status": status,
                "response": text,
                "error": error,
                "parse_status": parse_status,
                "answer": answer,
                "correct": correct,
                "predicted_index": meta.get("predicted_index"),
                "boxed": meta.get("boxed"),
            }
    return detail
