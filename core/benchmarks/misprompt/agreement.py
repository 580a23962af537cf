"""Judge-vs-judge agreement: two judgings of the same run, label by label.

Before trusting a number, a researcher re-judges a run with a second judge or template
(`python -m core rescore`) and asks how far the two agree. Per label, over the responses both
judgings labelled (status ok, label known in both): the 2×2 confusion counts and Cohen's κ
(chance-corrected agreement), plus raw agreement. κ is undefined (NaN) when both judges give
one constant value; the page says so instead of showing a number.
"""

from __future__ import annotations

import math

import pandas as pd

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.store import Store

COLUMNS = ["label", "n", "both_true", "a_only", "b_only", "both_false", "agreement", "kappa"]
MIN_KAPPA_N = 10  # below this a κ is too unstable to show (pages leave it empty)


def cohen_kappa(both_true: int, a_only: int, b_only: int, both_false: int) -> float:
    """Cohen's κ of two raters on a binary label from their 2×2 table (NaN when undefined)."""
    n = both_true + a_only + b_only + both_false
    if n == 0:
        return math.nan
    observed = (both_true + both_false) / n
    a_true = (both_true + a_only) / n
    b_true = (both_true + b_only) / n
    expected = a_true * b_true + (1 - a_true) * (1 - b_true)
    if expected == 1:
        return math.nan
    return (observed - expected) / (1 - expected)


def pairs(store: Store, run_id: str, judging_a: str, judging_b: str) -> pd.DataFrame:
    """One row per response judged ok by both: item, variant and each label as a_<l>, b_<l>."""
    cols = ", ".join(f"a.{label} AS a_{label}, b.{label} AS b_{label}" for label in JUDGE_LABELS)
    return store.df(
        f"SELECT a.item_id, a.variant, {cols} FROM misprompt_verdicts a JOIN misprompt_verdicts b "
        "ON b.run_id = a.run_id AND b.item_id = a.item_id AND b.variant = a.variant "
        "AND b.epoch = a.epoch "
        "WHERE a.run_id = ? AND a.judging = ? AND b.judging = ? "
        "AND a.status = 'ok' AND b.status = 'ok' ORDER BY a.item_id, a.variant",
        [run_id, judging_a, judging_b],
    )


def agreement_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Per label: n, the 2×2 counts (a = first judging), raw agreement (%) and Cohen's κ."""
    rows = []
    for label in JUDGE_LABELS:
        a, b = frame[f"a_{label}"], frame[f"b_{label}"]
        known = a.notna() & b.notna()
        a, b = a[known].astype(bool), b[known].astype(bool)
        tt, tf = int((a & b).sum()), int((a & ~b).sum())
        ft, ff = int((~a & b).sum()), int((~a & ~b).sum())
        n = tt + tf + ft + ff
        rows.append(
            {
                "label": label,
                "n": n,
                "both_true": tt,
                "a_only": tf,
                "b_only": ft,
                "both_false": ff,
                "agreement": 100.0 * (tt + ff) / n if n else math.nan,
                "kappa": cohen_kappa(tt, tf, ft, ff),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def judging_agreement(store: Store, run_id: str, judging_a: str, judging_b: str) -> pd.DataFrame:
    """`agreement_table` of two judgings of one run (what the Mis-prompt page shows)."""
    return agreement_table(pairs(store, run_id, judging_a, judging_b))


def judgings(store: Store, run_ids: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every judging of Mis-prompt runs: run, name, judge, template, status, verdict counts,
    and whether it is the run's current one (what results show by default)."""
    where, params = "", []
    if run_ids:
        where = f" AND j.run_id IN ({', '.join('?' for _ in run_ids)})"
        params = list(run_ids)
    return store.df(
        "SELECT j.run_id, j.judging, j.kind, j.judge_model, j.template_id, j.status, "
        "j.created_at, (c.judging IS NOT NULL) AS current, "
        "(SELECT count(*) FROM misprompt_verdicts v WHERE v.run_id = j.run_id AND v.judging = j.judging "
        " AND v.status = 'ok') AS verdicts_ok "
        "FROM all_judgings j JOIN runs r ON r.run_id = j.run_id "
        "LEFT JOIN current_judgings c ON c.run_id = j.run_id AND c.judging = j.judging "
        f"WHERE r.benchmark = 'misprompt'{where} ORDER BY j.run_id, j.created_at, j.judging",
        params,
    )
