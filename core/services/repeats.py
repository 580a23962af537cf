"""Repeats (issue 18, point 3): a run's K answers per item (`run --epochs K`) and a judge's K
verdicts per response (`rescore --repeat K`), summarised.

Why: one sample per item cannot say how much of a difference is sampling noise, nor how far a
judge agrees with itself. Generic over the registry: every benchmark's result record has its
primary binary outcome in `correct` (what counts as right is the package's: a flaw detected on
an erroneous item and none claimed on a control, the exact first wrong step, the gold error
count) and a multi-label judge's verdicts in `labels`.

- Epochs: per variant and outcome, over the units judged in all K epochs: the mean (share of
  the K·n answers that are true), the majority (share of units true in more than K/2 answers;
  a tie is not a majority), pass^k (share true in all K answers, Yao et al. 2024, τ-bench),
  the within-unit spread (mean over units of the standard deviation of its K outcomes:
  sqrt(p(1-p)), 0 when all K agree, 0.5 at an even split) and the share of units whose K
  outcomes are mixed. An answer that could not be read (no value) counts as not true.
- Self-agreement: a judging repeated K times is K judgings, `NAME` and `NAME@r2` … `NAME@rK`
  (the repeats name their first in `params.repeat_of`); per label, over the responses judged
  in all K: Fleiss' κ (K raters, two categories) and the share of unanimous verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from core.store import Store

SUMMARY_COLUMNS = [
    "variant",
    "metric",
    "n",
    "k",
    "mean",
    "majority",
    "pass_k",
    "spread",
    "mixed",
]
AGREEMENT_COLUMNS = ["label", "n", "k", "kappa", "unanimous"]


def repeat_name(judging: str, repeat: int) -> str:
    """The judging holding repeat `repeat` (1: the judging itself)."""
    return judging if repeat <= 1 else f"{judging}@r{repeat}"


# -- pure statistics ------------------------------------------------------------------------


def _outcomes(
    records: pd.DataFrame, keys: Sequence[str] = ("item_id", "variant", "epoch")
) -> tuple[pd.DataFrame, list[str]]:
    """One boolean column per outcome (`correct`, then each label), NULL read as false."""
    out = records[list(keys)].copy()
    metrics: list[str] = []
    if "correct" in records and records["correct"].notna().any():
        out["correct"] = records["correct"].map(lambda v: bool(v) if _known(v) else False)
        metrics.append("correct")
    labels = [_labels(v) for v in records.get("labels", pd.Series([None] * len(records)))]
    names = list(dict.fromkeys(k for d in labels for k in d))
    for name in names:
        out[name] = [bool(d.get(name)) if _known(d.get(name)) else False for d in labels]
        metrics.append(name)
    return out, metrics


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value))


def _labels(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value:
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def epochs_summary(records: pd.DataFrame, k: int) -> pd.DataFrame:
    """Mean, majority, pass^k, spread and mixed share per (variant, outcome) over the units
    that have all `k` epochs judged (`records`: item_id, variant, epoch, correct, labels)."""
    if records.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    values, metrics = _outcomes(records)
    rows = []
    for variant, group in values.groupby("variant", sort=True):
        complete = group.groupby("item_id")["epoch"].transform("nunique") == k
        group = group[complete & group["epoch"].between(1, k)]
        n = group["item_id"].nunique()
        for metric in metrics:
            p = group.groupby("item_id")[metric].mean().to_numpy(dtype=float)
            rows.append(
                {
                    "variant": variant,
                    "metric": metric,
                    "n": int(n),
                    "k": int(k),
                    "mean": float(p.mean()) if n else np.nan,
                    "majority": float((p > 0.5).mean()) if n else np.nan,
                    "pass_k": float((p == 1.0).mean()) if n else np.nan,
                    "spread": float(np.sqrt(p * (1 - p)).mean()) if n else np.nan,
                    "mixed": float(((p > 0) & (p < 1)).mean()) if n else np.nan,
                }
            )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' κ of a subjects × categories table of rater counts (each row sums to the same
    number of raters); NaN when every rating falls in one category (chance agreement 1)."""
    table = np.asarray(counts, dtype=float)
    n_subjects = table.shape[0]
    if n_subjects == 0:
        return float("nan")
    raters = table[0].sum()
    p_cat = table.sum(axis=0) / (n_subjects * raters)
    p_subject = ((table**2).sum(axis=1) - raters) / (raters * (raters - 1))
    p_bar, p_e = p_subject.mean(), (p_cat**2).sum()
    if np.isclose(p_e, 1.0):
        return float("nan")
    return float((p_bar - p_e) / (1 - p_e))


