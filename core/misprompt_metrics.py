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

Everything heavy is one DuckDB GROUP BY (pattern counts); the F1 arithmetic runs on the small
aggregated frame, so a million verdicts score in well under a second.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from core.storage import JUDGE_LABELS, Store
from core.taxonomy import PRIMARY, SECONDARY

LABELS: tuple[str, ...] = JUDGE_LABELS
METRICS: tuple[str, ...] = LABELS + ("average",)
KEYS: list[str] = ["source", "model", "setting", "evaluator"]
COLUMNS: list[str] = ["source", "model", "setting", "evaluator", "category_level", "category",
                      "metric", "f1"]
RUN_COLUMNS: list[str] = COLUMNS + ["ci_low", "ci_high"]
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
        b("correction_accurate") & ~b("correction_attempt"))


def pattern_counts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Collapse item-level rows into counts of identical (keys, category, is_error, labels) rows.

    `verdicts` needs is_error, primary_category, secondary_category and the six labels (bool or
    missing); absent KEYS columns are filled ('' and evaluator 'judge'). Missing labels stay
    missing (<NA>) and leave that label only.
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
    return (frame[cols].groupby(cols, dropna=False, sort=True).size()
            .rename("n").reset_index())


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
_POS = [f"pos_{label}" for label in LABELS]
_KNOWN = [f"known_{label}" for label in LABELS]


