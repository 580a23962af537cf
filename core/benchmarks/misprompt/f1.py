"""Mis-prompt F1 from label counts: the table's vocabulary (labels, keys, columns) and the
pure path verdicts -> label pattern counts -> F1 per cell (core.benchmarks.misprompt.metrics
describes the scoring; this is its arithmetic, shared by the SQL path and the bootstrap)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS, PRIMARY, SECONDARY
from core.store import scratch

LABELS: tuple[str, ...] = JUDGE_LABELS
METRICS: tuple[str, ...] = LABELS + ("average",)
KEYS: list[str] = ["source", "model", "setting", "evaluator"]
COLUMNS: list[str] = [
    "source",
    "model",
    "setting",
    "evaluator",
    "category_level",
    "category",
    "metric",
    "f1",
]
RUN_COLUMNS: list[str] = COLUMNS + ["ci_low", "ci_high"]
# what `metrics misprompt` prints (issue 18): every row with its n (erroneous items of the cell,
# the items its TP and FN rest on), interval and the judging it comes from
OUTPUT_COLUMNS: list[str] = COLUMNS + ["n", "ci_low", "ci_high", "judging"]
HUMAN_JUDGING = "human"  # the `judging` of human rows: majority of the annotators' labels
LEVELS: tuple[str, ...] = ("all", "primary", "secondary")
RECALL_SUFFIX = "_recall"
DEFAULT_BOOTSTRAP = 1000


class UnknownSource(ValueError):
    """--source names neither `published`, a published table nor a Mis-prompt run."""


# ----------------------------------------------------------------------------------------------
# Pure functions: item-level verdicts -> pattern counts -> F1 table (+ bootstrap)
# ----------------------------------------------------------------------------------------------


def inconsistent_mask(frame: pd.DataFrame) -> pd.Series:
    """True where an 'accurate' label is true but its 'attempt' label is false (SPEC §1)."""

    def b(col: str) -> pd.Series:
        return frame[col].astype("boolean").fillna(False).astype(bool)

    return (b("identification_accurate") & ~b("identification_attempt")) | (
        b("correction_accurate") & ~b("correction_attempt")
    )


def pattern_counts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Collapse item-level rows into counts of identical (keys, category, is_error, labels) rows.

    `verdicts` needs is_error, primary_category, secondary_category and the six labels (bool or
    missing); absent KEYS columns are filled ('' and evaluator 'judge'). Missing labels stay
    missing (<NA>) and leave that label only. An optional `cluster` column (the item's group,
    missing for none) is kept: `bootstrap_ci` then resamples clusters.
    """
    frame = verdicts.copy()
    for key in KEYS:
        if key not in frame:
            frame[key] = "judge" if key == "evaluator" else ""
    for col in ("primary_category", "secondary_category"):
        if col not in frame:
            frame[col] = ""
    for label in LABELS:
        frame[label] = frame[label].astype("boolean")
    frame["is_error"] = frame["is_error"].astype(bool)
    cols = KEYS + ["primary_category", "secondary_category", "is_error", *LABELS]
    if "cluster" in frame:  # the item's `group` (items of one source): a cluster bootstrap
        cols.append("cluster")
    return frame[cols].groupby(cols, dropna=False, sort=True).size().rename("n").reset_index()


def label_sums(patterns: pd.DataFrame) -> pd.DataFrame:
    """Per KEYS × categories × is_error: n, pos_<label> (label true) and known_<label> counts."""
    frame = patterns[KEYS + ["primary_category", "secondary_category", "is_error", "n"]].copy()
    for label in LABELS:
        v = patterns[label].astype("boolean")
        frame[f"pos_{label}"] = v.fillna(False).astype(bool).astype(np.int64) * frame["n"]
        frame[f"known_{label}"] = v.notna().astype(np.int64) * frame["n"]
    keys = KEYS + ["primary_category", "secondary_category", "is_error"]
    return frame.groupby(keys, dropna=False, sort=True).sum().reset_index()


_CATEGORY_ORDER = {c: i for i, c in enumerate(["All", *PRIMARY, *SECONDARY])}