def self_agreement(verdicts: pd.DataFrame, k: int) -> pd.DataFrame:
    """Per label, over the responses with a verdict in all `k` repeats: Fleiss' κ and the
    share of unanimous verdicts (`verdicts`: item_id, variant, epoch, repeat, correct, labels;
    `correct` stands in when the judge records no labels)."""
    if verdicts.empty:
        return pd.DataFrame(columns=AGREEMENT_COLUMNS)
    keys = ["item_id", "variant", "epoch"]
    values, metrics = _outcomes(verdicts, (*keys, "repeat"))
    if any(m != "correct" for m in metrics):
        metrics = [m for m in metrics if m != "correct"]
    complete = values.groupby(keys)["repeat"].transform("nunique") == k
    values = values[complete]
    rows = []
    for metric in metrics:
        yes = values.groupby(keys)[metric].sum().to_numpy(dtype=float)
        table = np.column_stack([yes, k - yes]) if len(yes) else np.zeros((0, 2))
        rows.append(
            {
                "label": metric,
                "n": int(len(yes)),
                "k": int(k),
                "kappa": fleiss_kappa(table) if len(yes) else np.nan,
                "unanimous": float(((yes == 0) | (yes == k)).mean()) if len(yes) else np.nan,
            }
        )
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


# -- store access ---------------------------------------------------------------------------


def run_epochs(store: Store, run_id: str) -> int:
    """K of a run (`runs.params.epochs`; 1 for a run asked once, or unknown)."""
    raw = store.scalar("SELECT params FROM runs WHERE run_id = ?", [run_id])
    if raw is None and not store.rows("SELECT 1 FROM runs WHERE run_id = ?", [run_id]):
        raise LookupError(f"no run named {run_id!r}")
    params = json.loads(raw) if isinstance(raw, str) and raw else (raw or {})
    return int((params or {}).get("epochs") or 1)


_RECORDS_SQL = """
SELECT v.item_id, v.variant, v.epoch, v.correct, v.labels
FROM results v JOIN responses x ON x.run_id = v.run_id AND x.item_id = v.item_id
     AND x.variant = v.variant AND x.epoch = v.epoch AND x.status = 'ok'
WHERE v.run_id = ? AND v.status <> 'failed'
  AND v.judging = coalesce(?, (SELECT judging FROM current_judgings c WHERE c.run_id = ?))
"""


def epoch_records(store: Store, run_id: str, judging: str | None = None) -> pd.DataFrame:
    """A run's judged answers, one row per (item, variant, epoch), of `judging` (default: the
    run's current judging)."""
    return store.df(_RECORDS_SQL, [run_id, judging, run_id])


def run_epochs_summary(store: Store, run_id: str, judging: str | None = None) -> pd.DataFrame:
    """`epochs_summary` of a stored run (its K from the run's params)."""
    return epochs_summary(epoch_records(store, run_id, judging), run_epochs(store, run_id))


def repeat_judgings(store: Store, run_id: str, judging: str) -> list[str]:
    """The judgings holding the repeats of `judging` (itself first, then @r2 … in order)."""
    rows = store.rows(
        "SELECT judging, TRY_CAST(json_extract_string(params, '$.repeat') AS INTEGER) "
        "FROM judgings WHERE run_id = ? AND (judging = ? "
        "OR json_extract_string(params, '$.repeat_of') = ?)",
        [run_id, judging, judging],
    )
    ordered = sorted(rows, key=lambda r: int(r[1] or 1))
    return [str(r[0]) for r in ordered]


def run_self_agreement(store: Store, run_id: str, judging: str) -> pd.DataFrame:
    """`self_agreement` of a judging repeated with `rescore --repeat K`."""
    names = repeat_judgings(store, run_id, judging)
    if not names:
        raise LookupError(f"run {run_id!r} has no judging {judging!r}")
    if len(names) < 2:
        raise LookupError(
            f"judging {judging!r} of run {run_id!r} was not repeated: self-agreement needs "
            "`rescore --repeat K` (K ≥ 2)"
        )
    frames = []
    for repeat, name in enumerate(names, start=1):
        frame = store.df(
            "SELECT item_id, variant, epoch, correct, labels FROM results "
            "WHERE run_id = ? AND judging = ? AND status = 'ok'",
            [run_id, name],
        )
        frames.append(frame.assign(repeat=repeat))
    return self_agreement(pd.concat(frames, ignore_index=True), len(names))


def format_table(frame: pd.DataFrame, digits: int = 3) -> str:
    """A summary as aligned text (shares and κ rounded)."""
    if frame.empty:
        return "(nothing judged in every repeat)"
    shown = frame.copy()
    for col in shown.columns:
        if shown[col].dtype.kind == "f":
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.{digits}f}")
    return shown.to_string(index=False)


def as_output(frame: pd.DataFrame, fmt: str) -> str:
    """table | csv | json, the formats of the other statistics commands."""
    if fmt == "csv":
        return str(frame.to_csv(index=False))
    if fmt == "json":
        return str(frame.to_json(orient="records", indent=1))
    return format_table(frame)
