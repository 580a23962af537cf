"""Mis-prompt F1 per model, setting, evaluator and category (SPEC §1), for published tables and runs.

How a run is scored (SPEC §1; choices this project makes are marked *choice*):
- Per label ℓ: an erroneous item with ℓ true is a TP, with ℓ false a FN; a control item (error-free
  question) with ℓ true is a FP. Overall F1 = 2TP / (2TP + FP + FN), in percent.
- Per category c (*choice*, the paper is silent): TP_c and FN_c from c's items, and
  FP_c = (FP rate on the controls) × N_c, i.e. each category is scored as if paired 1:1 with controls.
- `average` = mean of the six label values.
- Without control items precision is unavailable: the value is *recall* TP / (TP + FN) and the metric
  is named `<label>_recall` (`average_recall`), never F1.
- Verdicts whose status is not `ok` are excluded and counted; verdicts where an "accurate" label is
  true while its "attempt" is false are counted (`inconsistent`) and scored as given, never fixed.
- Human rows (evaluator `human`) come from `human_labels` (*choice*): per response and label, the
  majority of annotators; a tie counts as false (an error claim needs a strict majority). Only
  labelled responses enter, so a 10% audit sample gives a 10% F1 table.
- 95% interval: percentile bootstrap over items, erroneous and control items resampled separately.
  Items are reduced to counts of identical label patterns; resampling n items with replacement is a
  multinomial draw over those patterns, which is exactly an item bootstrap but costs O(patterns).
  Items whose set records a `group` (the source they share: `group` column of the import) are
  resampled by group instead (a cluster bootstrap; an item without one is its own cluster).
- `metrics misprompt` prints `n` (the cell's erroneous items), the interval and `judging` (the
  judging's name and template, `with_provenance`) with every row (issue 18).

Point estimates are one DuckDB statement (filtered label counts per run × category, then
GROUPING SETS for the three levels), so the verdicts never reach Python; intervals use the label
pattern counts (one more GROUP BY). The pure functions (`f1_table`, `f1_from_patterns`,
`bootstrap_ci`) do the same on a DataFrame.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.benchmarks.misprompt.bootstrap import (
    _cells,
    _code_matrix,
    _label_codes,
    _Rows,
    _with_clusters,
    bootstrap_ci,
    with_ci,
)

# the module's parts (issue 30.5): every name stays importable from here (`metrics.xxx`)
from core.benchmarks.misprompt.f1 import (
    _CATEGORY_ORDER,
    _F1_SQL,
    COLUMNS,
    DEFAULT_BOOTSTRAP,
    HUMAN_JUDGING,
    KEYS,
    LABELS,
    LEVELS,
    METRICS,
    OUTPUT_COLUMNS,
    RECALL_SUFFIX,
    RUN_COLUMNS,
    UnknownSource,
    _f1_sql,
    f1_from_patterns,
    f1_from_sums,
    f1_table,
    inconsistent_mask,
    label_sums,
    pattern_counts,
)
from core.benchmarks.misprompt.f1_sql import (
    _CACHE_KEYS,
    _CLUSTER_SQL,
    _COUNT_COLS,
    _COUNTS_JSON,
    _COUNTS_STRUCT,
    _EVAL_RUNS,
    _F1_MEMO,
    _F1_MEMO_SIZE,
    _INCONSISTENT_SQL,
    _INTERVALS,
    _LABEL_COLS,
    _SUM_COLS,
    FINAL_STATUSES,
    _cache_counts,
    _diagnostics_sql,
    _fingerprint_sql,
    _patterns_sql,
    _run_filter,
    _sums_sql,
    _verdict_source,
    _write_if_free,
    f1_and_diagnostics,
    f1_in_database,
    judge_patterns,
    judging_literal,
    patterns,
    run_diagnostics,
)
from core.benchmarks.misprompt.intervals import (
    _INTERVAL_KEYS,
    _interval_frame,
    _json_float,
    _store_intervals,
    cell_intervals,
)
from core.store import Store

__all__ = [
    "metrics_from_patterns",
    "run_metrics",
    "published_metrics",
    "judgings_of",
    "known_sources",
    "metrics_for_source",
    "_items_not_answers",
    "with_provenance",
    "COLUMNS",
    "DEFAULT_BOOTSTRAP",
    "FINAL_STATUSES",
    "HUMAN_JUDGING",
    "KEYS",
    "LABELS",
    "LEVELS",
    "METRICS",
    "OUTPUT_COLUMNS",
    "RECALL_SUFFIX",
    "RUN_COLUMNS",
    "UnknownSource",
    "_CACHE_KEYS",
    "_CATEGORY_ORDER",
    "_CLUSTER_SQL",
    "_COUNTS_JSON",
    "_COUNTS_STRUCT",
    "_COUNT_COLS",
    "_EVAL_RUNS",
    "_F1_MEMO",
    "_F1_MEMO_SIZE",
    "_F1_SQL",
    "_INCONSISTENT_SQL",
    "_INTERVALS",
    "_INTERVAL_KEYS",
    "_LABEL_COLS",
    "_Rows",
    "_SUM_COLS",
    "_cache_counts",
    "_cells",
    "_code_matrix",
    "_diagnostics_sql",
    "_f1_sql",
    "_fingerprint_sql",
    "_interval_frame",
    "_json_float",
    "_label_codes",
    "_patterns_sql",
    "_run_filter",
    "_store_intervals",
    "_sums_sql",
    "_verdict_source",
    "_with_clusters",
    "_write_if_free",
    "bootstrap_ci",
    "cell_intervals",
    "f1_and_diagnostics",
    "f1_from_patterns",
    "f1_from_sums",
    "f1_in_database",
    "f1_table",
    "inconsistent_mask",
    "judge_patterns",
    "judging_literal",
    "label_sums",
    "pattern_counts",
    "patterns",
    "run_diagnostics",
    "with_ci",
]


def metrics_from_patterns(
    pattern_frame: pd.DataFrame,
    *,
    ci: bool = True,
    draws: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    levels: Sequence[str] = LEVELS,
) -> pd.DataFrame:
    """RUN_COLUMNS (+ n_error, n_control) from pattern counts; intervals (for `levels`) if `ci`."""
    table = f1_from_patterns(pattern_frame)
    if ci and len(pattern_frame):
        table = with_ci(table, pattern_frame, draws=draws, seed=seed, levels=levels)
    else:
        table["ci_low"] = np.nan
        table["ci_high"] = np.nan
    return table[RUN_COLUMNS + ["n_error", "n_control"]]


def run_metrics(
    store: Store,
    run_ids: Sequence[str] | None = None,
    *,
    ci: bool = True,
    draws: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    levels: Sequence[str] = LEVELS,
    judging: str | None = None,
) -> pd.DataFrame:
    """F1 rows of runs (judge and, where labelled, human), with bootstrap intervals if `ci`.
    Judge rows come from each run's current judging, or from `judging` when named."""
    if not ci:
        table = f1_in_database(store, run_ids, judging=judging)
        table["ci_low"] = np.nan
        table["ci_high"] = np.nan
        return table[RUN_COLUMNS + ["n_error", "n_control"]]
    return metrics_from_patterns(
        patterns(store, run_ids, judging=judging), ci=ci, draws=draws, seed=seed, levels=levels
    )