def _f1_sql(sums_sql: str | None = None) -> str:
    """SQL over `label_sums` rows `s` (a registered frame, or the given SQL as a CTE):
    F1 (or recall) per KEYS × level × category × metric.

    The six labels are unpivoted into rows so one expression serves them all (a short plan:
    planning, not data, dominates at a few hundred input rows)."""
    keys = ", ".join(KEYS)
    pairs = ", ".join(f"(pos_{lb}, known_{lb}) AS {lb}" for lb in LABELS)
    label_order = ", ".join(f"('{lb}', {j})" for j, lb in enumerate(LABELS))
    cat_order = ", ".join(f"('{c}', {i})" for c, i in _CATEGORY_ORDER.items())
    source = f"s AS ({sums_sql}), " if sums_sql else ""
    tp, n_err = "e.tp::DOUBLE", "e.n_err::DOUBLE"
    c_fp, c_n = "coalesce(c.c_fp, 0)::DOUBLE", "coalesce(c.c_n, 0)::DOUBLE"
    fp = (
        f"CASE WHEN {c_n} = 0 THEN NULL WHEN e.gp = 1 AND e.gs = 1 THEN {c_fp} "
        f"ELSE {c_fp} / {c_n} * {n_err} END"
    )
    fn = f"({n_err} - {tp})"
    f1 = (
        f"CASE WHEN {c_n} > 0 THEN (CASE WHEN 2 * {tp} + {fp} + {fn} > 0 THEN "
        f"200.0 * {tp} / (2 * {tp} + {fp} + {fn}) END) "
        f"ELSE (CASE WHEN {n_err} > 0 THEN 100.0 * {tp} / {n_err} END) END"
    )
    return f"""
        WITH {source}u AS (
            UNPIVOT (SELECT {keys}, primary_category, secondary_category, is_error,
                            {", ".join(f"pos_{lb}, known_{lb}" for lb in LABELS)} FROM s)
            ON {pairs} INTO NAME label VALUE pos, known),
        c AS (SELECT {keys}, label, sum(pos) AS c_fp, sum(known) AS c_n
              FROM u WHERE NOT is_error GROUP BY ALL),
        e AS (
            SELECT {keys}, label, GROUPING(primary_category) AS gp,
                   GROUPING(secondary_category) AS gs, primary_category, secondary_category,
                   sum(pos) AS tp, sum(known) AS n_err
            FROM u WHERE is_error
            GROUP BY GROUPING SETS (({keys}, label), ({keys}, label, primary_category),
                                    ({keys}, label, secondary_category))),
        l AS (
            SELECT {", ".join("e." + k for k in KEYS)},
                   CASE WHEN e.gp = 0 THEN 'primary' WHEN e.gs = 0 THEN 'secondary' ELSE 'all'
                   END AS category_level,
                   CASE WHEN e.gp = 0 THEN e.primary_category WHEN e.gs = 0
                        THEN e.secondary_category ELSE 'All' END AS category,
                   CASE WHEN e.gp = 0 THEN 1 WHEN e.gs = 0 THEN 2 ELSE 0 END AS _lvl,
                   lo.ord AS _met,
                   e.label || CASE WHEN {c_n} > 0 THEN '' ELSE '{RECALL_SUFFIX}' END AS metric,
                   {f1} AS f1, {tp} AS tp, {fn} AS fn, {fp} AS fp,
                   {n_err} AS n_error, {c_n} AS n_control
            FROM e LEFT JOIN c USING ({keys}, label)
            JOIN (VALUES {label_order}) lo(name, ord) ON lo.name = e.label),
        a AS (
            SELECT {keys}, category_level, category, _lvl, {len(LABELS)} AS _met,
                   'average' || CASE WHEN bool_or(metric LIKE '%{RECALL_SUFFIX}') THEN
                       '{RECALL_SUFFIX}' ELSE '' END AS metric,
                   -- added in label order: avg() adds in whatever order rows arrive, so the
                   -- last bit could differ between two runs over the same counts
                   CASE WHEN count(f1) = {len(LABELS)} THEN ({
        " + ".join(f"max(f1) FILTER (WHERE _met = {j})" for j in range(len(LABELS)))
    })
                       / {len(LABELS)} END AS f1,
                   NULL::DOUBLE AS tp, NULL::DOUBLE AS fn, NULL::DOUBLE AS fp,
                   max(n_error) AS n_error, max(n_control) AS n_control
            FROM l GROUP BY {keys}, category_level, category, _lvl)
        SELECT {keys}, category_level, category, metric, f1, tp, fn, fp,
               n_error::BIGINT AS n_error, n_control::BIGINT AS n_control
        FROM (SELECT * FROM l UNION ALL SELECT * FROM a) x
        LEFT JOIN (VALUES {cat_order}) o(name, ord) ON o.name = x.category
        ORDER BY {keys}, _lvl, coalesce(o.ord, 999), category, _met
    """


_F1_SQL: str | None = None


def f1_from_sums(sums: pd.DataFrame) -> pd.DataFrame:
    """F1 (percent) per KEYS × level × category × metric from `label_sums` rows.

    Computed by DuckDB SQL on the frame (GROUPING SETS for the three levels). Returns COLUMNS
    plus tp, fn, fp (fp scaled per category), n_error, n_control. Metric names end in
    `_recall` (and the value is recall) where a key group has no control items.
    """
    global _F1_SQL
    extra = ["tp", "fn", "fp", "n_error", "n_control"]
    if sums.empty:
        return pd.DataFrame(columns=COLUMNS + extra)
    if _F1_SQL is None:
        _F1_SQL = _f1_sql()
    frame = sums.copy()
    frame["is_error"] = frame["is_error"].astype(bool)
    con = scratch()
    try:
        con.register("s", frame)
        return con.execute(_F1_SQL).df()
    finally:
        con.close()


def f1_from_patterns(patterns: pd.DataFrame) -> pd.DataFrame:
    """F1 table from pattern counts (see `f1_from_sums`)."""
    if patterns.empty:
        return f1_from_sums(pd.DataFrame())
    return f1_from_sums(label_sums(patterns))


def f1_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """F1 table (COLUMNS) from item-level verdict rows; see `pattern_counts` for the input."""
    return f1_from_patterns(pattern_counts(verdicts))[COLUMNS]
