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

import contextlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS, PRIMARY, SECONDARY
from core.stats import draws_for, percentile_intervals, resample_counts
from core.store import JUDGING_NAME_RE, DatabaseError, Store, _write_lock, scratch

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


def _label_codes(patterns: pd.DataFrame) -> np.ndarray:
    """One integer per row for its six labels (base 3: false 0, true 1, missing 2), so rows of
    the same labels can be merged with numpy instead of a pandas groupby per group (a groupby
    per run and category cost ~10 ms each: 40 runs took ~10 s of CPU)."""
    codes = np.zeros(len(patterns), dtype=np.int64)
    for j, label in enumerate(LABELS):
        v = patterns[label].astype("boolean")
        digit = np.where(v.isna().to_numpy(), 2, v.fillna(False).to_numpy(dtype=bool).astype(int))
        codes += digit.astype(np.int64) * 3**j
    return codes


def _code_matrix(codes: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(counts, positive[m×6], known[m×6]) over the distinct label patterns of rows with these
    `codes` and counts `n`, in the order each pattern first appears (as a groupby(sort=False)
    gives them: the same draws, the same intervals).

    Rows of the same labels from different categories are merged first: the draw cost grows
    with the number of patterns (≤ 3^6), never with the number of items or categories.
    """
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    sums = np.zeros(len(uniq), dtype=np.int64)
    np.add.at(sums, inverse.ravel(), n)
    ordered = uniq[order]
    digits = (ordered[:, None] // (3 ** np.arange(len(LABELS)))[None, :]) % 3
    return sums[order], (digits == 1).astype(float), (digits != 2).astype(float)


@dataclass(frozen=True)
class _Rows:
    """A pattern frame as arrays, made once per bootstrap (see _label_codes)."""

    frame: pd.DataFrame
    codes: np.ndarray
    n: np.ndarray
    clustered: np.ndarray

    @classmethod
    def of(cls, patterns: pd.DataFrame) -> _Rows:
        frame = patterns.reset_index(drop=True)
        clustered = (
            frame["cluster"].notna().to_numpy()
            if "cluster" in frame
            else np.zeros(len(frame), dtype=bool)
        )
        return cls(frame, _label_codes(frame), frame["n"].to_numpy(dtype=np.int64), clustered)

    def units(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The resampling units of rows `idx`: label patterns of items without a group, then
        one unit per group (_with_clusters)."""
        free = idx[~self.clustered[idx]]
        counts, pos, known = _code_matrix(self.codes[free], self.n[free])
        grouped = idx[self.clustered[idx]]
        if len(grouped):
            return _with_clusters(self.frame.loc[grouped], counts, pos, known)
        return counts, pos, known


def _with_clusters(
    rows: pd.DataFrame, counts: np.ndarray, pos: np.ndarray, known: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add one unit per cluster (items of one `group`, count 1, holding its items' positive and
    known sums) to the pattern units: resampling them all is a cluster bootstrap in which an
    item without a group is a cluster of its own (its pattern unit counts such items)."""
    vals = rows[list(LABELS)].astype("boolean")
    n = rows["n"].to_numpy(dtype=float)[:, None]
    c_pos = pd.DataFrame(vals.fillna(False).to_numpy(dtype=bool) * n).groupby(
        rows["cluster"].to_numpy(), sort=True
    )
    c_known = pd.DataFrame(vals.notna().to_numpy(dtype=bool) * n).groupby(
        rows["cluster"].to_numpy(), sort=True
    )
    cp, ck = c_pos.sum().to_numpy(), c_known.sum().to_numpy()
    return (
        np.concatenate([counts, np.ones(len(cp), dtype=np.int64)]),
        np.vstack([pos, cp]) if len(pos) else cp,
        np.vstack([known, ck]) if len(known) else ck,
    )


def bootstrap_ci(
    patterns: pd.DataFrame,
    draws: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    confidence: float = 95.0,
    levels: Sequence[str] = LEVELS,
) -> pd.DataFrame:
    """Percentile bootstrap intervals for every row `f1_from_patterns` returns (of `levels`).

    Erroneous and control items are resampled separately (each a multinomial draw over its
    label patterns, which equals resampling items with replacement). One control draw per
    replicate serves all categories of a key group. Same seed, same intervals.
    """
    rows: list[dict] = []
    # per key group: its first row and its intervals (draws vary by group: draws_for)
    replicates: list[tuple[int, tuple[np.ndarray, np.ndarray]]] = []
    if patterns.empty or draws <= 0:
        return pd.DataFrame(
            columns=KEYS + ["category_level", "category", "metric", "ci_low", "ci_high"]
        )
    rng = np.random.default_rng(seed)
    data = _Rows.of(patterns)
    is_err = data.frame["is_error"].astype(bool).to_numpy()
    cat_values = {
        col: data.frame[col].to_numpy(dtype=object)
        for col in ("primary_category", "secondary_category")
    }
    for key, group in data.frame.groupby(KEYS, dropna=False, sort=True):
        idx = group.index.to_numpy()
        err, ctrl = idx[is_err[idx]], idx[~is_err[idx]]
        c_counts, c_pos, c_known = data.units(ctrl)
        has_ctrl = bool(c_counts.sum() > 0) and bool((c_known.T @ c_counts > 0).all())
        cells = _cells(err, levels, cat_values)
        # more draws where a cell has few items (issue 29: intervals that hold between seeds):
        # each cell draws for its own size (draws_for), the controls for the smallest cell of
        # every level, and a cell reads the first of them — so asking fewer levels draws the
        # same numbers, and a big cell beside a tiny one is not drawn 200,000 times
        sizes = [int(data.units(sub)[0].sum()) for _, _, sub in _cells(err, LEVELS, cat_values)]
        if has_ctrl:
            sizes.append(int(c_counts.sum()))
        g_draws = draws_for(min([n for n in sizes if n > 0], default=0), draws)
        c_size = int(c_counts.sum()) if has_ctrl else 0
        block: list[tuple[np.ndarray, np.ndarray]] = []
        first_row = len(rows)
        if has_ctrl:
            c_draw = resample_counts(rng, c_counts, g_draws)
            fp_all = c_draw @ c_pos  # draws × 6
            ctrl_known = c_draw @ c_known
            with np.errstate(divide="ignore", invalid="ignore"):
                rate = fp_all / ctrl_known
        for level, cat, sub in cells:
            if True:
                e_counts, e_pos, e_known = data.units(sub)
                n_cell = int(e_counts.sum())
                cell_draws = draws_for(min(n for n in (n_cell, c_size) if n > 0), draws)
                cell_draws = min(cell_draws, g_draws) if n_cell > 0 else g_draws
                e_draw = resample_counts(rng, e_counts, cell_draws)
                tp = e_draw @ e_pos
                n_err = e_draw @ e_known
                fn = n_err - tp
                with np.errstate(divide="ignore", invalid="ignore"):
                    if has_ctrl:
                        fp = fp_all[:cell_draws] if level == "all" else rate[:cell_draws] * n_err
                        values = 200.0 * tp / (2 * tp + fp + fn)
                    else:
                        values = 100.0 * tp / n_err
                block.append(percentile_intervals(values, confidence / 100))
                block.append(percentile_intervals(values.mean(axis=1)[:, None], confidence / 100))
                suffix = "" if has_ctrl else RECALL_SUFFIX
                for metric in METRICS:
                    rows.append(
                        dict(zip(KEYS, key))
                        | {"category_level": level, "category": cat, "metric": metric + suffix}
                    )
        if block:  # the group's intervals, in row order
            low = np.concatenate([b[0] for b in block])
            high = np.concatenate([b[1] for b in block])
            replicates.append((first_row, (low, high)))
    out = pd.DataFrame(rows)
    out["ci_low"], out["ci_high"] = np.nan, np.nan
    for start, (low, high) in replicates:
        out.loc[start : start + len(low) - 1, "ci_low"] = low
        out.loc[start : start + len(low) - 1, "ci_high"] = high
    return out


def _cells(
    err: np.ndarray, levels: Sequence[str], cat_values: dict[str, np.ndarray]
) -> list[tuple[str, str, np.ndarray]]:
    """(level, category, erroneous rows) of every cell of one key group, in table order."""
    cells: list[tuple[str, str, np.ndarray]] = []
    for level in [lv for lv in LEVELS if lv in levels]:
        if level == "all":
            cells.append((level, "All", err))
            continue
        col = "primary_category" if level == "primary" else "secondary_category"
        values_of = cat_values[col][err]
        present = ~pd.isna(values_of)
        # as groupby(col, sort=True): sorted categories, rows without one left out
        for c in sorted(set(values_of[present])):
            cells.append((level, c, err[present & (values_of == c)]))
    return cells


def with_ci(
    table: pd.DataFrame,
    patterns: pd.DataFrame,
    draws: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    levels: Sequence[str] = LEVELS,
) -> pd.DataFrame:
    ci = bootstrap_ci(patterns, draws=draws, seed=seed, levels=levels)
    on = KEYS + ["category_level", "category", "metric"]
    if ci.empty:
        out = table.copy()
        out["ci_low"] = np.nan
        out["ci_high"] = np.nan
        return out
    return table.merge(ci, on=on, how="left")


# ----------------------------------------------------------------------------------------------
# Database: pattern counts by SQL (the only pass over the verdict rows)
# ----------------------------------------------------------------------------------------------

# Mis-prompt evaluation runs; playground exchanges (runs.kind = 'playground') are one-item demos
# and never enter the F1 tables.
_EVAL_RUNS = "r.benchmark = 'misprompt' AND coalesce(r.kind, 'eval') = 'eval'"
_LABEL_COLS = ", ".join(f"v.{label}" for label in LABELS)
_INCONSISTENT_SQL = (
    "(coalesce(v.identification_accurate, false) AND NOT coalesce("
    "v.identification_attempt, false)) OR (coalesce(v.correction_accurate, false) "
    "AND NOT coalesce(v.correction_attempt, false))"
)


def _run_filter(run_ids: Sequence[str] | None, alias: str = "r") -> tuple[str, list]:
    if run_ids is None:
        return "", []
    ids = list(run_ids)
    if not ids:
        return " AND false", []
    return f" AND {alias}.run_id IN ({', '.join('?' for _ in ids)})", ids


def judging_literal(judging: str) -> str:
    """A judging name as a SQL string literal; names are checked (the run-name alphabet)."""
    if not JUDGING_NAME_RE.match(judging):
        raise ValueError(f"judging name {judging!r}: use letters, digits and . _ - : + = @")
    return "'" + judging + "'"


def _verdict_source(evaluator: str, judging: str | None = None) -> str:
    """FROM clause yielding one row per scored response: judge verdicts (each run's current
    judging, or the judging named) or majority human labels."""
    if evaluator == "judge":
        if judging is None:
            return "misprompt_current_verdicts v"
        return f"(SELECT * FROM misprompt_verdicts WHERE judging = {judging_literal(judging)}) v"
    pivots = ", ".join(
        f"bool_or(CASE WHEN label = '{label}' THEN share > 0.5 END) AS {label}" for label in LABELS
    )
    return f"""(
        SELECT run_id, item_id, variant, 'ok' AS status, {pivots}
        FROM (SELECT run_id, item_id, variant, label,
                     avg(CASE WHEN value THEN 1.0 ELSE 0.0 END) AS share
              FROM human_labels GROUP BY ALL)
        GROUP BY ALL) v"""


# The bootstrap's cluster of a verdict: the item's `group` (items of one source); for a run
# asked K times (`run --epochs K`) an item without a group is a cluster of its own, so its K
# answers are resampled together (issue 29: n items, not n × K independent answers).
_CLUSTER_SQL = """coalesce(nullif(json_extract_string(i.payload, '$.group'), ''),
    CASE WHEN v.run_id IN (SELECT run_id FROM results WHERE epoch > 1)
         THEN 'item:' || v.item_id END)"""


def _patterns_sql(evaluator: str, run_where: str, judging: str | None = None) -> str:
    """Pattern counts of one evaluator. Verdicts are grouped with their item (joined on item_id
    alone, item_set carried along) before the run is attached: on a million rows this is ~2×
    faster in DuckDB than joining runs first on the two-column key."""
    return f"""
        SELECT r.run_id AS source, coalesce(r.model, '') AS model,
               coalesce(r.setting, j.variant) AS setting, '{evaluator}' AS evaluator,
               j.primary_category, j.secondary_category, j.is_error,
               {", ".join(f"j.{label}" for label in LABELS)}, j.cluster, j.n
        FROM (SELECT v.run_id, v.variant, i.item_set, i.primary_category, i.secondary_category,
                     coalesce(i.is_error, true) AS is_error, {_LABEL_COLS},
                     {_CLUSTER_SQL} AS cluster, count(*)::BIGINT AS n
              FROM {_verdict_source(evaluator, judging)}
              JOIN items i ON i.item_id = v.item_id
              WHERE v.status = 'ok' AND i.benchmark = 'misprompt'{run_where}
              GROUP BY ALL) j
        JOIN runs r ON r.run_id = j.run_id AND r.item_set = j.item_set
        WHERE {_EVAL_RUNS}
    """


def patterns(
    store: Store,
    run_ids: Sequence[str] | None = None,
    evaluators: Sequence[str] = ("judge", "human"),
    judging: str | None = None,
) -> pd.DataFrame:
    """Pattern counts of judge verdicts (each run's current judging, or `judging`) and majority
    human labels in one statement."""
    where, params = _run_filter(run_ids, alias="v")
    sql = " UNION ALL ".join(_patterns_sql(e, where, judging) for e in evaluators) + " ORDER BY ALL"
    frame = store.df(sql, params * len(evaluators))
    for label in LABELS:
        frame[label] = frame[label].astype("boolean")
    return frame


def _sums_sql(
    evaluator: str, run_where: str, with_status: bool = False, judging: str | None = None
) -> str:
    """Per run × item category × is_error: label-true and label-known counts, one pass.

    Items are first mapped to a small integer code per (item set, categories, is_error), so the
    million-row GROUP BY hashes (run_id, code) instead of six strings (~40% less CPU), and
    `sum(label::INT)` counts the trues. With `with_status`, failed verdicts form their own
    groups (column `status`) so one pass also counts them; otherwise only `ok` verdicts count.
    """
    cols = ", ".join(
        [f"coalesce(sum(v.{lb}::INT), 0)::BIGINT AS pos_{lb}" for lb in LABELS]
        + [f"count(v.{lb})::BIGINT AS known_{lb}" for lb in LABELS]
        + [
            "count(*)::BIGINT AS n",
            f"coalesce(sum(({_INCONSISTENT_SQL})::INT), 0)::BIGINT AS n_inconsistent",
        ]
    )
    out_cols = ", ".join(
        [f"g.pos_{lb}" for lb in LABELS]
        + [f"g.known_{lb}" for lb in LABELS]
        + ["g.n", "g.n_inconsistent"]
        + (["CASE WHEN g.ok THEN 'ok' ELSE 'failed' END AS status"] if with_status else [])
    )
    ok_key = ", v.status = 'ok' AS ok" if with_status else ""
    status_where = "" if with_status else " AND v.status = 'ok'"
    return f"""
        SELECT * FROM (
        WITH c AS (
            SELECT *, row_number() OVER () AS code
            FROM (SELECT DISTINCT item_set, primary_category, secondary_category,
                         coalesce(is_error, true) AS is_error
                  FROM items WHERE benchmark = 'misprompt')),
        ii AS (
            SELECT i.item_id, c.code FROM items i
            JOIN c ON c.item_set = i.item_set
                  AND c.primary_category IS NOT DISTINCT FROM i.primary_category
                  AND c.secondary_category IS NOT DISTINCT FROM i.secondary_category
                  AND c.is_error = coalesce(i.is_error, true)
            WHERE i.benchmark = 'misprompt'),
        g AS (
            SELECT v.run_id, ii.code{ok_key}, {cols}
            FROM {_verdict_source(evaluator, judging)}
            JOIN ii ON ii.item_id = v.item_id
            WHERE true{status_where}{run_where}
            GROUP BY ALL)
        SELECT r.run_id AS source, coalesce(r.model, '') AS model,
               r.setting AS setting, '{evaluator}' AS evaluator,
               c.primary_category, c.secondary_category, c.is_error, {out_cols}
        FROM g JOIN c USING (code)
        JOIN runs r ON r.run_id = g.run_id AND r.item_set = c.item_set
        WHERE {_EVAL_RUNS})
    """


def f1_in_database(
    store: Store,
    run_ids: Sequence[str] | None = None,
    evaluators: Sequence[str] = ("judge", "human"),
    judging: str | None = None,
) -> pd.DataFrame:
    """`f1_from_sums(sums(store, run_ids))` as one statement: the verdicts never leave DuckDB."""
    where, params = _run_filter(run_ids, alias="v")
    sums_sql = " UNION ALL ".join(_sums_sql(e, where, judging=judging) for e in evaluators)
    frame = store.df(_f1_sql(sums_sql), params * len(evaluators))
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS + ["tp", "fn", "fp", "n_error", "n_control"])
    return frame


# Run statuses after which a run's verdicts no longer change (core/engine/runner.py writes done,
# failed, cancelled; 'interrupted' is what core/services/jobs.py shows for a dead 'running' run and is
# listed in case it is ever stored). Anything else (running, pending) is always counted live.
FINAL_STATUSES: tuple[str, ...] = ("done", "failed", "cancelled", "interrupted")

_COUNT_COLS: list[str] = (
    [f"pos_{lb}" for lb in LABELS] + [f"known_{lb}" for lb in LABELS] + ["n_inconsistent"]
)
# the count columns in _sums_sql's order (the cached rows are UNIONed with live ones by position)
_SUM_COLS: list[str] = [*_COUNT_COLS[:-1], "n", "n_inconsistent", "status"]
# run_counts keeps the label counts of a group as one JSON object (generic table, named values)
_COUNTS_JSON = "json_object(" + ", ".join(f"'{c}', s.{c}" for c in _COUNT_COLS) + ")"
_COUNTS_STRUCT = "{" + ", ".join(f'"{c}": "BIGINT"' for c in _COUNT_COLS) + "}"
_CACHE_KEYS: list[str] = [
    "source",
    "model",
    "setting",
    "evaluator",
    "primary_category",
    "secondary_category",
    "is_error",
]


def _fingerprint_sql(run_where: str) -> str:
    """Per Mis-prompt eval run: its fingerprint (status, updated_at and the item set's
    created_at as text — the runner bumps updated_at on every verdict write, a resume and the
    finish; re-importing an item set re-creates its row) and whether its status is final."""
    finals = ", ".join(f"'{s}'" for s in FINAL_STATUSES)
    return f"""
        SELECT r.run_id, coalesce(r.status, '') || '|' || coalesce(CAST(r.updated_at AS VARCHAR), '')
                   || '|' || coalesce(CAST(s.created_at AS VARCHAR), '')
                   || '|' || coalesce(cj.judging, '') || '|' || coalesce(j.status, '')
                   || '|' || coalesce(CAST(j.updated_at AS VARCHAR), '') AS fingerprint,
               coalesce(r.status IN ({finals}), false)
                   AND coalesce(j.status IN ({finals}), true) AS final
        FROM runs r LEFT JOIN item_sets s ON s.name = r.item_set
        LEFT JOIN current_judgings cj ON cj.run_id = r.run_id
        LEFT JOIN judgings j ON j.run_id = cj.run_id AND j.judging = cj.judging
        WHERE {_EVAL_RUNS}{run_where}
    """


def _write_if_free(
    store: Store,
    write: Callable[[duckdb.DuckDBPyConnection], None],
    con: duckdb.DuckDBPyConnection | None = None,
) -> bool:
    """write(con) in one transaction (on `con`, or a connection of its own), only if this
    process's writer lock for the store is free right now. Opportunistic: False instead of
    raising when the write cannot happen (another writer in this process, a lock, a conflict,
    a read-only file), since a reader must never fail because it could not cache."""
    lock = _write_lock(store.path)  # the in-process writer lock Store.transaction takes
    if not lock.acquire(blocking=False):
        return False
    try:
        with contextlib.nullcontext(con) if con is not None else store.connect() as c:
            c.execute("BEGIN TRANSACTION")
            try:
                write(c)
                c.execute("COMMIT")
            except Exception:
                try:
                    c.execute("ROLLBACK")
                except duckdb.Error:
                    pass
                raise
        return True
    except (duckdb.Error, DatabaseError):
        return False
    finally:
        lock.release()


def _cache_counts(store: Store, con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> bool:
    """Store the judge counts of finished `run_ids` (rows of temp table _mp_sums, fingerprints
    in _mp_fp) in run_counts: one short transaction, only for runs whose fingerprint is still
    the one read before counting. Opportunistic (`_write_if_free`): False when it cannot write."""
    if not run_ids:
        return True
    marks = ", ".join("?" for _ in run_ids)
    keys = ", ".join(_CACHE_KEYS)

    def write(con: duckdb.DuckDBPyConnection) -> None:
        # still unchanged since counted (a writer in between would have bumped updated_at)
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE _mp_fresh AS
            SELECT f.run_id, f.fingerprint FROM _mp_fp f
            JOIN ({_fingerprint_sql(f" AND r.run_id IN ({marks})")}) now
              ON now.run_id = f.run_id AND now.fingerprint = f.fingerprint AND now.final
        """,
            run_ids,
        )
        # replaced rows of these runs (not their kept intervals: cell_intervals replaces
        # those), and rows of runs deleted since
        con.execute(
            "DELETE FROM run_counts WHERE (source IN (SELECT run_id FROM _mp_fresh) "
            f"AND coalesce(status, '') <> '{_INTERVALS}') "
            "OR source NOT IN (SELECT run_id FROM runs)"
        )
        con.execute(f"""
            INSERT INTO run_counts ({keys}, counts, n, status, fingerprint, computed_at)
            SELECT {", ".join("s." + k for k in _CACHE_KEYS)},
                   {_COUNTS_JSON}, s.n, s.status, f.fingerprint, current_timestamp
            FROM _mp_sums s JOIN _mp_fresh f ON f.run_id = s.source
            WHERE s.evaluator = 'judge'
            UNION ALL  -- the marker: this run is cached (even with no verdicts at all)
            SELECT f.run_id, NULL, NULL, 'judge', NULL, NULL, NULL, NULL, 0, NULL,
                   f.fingerprint, current_timestamp
            FROM _mp_fresh f
        """)
        con.execute("DROP TABLE _mp_fresh")  # (a rollback drops it too)

    return _write_if_free(store, write, con)


# F1 rows of warm loads, by database and the cache look-up's state (each run's fingerprint, model
# and setting): when every run is served from run_counts and there are no human labels, the
# F1 table is a function of that state alone. The F1 statement costs 35-80 ms, mostly DuckDB
# planning it (measured), the rest of a warm load ~40 ms: a warm page load skips it. Any write
# to a run changes its fingerprint, so a stale entry is never looked up again.
_F1_MEMO: dict[tuple, pd.DataFrame] = {}
_F1_MEMO_SIZE = 8


def f1_and_diagnostics(
    store: Store,
    run_ids: Sequence[str] | None = None,
    timings: dict[str, float] | None = None,
    use_cache: bool = True,
    judging: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(F1 rows, run diagnostics) from ONE pass over the verdicts, in one connection.

    The per-category counts (ok and failed verdicts apart) go to a temporary table; the F1
    table and the per-run counts (scored, failed, inconsistent, erroneous, control) are small
    queries on it. What the Mis-prompt page loads.

    With `use_cache`, the judge counts of finished runs whose fingerprint (status, updated_at,
    item set) is unchanged come from run_counts instead of the verdicts; only the other runs
    are counted, and the finished ones among them are written to run_counts for next time.
    Human-label counts are always counted live (few rows). The result is identical either way.
    The cache holds each run's current judging: naming another `judging` counts live.
    """
    if judging is not None:
        use_cache = False
    where, params = _run_filter(run_ids, alias="v")
    r_where, r_params = _run_filter(run_ids)
    diag_sql = _diagnostics_sql(
        """SELECT source AS run_id,
                  sum(n) FILTER (WHERE status = 'ok') AS verdicts_ok,
                  sum(n) FILTER (WHERE status <> 'ok') AS verdicts_failed,
                  sum(n_inconsistent) FILTER (WHERE status = 'ok') AS inconsistent,
                  sum(n) FILTER (WHERE status = 'ok' AND is_error) AS n_error,
                  sum(n) FILTER (WHERE status = 'ok' AND NOT is_error) AS n_control
           FROM _mp_sums WHERE evaluator = 'judge' GROUP BY source""",
        r_where,
        extra=("n_error", "n_control"),
    )
    clock = {"start": time.perf_counter()}

    def lap(name: str) -> None:
        now = time.perf_counter()
        if timings is not None:
            timings[name] = timings.get(name, 0.0) + (now - clock["start"]) * 1000
        clock["start"] = now

    human_sql = _sums_sql("human", where, with_status=True)
    memo_key: tuple | None = None
    with store.connect() as con:
        lap("open connection")
        if not use_cache:
            union = " UNION ALL ".join(
                _sums_sql(e, where, with_status=True, judging=judging) for e in ("judge", "human")
            )
            con.execute(f"CREATE OR REPLACE TEMP TABLE _mp_sums AS {union}", params * 2)
            lap("counts pass over verdicts")
        else:
            # Fingerprints first: a write after this point changes a fingerprint, so counts
            # taken below are never stored under a fingerprint newer than they are.
            con.execute(
                f"""
                CREATE OR REPLACE TEMP TABLE _mp_fp AS
                SELECT f.*, f.final AND EXISTS (
                           SELECT 1 FROM run_counts c WHERE c.source = f.run_id
                           AND c.status IS NULL AND c.fingerprint = f.fingerprint) AS hit
                FROM ({_fingerprint_sql(r_where)}) f""",
                r_params,
            )
            state = con.execute(
                "SELECT f.run_id, f.final, f.hit, f.fingerprint, r.model, r.setting "
                "FROM _mp_fp f JOIN runs r USING (run_id) ORDER BY f.run_id"
            ).fetchall()
            todo = [run for run, _final, hit, *_ in state if not hit]
            to_cache = [run for run, final, hit, *_ in state if final and not hit]
            has_human = con.execute("SELECT EXISTS (SELECT 1 FROM human_labels)").fetchall()[0][0]
            if not todo and not has_human:  # F1 is a function of the cached rows' keys alone
                memo_key = (str(store.path), tuple(state))
            lap("cache look-up")
            # cached rows take model/setting from the runs row as the live pass does
            cached_sql = f"""
                SELECT c.source, coalesce(r.model, '') AS model, r.setting AS setting,
                       c.evaluator, c.primary_category, c.secondary_category, c.is_error,
                       {
                ", ".join(
                    {"n": "c.n", "status": "c.status"}.get(col, f"c.k.{col} AS {col}")
                    for col in _SUM_COLS
                )
            }
                FROM (SELECT *, json_transform(counts, '{_COUNTS_STRUCT}') AS k FROM run_counts) c
                JOIN _mp_fp f ON f.run_id = c.source
                     AND f.fingerprint = c.fingerprint AND f.hit
                JOIN runs r ON r.run_id = c.source
                WHERE c.status IS NOT NULL AND c.status <> '{_INTERVALS}'"""
            # human counts live (no labels at all: nothing to count)
            parts, part_params = (
                ([cached_sql, human_sql], list(params)) if has_human else ([cached_sql], [])
            )
            if todo:
                marks = ", ".join("?" for _ in todo)
                parts.insert(0, _sums_sql("judge", f" AND v.run_id IN ({marks})", with_status=True))
                part_params = todo + part_params
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _mp_sums AS "
                + " UNION ALL ".join(f"SELECT * FROM ({p})" for p in parts),
                part_params,
            )
            lap("counts pass over verdicts")
            _cache_counts(store, con, to_cache)
            lap("cache write")
            con.execute("DROP TABLE IF EXISTS _mp_fp")
        memo = _F1_MEMO.get(memo_key) if memo_key is not None else None
        if memo is not None:
            f1 = memo.copy()
        else:
            f1 = con.execute(_f1_sql("SELECT * FROM _mp_sums WHERE status = 'ok'")).df()
            if memo_key is not None:
                _F1_MEMO[memo_key] = f1.copy()
                while len(_F1_MEMO) > _F1_MEMO_SIZE:
                    _F1_MEMO.pop(next(iter(_F1_MEMO)))
        lap("F1 from counts")
        diag = con.execute(diag_sql, r_params).df()
        lap("run diagnostics")
        con.execute("DROP TABLE _mp_sums")
    if f1.empty:
        f1 = pd.DataFrame(columns=COLUMNS + ["tp", "fn", "fp", "n_error", "n_control"])
    return f1, diag


# run_counts also keeps the intervals the page shows on a finished run's cells (status
# 'intervals', one row per run: draws, seed and every cell's interval as JSON), under the same
# fingerprint as its counts: a run's bootstrap is drawn once, not by every server that starts.
_INTERVALS = "intervals"
_INTERVAL_KEYS: list[str] = ["source", "evaluator", "category_level", "category", "metric"]


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
        if final and fp == fingerprint and (data.get("draws"), data.get("seed")) == (draws, seed):
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
                        json.dumps({"draws": draws, "seed": seed, "rows": rows[run]}),
                        fingerprints[run],
                    ]
                    for run in keep
                ],
            )

    return _write_if_free(store, write)


def judge_patterns(
    store: Store, run_ids: Sequence[str] | None = None, judging: str | None = None
) -> pd.DataFrame:
    """Pattern counts of ok judge verdicts of Mis-prompt runs (one GROUP BY over verdicts)."""
    return patterns(store, run_ids, ("judge",), judging)


def _diagnostics_sql(verdict_counts: str, run_where: str, extra: Sequence[str] = ()) -> str:
    """Per-run diagnostics around `verdict_counts`, a query giving run_id, verdicts_ok,
    verdicts_failed, inconsistent (+ `extra` count columns) — from the verdicts themselves or
    from already aggregated counts."""
    extra_sql = "".join(f",\n               coalesce(v.{c}, 0)::BIGINT AS {c}" for c in extra)
    return f"""
        WITH v AS ({verdict_counts}),
        rf AS (SELECT run_id, count(*) AS responses_failed FROM responses
               WHERE status <> 'ok' GROUP BY run_id),
        hl AS (SELECT run_id, count(DISTINCT (item_id, variant)) AS human_labelled,
                      count(DISTINCT annotator) AS annotators
               FROM human_labels GROUP BY run_id)
        SELECT r.run_id, r.model, r.setting, coalesce(r.mode, 'proactive') AS mode, r.item_set,
               -- the judge and template of the judging the numbers come from (current one)
               coalesce(cj.judge_model, r.judge_model) AS judge_model,
               coalesce(cj.template_id, json_extract_string(r.params, '$.judge_template'))
                   AS judge_template, coalesce(cj.judging, 'default') AS judging,
               coalesce(r.weak_model, false) AS weak_model, r.status, r.created_at,
               r.n_planned, coalesce(v.verdicts_ok, 0)::BIGINT AS verdicts_ok,
               coalesce(v.verdicts_failed, 0)::BIGINT AS verdicts_failed,
               coalesce(v.inconsistent, 0)::BIGINT AS inconsistent,
               coalesce(rf.responses_failed, 0) AS responses_failed,
               coalesce(hl.human_labelled, 0) AS human_labelled,
               coalesce(hl.annotators, 0) AS annotators{extra_sql}
        FROM runs r LEFT JOIN v USING (run_id) LEFT JOIN rf USING (run_id)
        LEFT JOIN hl USING (run_id)
        LEFT JOIN (SELECT a.* FROM all_judgings a
                   SEMI JOIN current_judgings c ON c.run_id = a.run_id
                                               AND c.judging = a.judging) cj
               ON cj.run_id = r.run_id
        WHERE {_EVAL_RUNS}{run_where}
        ORDER BY r.created_at, r.run_id
    """


def run_diagnostics(
    store: Store,
    run_ids: Sequence[str] | None = None,
    f1_rows: pd.DataFrame | None = None,
    judging: str | None = None,
) -> pd.DataFrame:
    """Per Mis-prompt run: verdicts ok/failed, inconsistent verdicts, erroneous/control items.

    Counts by run need no join with items; erroneous/control counts come from the judge rows
    of the run's F1 table (level all), computed here unless passed in.
    """
    where, params = _run_filter(run_ids)
    sql = _diagnostics_sql(
        f"""SELECT run_id,
                   count(*) FILTER (WHERE status = 'ok') AS verdicts_ok,
                   count(*) FILTER (WHERE status <> 'ok') AS verdicts_failed,
                   count(*) FILTER (WHERE status = 'ok' AND ({_INCONSISTENT_SQL})) AS inconsistent
            FROM {_verdict_source("judge", judging)} GROUP BY run_id""",
        where,
    )
    diag = store.df(sql, params)
    if f1_rows is None:
        f1_rows = f1_in_database(store, run_ids, ("judge",), judging)
    overall = f1_rows[(f1_rows["evaluator"] == "judge") & (f1_rows["category_level"] == "all")]
    overall = overall.groupby("source")[["n_error", "n_control"]].max()
    diag["n_error"] = diag["run_id"].map(overall["n_error"]).fillna(0).astype(int)
    diag["n_control"] = diag["run_id"].map(overall["n_control"]).fillna(0).astype(int)
    return diag


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
        f"SELECT {', '.join(COLUMNS)} FROM published_misprompt {where} ORDER BY rowid", params
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