def published_metrics(store: Store, sources: Sequence[str] | None = None) -> pd.DataFrame:
    """Published rows exactly as loaded (CSV order), COLUMNS only."""
    where, params = "", []
    if sources:
        where = f"WHERE source IN ({', '.join('?' for _ in sources)})"
        params = list(sources)
    frame = store.df(
        f"SELECT {', '.join(COLUMNS)} FROM published_misprompt {where} ORDER BY position", params
    )
    return frame


def judgings_of(store: Store, run_id: str) -> list[str]:
    """A run's judging names, oldest first ('default' = its own)."""
    return [
        r[0]
        for r in store.rows(
            "SELECT judging FROM all_judgings WHERE run_id = ? ORDER BY created_at, judging",
            [run_id],
        )
    ]


def known_sources(store: Store) -> list[str]:
    runs = [
        r[0]
        for r in store.rows(
            f"SELECT run_id FROM runs r WHERE {_EVAL_RUNS} ORDER BY created_at, run_id"
        )
    ]
    tables = sorted(
        (r[0] for r in store.rows("SELECT DISTINCT source FROM published_misprompt")),
        key=lambda s: (len(s), s),
    )
    return ["published", *tables, *runs]


def metrics_for_source(
    store: Store,
    source: str,
    *,
    draws: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    judging: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(rows, diagnostics) for `published`, a published table id, or a run id (its current
    judging, or `judging`)."""
    known = known_sources(store)
    if source == "published":
        return published_metrics(store), None
    if source.startswith("misprompt:") and source in known:
        return published_metrics(store, [source]), None
    if source in known:
        if judging is not None:
            names = judgings_of(store, source)
            if judging not in names:
                raise UnknownSource(
                    f"run {source!r} has no judging {judging!r}; its judgings: " + ", ".join(names)
                )
        return (
            run_metrics(store, [source], draws=draws, seed=seed, judging=judging),
            run_diagnostics(store, [source], judging=judging),
        )
    raise UnknownSource(
        f"unknown source {source!r}. Known sources: {', '.join(known) or '(none)'}"
        + ("" if len(known) > 1 else " — run `python -m core init` to load the published tables")
    )


def _items_not_answers(store: Store, out: pd.DataFrame, judging: str | None) -> None:
    """`n` of the judge rows of runs asked K times: the cell's erroneous items, not its K·n
    answers (issue 29). In place; runs asked once keep their verdict count (the same)."""
    sources = [str(s) for s in out["source"].drop_duplicates()]
    if not sources:
        return
    marks = ", ".join("?" for _ in sources)
    multi = [
        r[0]
        for r in store.rows(
            f"SELECT DISTINCT run_id FROM results WHERE epoch > 1 AND run_id IN ({marks})",
            sources,
        )
    ]
    if not multi:
        return
    marks = ", ".join("?" for _ in multi)
    counts = store.df(
        f"""SELECT v.run_id AS source,
                   CASE WHEN GROUPING(i.primary_category) = 0 THEN 'primary'
                        WHEN GROUPING(i.secondary_category) = 0 THEN 'secondary'
                        ELSE 'all' END AS category_level,
                   CASE WHEN GROUPING(i.primary_category) = 0 THEN i.primary_category
                        WHEN GROUPING(i.secondary_category) = 0 THEN i.secondary_category
                        ELSE 'All' END AS category,
                   count(DISTINCT v.item_id) AS items
            FROM {_verdict_source("judge", judging)}
            JOIN runs r ON r.run_id = v.run_id
            JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id
            WHERE v.status = 'ok' AND coalesce(i.is_error, true) AND v.run_id IN ({marks})
            GROUP BY GROUPING SETS ((v.run_id), (v.run_id, i.primary_category),
                                    (v.run_id, i.secondary_category))""",
        multi,
    )
    items = {
        (str(s), str(lv), str(c)): int(n)
        for s, lv, c, n in zip(
            counts["source"], counts["category_level"], counts["category"], counts["items"]
        )
    }
    for idx, (s, ev, lv, c) in enumerate(
        zip(out["source"], out["evaluator"], out["category_level"], out["category"])
    ):
        key = (str(s), str(lv), str(c))
        if ev != "human" and key in items:
            out.iloc[idx, list(out.columns).index("n")] = items[key]


def with_provenance(store: Store, rows: pd.DataFrame, judging: str | None = None) -> pd.DataFrame:
    """`rows` (published or run rows) in OUTPUT_COLUMNS: n (a run's erroneous items of the
    cell; empty for published rows, whose tables give none), ci_low/ci_high (empty where
    absent) and `judging` — 'published', 'human', or the judging name and template the judge
    rows come from (the one named, else the run's current one: after a `rescore` the output
    says that it changed)."""
    from core.services.labels import PUBLISHED_JUDGING, judgings_shown

    out = rows.copy()
    for col in ("ci_low", "ci_high"):
        if col not in out:
            out[col] = np.nan
    if "n_error" not in out:  # the papers' rows
        out["n"] = pd.array([pd.NA] * len(out), dtype="Int64")
        out["judging"] = PUBLISHED_JUDGING
        return out[OUTPUT_COLUMNS]
    out["n"] = out["n_error"].astype("Int64")
    _items_not_answers(store, out, judging)
    shown = judgings_shown(store, [str(r) for r in out["source"].drop_duplicates()], judging)
    out["judging"] = [
        HUMAN_JUDGING if evaluator == "human" else shown.get(str(source), "")
        for source, evaluator in zip(out["source"], out["evaluator"])
    ]
    return out[OUTPUT_COLUMNS]