def f1_from_sums(sums: pd.DataFrame) -> pd.DataFrame:
    """F1 (percent) per KEYS × level × category × metric from `label_sums` rows (vectorised).

    Returns COLUMNS plus tp, fn, fp (fp scaled per category), n_error, n_control. Metric names
    end in `_recall` (and the value is recall) where a key group has no control items.
    """
    extra = ["tp", "fn", "fp", "n_error", "n_control"]
    if sums.empty:
        return pd.DataFrame(columns=COLUMNS + extra)
    is_err = sums["is_error"].astype(bool)
    ctrl = sums[~is_err].groupby(KEYS, dropna=False)[_POS + _KNOWN].sum()
    ctrl.columns = [f"c_{c}" for c in ctrl.columns]
    parts = []
    for level in LEVELS:
        e = sums[is_err]
        cat = (pd.Series("All", index=e.index) if level == "all"
               else e["primary_category" if level == "primary" else "secondary_category"])
        g = e.assign(category=cat).groupby(KEYS + ["category"], dropna=False)[_POS + _KNOWN].sum()
        g = g.reset_index()
        g.insert(len(KEYS), "category_level", level)
        parts.append(g)
    wide = pd.concat(parts, ignore_index=True).merge(
        ctrl.reset_index(), on=KEYS, how="left")
    tp = wide[_POS].to_numpy(dtype=float)
    n_err = wide[_KNOWN].to_numpy(dtype=float)
    fn = n_err - tp
    c_fp = wide[[f"c_{c}" for c in _POS]].fillna(0).to_numpy(dtype=float)
    c_n = wide[[f"c_{c}" for c in _KNOWN]].fillna(0).to_numpy(dtype=float)
    has_ctrl = c_n > 0
    overall = (wide["category_level"] == "all").to_numpy()[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        fp = np.where(overall, c_fp, c_fp / c_n * n_err)
        denom = 2 * tp + fp + fn
        f1 = np.where(denom > 0, 200.0 * tp / denom, np.nan)
        recall = np.where(n_err > 0, 100.0 * tp / n_err, np.nan)
    value = np.where(has_ctrl, f1, recall)
    fp = np.where(has_ctrl, fp, np.nan)
    avg = value.mean(axis=1)  # NaN when any label is undefined
    recall_any = ~has_ctrl.all(axis=1)
    head = wide[KEYS + ["category_level", "category"]]
    frames = []
    for j, label in enumerate(LABELS):
        f = head.copy()
        f["metric"] = np.where(has_ctrl[:, j], label, label + RECALL_SUFFIX)
        f["f1"], f["tp"], f["fn"], f["fp"] = value[:, j], tp[:, j], fn[:, j], fp[:, j]
        f["n_error"], f["n_control"] = n_err[:, j], c_n[:, j]
        f["_met"] = j
        frames.append(f)
    f = head.copy()
    f["metric"] = np.where(recall_any, "average" + RECALL_SUFFIX, "average")
    f["f1"] = avg
    f["tp"] = f["fn"] = f["fp"] = np.nan
    f["n_error"], f["n_control"] = n_err.max(axis=1), c_n.max(axis=1)
    f["_met"] = len(LABELS)
    frames.append(f)
    res = pd.concat(frames, ignore_index=True)
    res["_lvl"] = res["category_level"].map({lv: i for i, lv in enumerate(LEVELS)})
    res["_cat"] = res["category"].map(_CATEGORY_ORDER).fillna(len(_CATEGORY_ORDER))
    res = res.sort_values(KEYS + ["_lvl", "_cat", "category", "_met"],
                          kind="stable").reset_index(drop=True)
    for col in ("n_error", "n_control"):
        res[col] = res[col].astype(np.int64)
    return res[COLUMNS + extra]


def f1_from_patterns(patterns: pd.DataFrame) -> pd.DataFrame:
    """F1 table from pattern counts (see `f1_from_sums`)."""
    if patterns.empty:
        return f1_from_sums(pd.DataFrame())
    return f1_from_sums(label_sums(patterns))


def f1_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """F1 table (COLUMNS) from item-level verdict rows; see `pattern_counts` for the input."""
    return f1_from_patterns(pattern_counts(verdicts))[COLUMNS]


def _pattern_matrix(patterns: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(counts, positive[m×6], known[m×6]) arrays for one group of patterns."""
    vals = patterns[list(LABELS)].astype("boolean")
    pos = vals.fillna(False).to_numpy(dtype=bool).astype(float)
    known = vals.notna().to_numpy(dtype=bool).astype(float)
    return patterns["n"].to_numpy(dtype=np.int64), pos, known


def _draw(rng: np.random.Generator, counts: np.ndarray, draws: int) -> np.ndarray:
    total = int(counts.sum())
    if total == 0:
        return np.zeros((draws, len(counts)))
    return rng.multinomial(total, counts / total, size=draws).astype(float)


def bootstrap_ci(patterns: pd.DataFrame, draws: int = DEFAULT_BOOTSTRAP, seed: int = 0,
                 confidence: float = 95.0) -> pd.DataFrame:
    """Percentile bootstrap intervals for every row `f1_from_patterns` returns.

    Erroneous and control items are resampled separately (each a multinomial draw over its
    label patterns, which equals resampling items with replacement). One control draw per
    replicate serves all categories of a key group. Same seed, same intervals.
    """
    rows: list[dict] = []
    if patterns.empty or draws <= 0:
        return pd.DataFrame(columns=KEYS + ["category_level", "category", "metric", "ci_low",
                                            "ci_high"])
    rng = np.random.default_rng(seed)
    lo_q, hi_q = (100 - confidence) / 2, 100 - (100 - confidence) / 2
    for key, group in patterns.groupby(KEYS, dropna=False, sort=True):
        ctrl = group[~group["is_error"].astype(bool)]
        err = group[group["is_error"].astype(bool)]
        c_counts, c_pos, c_known = _pattern_matrix(ctrl)
        has_ctrl = bool(c_counts.sum() > 0) and bool((c_known.T @ c_counts > 0).all())
        if has_ctrl:
            c_draw = _draw(rng, c_counts, draws)
            fp_all = c_draw @ c_pos                       # draws × 6
            ctrl_known = c_draw @ c_known
            with np.errstate(divide="ignore", invalid="ignore"):
                rate = fp_all / ctrl_known
        for level in LEVELS:
            if level == "all":
                cats = [("All", err)]
            else:
                col = "primary_category" if level == "primary" else "secondary_category"
                cats = list(err.groupby(col, sort=True))
            for cat, sub in cats:
                e_counts, e_pos, e_known = _pattern_matrix(sub)
                e_draw = _draw(rng, e_counts, draws)
                tp = e_draw @ e_pos
                n_err = e_draw @ e_known
                fn = n_err - tp
                with np.errstate(divide="ignore", invalid="ignore"):
                    if has_ctrl:
                        fp = fp_all if level == "all" else rate * n_err
                        values = 200.0 * tp / (2 * tp + fp + fn)
                    else:
                        values = 100.0 * tp / n_err
                values = np.column_stack([values, values.mean(axis=1)])
                suffix = "" if has_ctrl else RECALL_SUFFIX
                for j, metric in enumerate(METRICS):
                    col_vals = values[:, j]
                    col_vals = col_vals[np.isfinite(col_vals)]
                    lo, hi = ((np.percentile(col_vals, lo_q), np.percentile(col_vals, hi_q))
                              if len(col_vals) else (np.nan, np.nan))
                    rows.append(dict(zip(KEYS, key)) | {
                        "category_level": level, "category": cat, "metric": metric + suffix,
                        "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def with_ci(table: pd.DataFrame, patterns: pd.DataFrame, draws: int = DEFAULT_BOOTSTRAP,
            seed: int = 0) -> pd.DataFrame:
    ci = bootstrap_ci(patterns, draws=draws, seed=seed)
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

_LABEL_COLS = ", ".join(f"v.{label}" for label in LABELS)
_INCONSISTENT_SQL = ("(coalesce(v.identification_accurate, false) AND NOT coalesce("
                     "v.identification_attempt, false)) OR (coalesce(v.correction_accurate, false) "
                     "AND NOT coalesce(v.correction_attempt, false))")


def _run_filter(run_ids: Sequence[str] | None, alias: str = "r") -> tuple[str, list]:
    if run_ids is None:
        return "", []
    ids = list(run_ids)
    if not ids:
        return " AND false", []
    return f" AND {alias}.run_id IN ({', '.join('?' for _ in ids)})", ids


def _verdict_source(evaluator: str) -> str:
    """FROM clause yielding one row per scored response: judge verdicts or majority human labels."""
    if evaluator == "judge":
        return "verdicts v"
    pivots = ", ".join(
        f"bool_or(CASE WHEN label = '{label}' THEN share > 0.5 END) AS {label}" for label in LABELS)
    return f"""(
        SELECT run_id, item_id, variant, 'ok' AS status, {pivots}
        FROM (SELECT run_id, item_id, variant, label,
                     avg(CASE WHEN value THEN 1.0 ELSE 0.0 END) AS share
              FROM human_labels GROUP BY ALL)
        GROUP BY ALL) v"""


def _grouped(store: Store, evaluator: str, run_ids: Sequence[str] | None, sums: bool
             ) -> pd.DataFrame:
    where, params = _run_filter(run_ids)
    if sums:
        select = ", ".join(
            [f"sum(CASE WHEN v.{lb} THEN 1 ELSE 0 END)::BIGINT AS pos_{lb}" for lb in LABELS]
            + [f"count(v.{lb})::BIGINT AS known_{lb}" for lb in LABELS]
            + ["count(*)::BIGINT AS n"])
        group = "GROUP BY ALL"
    else:
        select = _LABEL_COLS + ", count(*)::BIGINT AS n"
        group = "GROUP BY ALL"
    sql = f"""
        SELECT r.run_id AS source, coalesce(r.model, '') AS model,
               coalesce(r.setting, v.variant) AS setting, '{evaluator}' AS evaluator,
               i.primary_category, i.secondary_category, coalesce(i.is_error, true) AS is_error,
               {select}
        FROM {_verdict_source(evaluator)}
        JOIN runs r ON r.run_id = v.run_id
        JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id
        WHERE r.benchmark = 'misprompt' AND v.status = 'ok'{where}
        {group} ORDER BY ALL
    """
    return store.df(sql, params)


def judge_patterns(store: Store, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Pattern counts of ok judge verdicts of Mis-prompt runs (one GROUP BY over verdicts)."""
    return _grouped(store, "judge", run_ids, sums=False)


def human_patterns(store: Store, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Pattern counts of majority human labels (strict majority; a tie counts as false)."""
    return _grouped(store, "human", run_ids, sums=False)


def run_sums(store: Store, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """`label_sums` of judge and human rows computed in SQL (no bootstrap needed)."""
    return pd.concat([_grouped(store, "judge", run_ids, sums=True),
                      _grouped(store, "human", run_ids, sums=True)], ignore_index=True)


def run_diagnostics(store: Store, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Per Mis-prompt run: verdicts ok/failed, inconsistent verdicts, erroneous/control items."""
    where, params = _run_filter(run_ids)
    sql = f"""
        WITH v AS (
            SELECT v.run_id,
                   count(*) FILTER (WHERE v.status = 'ok') AS verdicts_ok,
                   count(*) FILTER (WHERE v.status <> 'ok') AS verdicts_failed,
                   count(*) FILTER (WHERE v.status = 'ok' AND ({_INCONSISTENT_SQL})) AS inconsistent,
                   count(*) FILTER (WHERE v.status = 'ok' AND i.is_error) AS n_error,
                   count(*) FILTER (WHERE v.status = 'ok' AND NOT i.is_error) AS n_control
            FROM verdicts v JOIN runs r ON r.run_id = v.run_id
            LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id
            WHERE r.benchmark = 'misprompt'{where}
            GROUP BY v.run_id),
        resp AS (
            SELECT x.run_id, count(*) AS responses,
                   count(*) FILTER (WHERE x.status <> 'ok') AS responses_failed
            FROM responses x JOIN runs r ON r.run_id = x.run_id
            WHERE r.benchmark = 'misprompt'{where}
            GROUP BY x.run_id),
        hl AS (SELECT h.run_id, count(DISTINCT (h.item_id, h.variant)) AS human_labelled,
                      count(DISTINCT h.annotator) AS annotators
               FROM human_labels h JOIN runs r ON r.run_id = h.run_id
               WHERE r.benchmark = 'misprompt'{where} GROUP BY h.run_id)
        SELECT r.run_id, r.model, r.setting, coalesce(r.mode, 'proactive') AS mode, r.item_set,
               r.judge_model, coalesce(r.weak_model, false) AS weak_model, r.status, r.created_at,
               coalesce(resp.responses, 0) AS responses,
               coalesce(resp.responses_failed, 0) AS responses_failed,
               coalesce(v.verdicts_ok, 0) AS verdicts_ok,
               coalesce(v.verdicts_failed, 0) AS verdicts_failed,
               coalesce(v.inconsistent, 0) AS inconsistent,
               coalesce(v.n_error, 0) AS n_error, coalesce(v.n_control, 0) AS n_control,
               coalesce(hl.human_labelled, 0) AS human_labelled,
               coalesce(hl.annotators, 0) AS annotators
        FROM runs r LEFT JOIN v USING (run_id) LEFT JOIN resp USING (run_id)
        LEFT JOIN hl USING (run_id)
        WHERE r.benchmark = 'misprompt'{where}
        ORDER BY r.created_at, r.run_id
    """
    return store.df(sql, params * 4)


def run_metrics(store: Store, run_ids: Sequence[str] | None = None, *, ci: bool = True,
                draws: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> pd.DataFrame:
    """F1 rows of runs (judge and, where labelled, human), with bootstrap intervals if `ci`."""
    if not ci:
        sums = run_sums(store, run_ids)
        table = f1_from_sums(sums[sums["n"] > 0] if len(sums) else sums)
        table["ci_low"] = np.nan
        table["ci_high"] = np.nan
        return table[RUN_COLUMNS + ["n_error", "n_control"]]
    patterns = pd.concat([judge_patterns(store, run_ids), human_patterns(store, run_ids)],
                         ignore_index=True)
    table = with_ci(f1_from_patterns(patterns), patterns, draws=draws, seed=seed)
    return table[RUN_COLUMNS + ["n_error", "n_control"]]


def published_metrics(store: Store, sources: Sequence[str] | None = None) -> pd.DataFrame:
    """Published rows exactly as loaded (CSV order), COLUMNS only."""
    where, params = "", []
    if sources:
        where = f"WHERE source IN ({', '.join('?' for _ in sources)})"
        params = list(sources)
    frame = store.df(f"SELECT {', '.join(COLUMNS)} FROM published_misprompt {where} "
                     "ORDER BY rowid", params)
    return frame


def known_sources(store: Store) -> list[str]:
    runs = [r[0] for r in store.rows(
        "SELECT run_id FROM runs WHERE benchmark = 'misprompt' ORDER BY created_at, run_id")]
    tables = sorted((r[0] for r in store.rows("SELECT DISTINCT source FROM published_misprompt")),
                    key=lambda s: (len(s), s))
    return ["published", *tables, *runs]


def metrics_for_source(store: Store, source: str, *, draws: int = DEFAULT_BOOTSTRAP,
                       seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(rows, diagnostics) for `published`, a published table id, or a run id."""
    known = known_sources(store)
    if source == "published":
        return published_metrics(store), None
    if source.startswith("misprompt:") and source in known:
        return published_metrics(store, [source]), None
    if source in known:
        return run_metrics(store, [source], draws=draws, seed=seed), run_diagnostics(store, [source])
    raise UnknownSource(
        f"unknown source {source!r}. Known sources: {', '.join(known) or '(none)'}"
        + ("" if len(known) > 1 else " — run `python -m core init` to load the published tables"))


# ----------------------------------------------------------------------------------------------
# CLI: python -m core metrics misprompt
# ----------------------------------------------------------------------------------------------

def configure(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    parser.description = (
        "Mis-prompt F1 (percent), one row per (source, model, setting, evaluator, category_level, "
        "category, metric). --source published prints the papers' tables unchanged; --source RUN "
        "scores a run per SPEC §1 and adds ci_low,ci_high (bootstrap 95%%). A run without control "
        "items reports recall under metric names ending in _recall (precision is unavailable).")
    parser.add_argument("--source", default="published",
                        help="`published`, a published table (misprompt:T6) or a run id")
    parser.add_argument("--format", choices=["csv", "json"], default="csv")
    parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP,
                        help="bootstrap draws for ci_low/ci_high (0: none)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")


def _fmt(frame: pd.DataFrame, fmt: str) -> str:
    out = frame.copy()
    for col in ("f1", "ci_low", "ci_high"):
        if col in out:
            out[col] = out[col].astype(float).round(2)
    if fmt == "json":
        return json.dumps(json.loads(out.to_json(orient="records")), indent=1)
    return out.to_csv(index=False)


def main(args: argparse.Namespace) -> int:
    store = Store.open(args.db)
    try:
        rows, diag = metrics_for_source(store, args.source, draws=args.bootstrap, seed=args.seed)
    except UnknownSource as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    columns = COLUMNS if diag is None else RUN_COLUMNS
    sys.stdout.write(_fmt(rows[columns], args.format))
    if diag is not None and len(diag):
        d = diag.iloc[0]
        print(f"run {d.run_id}: {d.verdicts_ok} verdicts scored ({d.n_error} erroneous, "
              f"{d.n_control} control); {d.verdicts_failed} failed verdicts excluded; "
              f"{d.responses_failed} failed responses; {d.inconsistent} inconsistent verdicts "
              "(accurate without attempt; counted as given)", file=sys.stderr)
        if d.n_control == 0:
            print("no control items: precision is unavailable, values are recall "
                  f"(metric names end in {RECALL_SUFFIX})", file=sys.stderr)
    return 0
