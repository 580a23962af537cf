"""Bootstrap intervals of a run's cells, drawn once and kept in run_counts beside its counts
(under the same fingerprint), so a page does not redraw them on every server start."""

from __future__ import annotations

import json
from collections.abc import Sequence

import duckdb
import pandas as pd

from core.benchmarks.misprompt.bootstrap import bootstrap_ci
from core.benchmarks.misprompt.f1_sql import (
    _INTERVALS,
    _fingerprint_sql,
    _run_filter,
    _write_if_free,
    patterns,
)
from core.store import Store

# run_counts also keeps the intervals the page shows on a finished run's cells (status
# 'intervals', one row per run: draws, seed and every cell's interval as JSON), under the same
# fingerprint as its counts: a run's bootstrap is drawn once, not by every server that starts.
_INTERVAL_KEYS: list[str] = ["source", "evaluator", "category_level", "category", "metric"]
# how the kept intervals were computed: intervals kept by an older method are drawn again
# (issue 29: labels exact on the inverse distribution function; the average exact where its
# joint sums are few, else drawn until each end's Monte-Carlo error is within 0.5 point)
_METHOD = "exact-average-2"


def cell_intervals(store: Store, run_ids: Sequence[str], draws: int, seed: int = 0) -> pd.DataFrame:
    """Bootstrap intervals of every F1/recall cell of the runs (_INTERVAL_KEYS + ci_low,
    ci_high), each run drawn on its own (`bootstrap_ci` over that run's patterns alone, this
    `seed`), so a run's interval never depends on which other runs are asked for.

    Judge intervals of a finished run whose fingerprint is unchanged (the rule of the counts
    cache) are read from run_counts; the others are drawn (≈ 40 ms of seeded binomials per
    run) and, for finished runs, stored there for the next reader. Human rows are always
    drawn. Numbers are identical either way (json keeps a float's shortest repr exactly)."""
    ids = list(dict.fromkeys(run_ids))
    out_columns = _INTERVAL_KEYS + ["ci_low", "ci_high"]
    if not ids or draws <= 0:
        return pd.DataFrame(columns=out_columns)
    where, params = _run_filter(ids)
    marks = ", ".join("?" for _ in ids)
    with store.connect() as con:  # fingerprints before any count, as f1_and_diagnostics does
        state = {
            run: (fingerprint, bool(final))
            for run, fingerprint, final in con.execute(_fingerprint_sql(where), params).fetchall()
        }
        stored = con.execute(
            f"SELECT source, fingerprint, counts FROM run_counts "
            f"WHERE status = '{_INTERVALS}' AND source IN ({marks})",
            ids,
        ).fetchall()
        has_human = con.execute(
            f"SELECT EXISTS (SELECT 1 FROM human_labels WHERE run_id IN ({marks}))", ids
        ).fetchall()[0][0]
    frames: list[pd.DataFrame] = []
    served: set[str] = set()
    for source, fingerprint, payload in stored:
        fp, final = state.get(source, (None, False))
        data = json.loads(payload)
        if (
            final
            and fp == fingerprint
            and (data.get("draws"), data.get("seed"), data.get("method"))
            == (
                draws,
                seed,
                _METHOD,
            )
        ):
            frames.append(_interval_frame(source, data["rows"]))
            served.add(source)
    todo = [run for run in ids if run in state and run not in served]
    fresh: dict[str, list] = {}
    evaluators = ("judge",) + (("human",) if has_human else ())
    for evaluator in evaluators:
        runs = todo if evaluator == "judge" else ids
        if not runs:
            continue
        pats = patterns(store, runs, (evaluator,))
        for source, group in pats.groupby("source", sort=False):
            ci = bootstrap_ci(group.reset_index(drop=True), draws=draws, seed=seed)
            frames.append(ci[out_columns])
            if evaluator == "judge" and state[str(source)][1]:
                fresh[str(source)] = [
                    [lv, cat, met, _json_float(lo), _json_float(hi)]
                    for lv, cat, met, lo, hi in zip(
                        ci["category_level"],
                        ci["category"],
                        ci["metric"],
                        ci["ci_low"],
                        ci["ci_high"],
                    )
                ]
        if evaluator == "judge":  # finished runs without a scored verdict: nothing to draw
            for run in todo:
                if state[run][1] and run not in fresh:
                    fresh[run] = []
    if fresh:
        _store_intervals(store, {run: state[run][0] for run in fresh}, fresh, draws, seed)
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame(columns=out_columns)
    return pd.concat(frames, ignore_index=True)


def _json_float(value: float) -> float | None:
    return None if pd.isna(value) else float(value)


def _interval_frame(source: str, rows: list) -> pd.DataFrame:
    frame = pd.DataFrame(
        rows, columns=["category_level", "category", "metric", "ci_low", "ci_high"]
    )
    frame.insert(0, "evaluator", "judge")
    frame.insert(0, "source", source)
    for col in ("ci_low", "ci_high"):
        frame[col] = frame[col].astype(float)
    return frame


def _store_intervals(
    store: Store,
    fingerprints: dict[str, str],
    rows: dict[str, list],
    draws: int,
    seed: int,
) -> bool:
    """Keep finished runs' judge intervals in run_counts (replacing older ones), only for runs
    whose fingerprint is still the one read before drawing. Opportunistic (`_write_if_free`)."""
    ids = list(rows)
    marks = ", ".join("?" for _ in ids)

    def write(con: duckdb.DuckDBPyConnection) -> None:
        now = {
            run: fingerprint
            for run, fingerprint, final in con.execute(
                _fingerprint_sql(f" AND r.run_id IN ({marks})"), ids
            ).fetchall()
            if final
        }
        keep = [run for run in ids if now.get(run) == fingerprints[run]]
        con.execute(
            f"DELETE FROM run_counts WHERE status = '{_INTERVALS}' AND source IN ({marks})",
            ids,
        )
        if keep:
            con.executemany(
                "INSERT INTO run_counts (source, evaluator, counts, n, status, "
                f"fingerprint, computed_at) VALUES (?, 'judge', ?, 0, '{_INTERVALS}', ?, "
                "current_timestamp)",
                [
                    [
                        run,
                        json.dumps(
                            {"draws": draws, "seed": seed, "method": _METHOD, "rows": rows[run]}
                        ),
                        fingerprints[run],
                    ]
                    for run in keep
                ],
            )

    return _write_if_free(store, write)
