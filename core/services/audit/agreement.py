"""Agreement between the judge and people, and among people: Cohen's and Fleiss' κ with bootstrap
CIs, the per-annotator table, confusion matrices, majority labels, and their charts (pure)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # plotly is imported when a chart is drawn (the page), not with this module
    import plotly.graph_objects as go

KAPPA_NOTE = (
    "Cohen's κ compares the judge with one annotator, Fleiss' κ compares three or more annotators "
    "(the judge not included) on the items all of them labelled. When every rating is the same "
    "class, κ is 0/0; this workbench reports 1.0 then (perfect agreement), where sklearn and "
    "statsmodels report NaN."
)


# ---------------------------------------------------------------------------------------------
# Agreement statistics (pure)
# ---------------------------------------------------------------------------------------------


def _as_bool_array(values: Iterable[Any]) -> np.ndarray:
    return np.asarray([bool(v) for v in values], dtype=bool)


def cohen_kappa(a: Iterable[Any], b: Iterable[Any]) -> float:
    """Cohen's κ of two raters over the same binary items (NaN with no items, 1.0 if p_e = 1)."""
    x, y = _as_bool_array(a), _as_bool_array(b)
    if len(x) != len(y):
        raise ValueError("both raters must label the same items")
    n = len(x)
    if n == 0:
        return float("nan")
    p_o = float(np.mean(x == y))
    p_e = float(np.mean(x) * np.mean(y) + np.mean(~x) * np.mean(~y))
    if math.isclose(p_e, 1.0):
        return 1.0
    return (p_o - p_e) / (1.0 - p_e)


def percent_disagreement(a: Iterable[Any], b: Iterable[Any]) -> float:
    """Share of items where the two raters differ, in percent (NaN with no items)."""
    x, y = _as_bool_array(a), _as_bool_array(b)
    if len(x) != len(y):
        raise ValueError("both raters must label the same items")
    return float(np.mean(x != y) * 100.0) if len(x) else float("nan")


def confusion(judge: Iterable[Any], human: Iterable[Any]) -> np.ndarray:
    """2×2 counts: rows judge (true, false), columns human (true, false)."""
    j, h = _as_bool_array(judge), _as_bool_array(human)
    return np.array(
        [[int(np.sum(j & h)), int(np.sum(j & ~h))], [int(np.sum(~j & h)), int(np.sum(~j & ~h))]]
    )


def fleiss_kappa(ratings: np.ndarray | Sequence[Sequence[Any]]) -> float:
    """Fleiss' κ for binary ratings, an items × raters matrix (every item rated by every rater).

    Same formula as statsmodels' `fleiss_kappa(method='fleiss')` on the items × categories count
    table; 1.0 instead of NaN when every rating is the same class; NaN with no items or < 2 raters.
    """
    m = np.asarray(ratings, dtype=bool)
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] < 2:
        return float("nan")
    n_items, n_raters = m.shape
    yes = m.sum(axis=1).astype(float)
    counts = np.stack([yes, n_raters - yes], axis=1)  # items × {true, false}
    p_j = counts.sum(axis=0) / (n_items * n_raters)
    p_i = (np.sum(counts * counts, axis=1) - n_raters) / (n_raters * (n_raters - 1))
    p_bar = float(np.mean(p_i))
    p_e = float(np.sum(p_j * p_j))
    if math.isclose(p_e, 1.0):
        return 1.0
    return (p_bar - p_e) / (1.0 - p_e)


MIN_N = 10  # below this many items a κ is shown as "n too small", not as a number
BOOTSTRAP_DRAWS = 1000
BOOTSTRAP_SEED = 0
CI_LEVEL = 0.95


@dataclass(frozen=True)
class KappaEstimate:
    """A κ with the number of items it rests on and a percentile bootstrap CI over items.

    `reliable` is False below MIN_N items: the page greys the value out ("n too small") because
    κ = 1.00 from three items says nothing about the judge.
    """

    kappa: float
    n: int
    ci_low: float
    ci_high: float

    @property
    def reliable(self) -> bool:
        return self.n >= MIN_N and not math.isnan(self.kappa)


def _kappa_from_cells(cells: np.ndarray) -> np.ndarray:
    """Cohen's κ from 2×2 cell counts (… × 4: a∧b, a∧¬b, ¬a∧b, ¬a∧¬b), with p_e = 1 → 1.0."""
    cells = np.asarray(cells, dtype=float)
    n = cells.sum(axis=-1)
    p_o = (cells[..., 0] + cells[..., 3]) / n
    pa = (cells[..., 0] + cells[..., 1]) / n
    pb = (cells[..., 0] + cells[..., 2]) / n
    p_e = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = (p_o - p_e) / (1.0 - p_e)
    return np.where(np.isclose(p_e, 1.0), 1.0, k)


def _fleiss_from_yes_counts(hist: np.ndarray, n_raters: int) -> np.ndarray:
    """Fleiss' κ from … × (r+1) counts of items by number of 'true' ratings (0..r)."""
    hist = np.asarray(hist, dtype=float)
    r = n_raters
    k = np.arange(r + 1, dtype=float)
    n = hist.sum(axis=-1)
    p_yes = (hist * k).sum(axis=-1) / (n * r)
    p_item = (k * k + (r - k) * (r - k) - r) / (r * (r - 1))
    p_bar = (hist * p_item).sum(axis=-1) / n
    p_e = p_yes * p_yes + (1 - p_yes) * (1 - p_yes)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (p_bar - p_e) / (1.0 - p_e)
    return np.where(np.isclose(p_e, 1.0), 1.0, kappa)


def _stable_ci(
    counts: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    draws: int,
    seed: int,
    level: float,
) -> tuple[float, float]:
    """The percentile interval of `statistic` (of per-pattern counts) over items resampled
    with replacement, stable between seeds (issue 29: at 1,000 draws a κ of 8-15 items moved
    an end by up to 16 points). Where the resamples' pattern counts have few outcomes (a
    multinomial of n over 4 patterns: n up to ~65) the interval is read on their exact
    distribution (core.stats.resample_sum_atoms, the inverse distribution function: no seed);
    otherwise drawn — items resampled with replacement and counted per pattern, one
    multinomial draw of n over the patterns' shares (batch 0:
    numpy.random.default_rng(seed).multinomial(n, counts / n, size=draws), batch b:
    default_rng([seed, b])) — more until each end's Monte-Carlo error is within 0.005
    (core.stats.draw_until_stable), read the same way."""
    from core.stats import (
        MC_TOLERANCE,
        draw_until_stable,
        interval_tails,
        inverted_cdf_intervals,
        resample_sum_atoms,
        weighted_quantiles,
    )

    tails = interval_tails(level)
    exact = resample_sum_atoms(np.eye(len(counts), dtype=np.int64), counts)
    if exact is not None:
        atoms, probs = exact
        with np.errstate(divide="ignore", invalid="ignore"):
            values = statistic(atoms)
        lo, hi = weighted_quantiles(values, probs, tails)
        return float(lo), float(hi)

    def draw(batch: int, size: int) -> np.ndarray:
        n = int(counts.sum())
        rng = np.random.default_rng(seed if batch == 0 else [seed, batch])
        with np.errstate(divide="ignore", invalid="ignore"):
            return statistic(rng.multinomial(n, counts / n, size=size))

    values = draw_until_stable(draw, draws, tails, MC_TOLERANCE)
    lo_a, hi_a = inverted_cdf_intervals(values, level)
    return float(lo_a[0]), float(hi_a[0])


def kappa_estimate(
    a: Iterable[Any],
    b: Iterable[Any],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
    level: float = CI_LEVEL,
) -> KappaEstimate:
    """Cohen's κ of two raters with n and a seeded percentile bootstrap CI (items resampled)."""
    x, y = _as_bool_array(a), _as_bool_array(b)
    kappa = cohen_kappa(x, y)
    n = len(x)
    if n == 0:
        return KappaEstimate(kappa, 0, float("nan"), float("nan"))
    cells = np.array([np.sum(x & y), np.sum(x & ~y), np.sum(~x & y), np.sum(~x & ~y)])
    lo, hi = _stable_ci(cells, _kappa_from_cells, draws, seed, level)
    return KappaEstimate(kappa, n, lo, hi)


def fleiss_estimate(
    ratings: np.ndarray | Sequence[Sequence[Any]],
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = BOOTSTRAP_SEED,
    level: float = CI_LEVEL,
) -> KappaEstimate:
    """Fleiss' κ (items × raters) with n items and a seeded percentile bootstrap CI over items."""
    m = np.asarray(ratings, dtype=bool)
    kappa = fleiss_kappa(m)
    n = int(m.shape[0]) if m.ndim == 2 else 0
    if n == 0 or math.isnan(kappa):
        return KappaEstimate(kappa, n, float("nan"), float("nan"))
    r = m.shape[1]
    hist = np.bincount(m.sum(axis=1), minlength=r + 1)
    lo, hi = _stable_ci(hist, lambda c: _fleiss_from_yes_counts(c, r), draws, seed, level)
    return KappaEstimate(kappa, n, lo, hi)


def format_kappa(est: KappaEstimate) -> str:
    """'0.62 [0.41, 0.80]', or 'n too small' below MIN_N items (the tile text)."""
    if est.n == 0 or math.isnan(est.kappa):
        return "—"
    if not est.reliable:
        return "n too small"
    return f"{est.kappa:.2f} [{est.ci_low:.2f}, {est.ci_high:.2f}]"


# ---------------------------------------------------------------------------------------------
# Results panel
# ---------------------------------------------------------------------------------------------


def agreement_table(labels: pd.DataFrame, *, names: Sequence[str]) -> pd.DataFrame:
    """Per annotator and label: n, Cohen's κ with the judge and its bootstrap CI, whether n is
    below MIN_N, % disagreement, confusion counts. `labels` is `audit_labels`; `names` (the
    LabelSet's) orders the rows."""
    out = []
    usable = labels.dropna(subset=["judge_value"])
    for (annotator, label), group in usable.groupby(["annotator", "label"], sort=True):
        judge = group["judge_value"].astype(bool).to_numpy()
        human = group["value"].astype(bool).to_numpy()
        cm = confusion(judge, human)
        est = kappa_estimate(judge, human)
        out.append(
            {
                "annotator": annotator,
                "label": label,
                "n": len(group),
                "cohen_kappa": est.kappa,
                "ci_low": est.ci_low,
                "ci_high": est.ci_high,
                "n_too_small": not est.reliable,
                "disagreement_pct": percent_disagreement(judge, human),
                "judge_true_human_true": cm[0, 0],
                "judge_true_human_false": cm[0, 1],
                "judge_false_human_true": cm[1, 0],
                "judge_false_human_false": cm[1, 1],
            }
        )
    frame = pd.DataFrame(
        out,
        columns=[
            "annotator",
            "label",
            "n",
            "cohen_kappa",
            "ci_low",
            "ci_high",
            "n_too_small",
            "disagreement_pct",
            "judge_true_human_true",
            "judge_true_human_false",
            "judge_false_human_true",
            "judge_false_human_false",
        ],
    )
    order = {label: i for i, label in enumerate(names)}
    return frame.sort_values(
        ["annotator", "label"], key=lambda s: s.map(order).fillna(0) if s.name == "label" else s
    ).reset_index(drop=True)


def confusion_matrices(
    labels: pd.DataFrame, annotator: str, *, names: Sequence[str]
) -> dict[str, np.ndarray]:
    """label -> 2×2 counts (rows judge true/false, columns human true/false) for one annotator,
    in the order of `names`."""
    out = {}
    mine = labels[(labels["annotator"] == annotator)].dropna(subset=["judge_value"])
    for label in names:
        group = mine[mine["label"] == label]
        out[label] = confusion(group["judge_value"].astype(bool), group["value"].astype(bool))
    return out


def fleiss_table(
    labels: pd.DataFrame, raters: Sequence[str] | None = None, *, names: Sequence[str]
) -> pd.DataFrame:
    """Per label of `names`: Fleiss' κ over `raters` (default all; ≥3) on the items every one
    of them labelled."""
    raters = sorted(raters if raters is not None else labels["annotator"].unique())
    rows = []
    for label in names:
        sub = labels[(labels["label"] == label) & (labels["annotator"].isin(raters))]
        wide = sub.pivot_table(
            index=["run_id", "item_id", "variant"],
            columns="annotator",
            values="value",
            aggfunc="last",
        )
        wide = wide.reindex(columns=raters).dropna()
        est = (
            fleiss_estimate(wide.astype(bool).to_numpy())
            if len(raters) >= 3
            else KappaEstimate(float("nan"), len(wide), float("nan"), float("nan"))
        )
        rows.append(
            {
                "label": label,
                "n_items": len(wide),
                "n_raters": len(raters),
                "fleiss_kappa": est.kappa,
                "ci_low": est.ci_low,
                "ci_high": est.ci_high,
                "n_too_small": not est.reliable,
            }
        )
    return pd.DataFrame(rows)


def pairwise_kappa(labels: pd.DataFrame, *, names: Sequence[str]) -> pd.DataFrame:
    """Cohen's κ between every two annotators, per label of `names`, on the items both
    labelled."""
    keys = ["run_id", "item_id", "variant"]
    people = sorted(labels["annotator"].unique())
    rows = []
    for label in names:
        wide = (
            labels[labels["label"] == label]
            .set_index([*keys, "annotator"])["value"]
            .unstack("annotator")
        )
        for i, a in enumerate(people):
            for b in people[i + 1 :]:
                if a not in wide or b not in wide:
                    continue
                both = wide[[a, b]].dropna()
                est = kappa_estimate(both[a].astype(bool), both[b].astype(bool))
                rows.append(
                    {
                        "label": label,
                        "annotator_a": a,
                        "annotator_b": b,
                        "n": len(both),
                        "cohen_kappa": est.kappa,
                        "ci_low": est.ci_low,
                        "ci_high": est.ci_high,
                        "n_too_small": not est.reliable,
                        "disagreement_pct": percent_disagreement(
                            both[a].astype(bool), both[b].astype(bool)
                        ),
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
            "label",
            "annotator_a",
            "annotator_b",
            "n",
            "cohen_kappa",
            "ci_low",
            "ci_high",
            "n_too_small",
            "disagreement_pct",
        ],
    )


def majority_labels(labels: pd.DataFrame) -> pd.DataFrame:
    """Majority vote of annotators per (response, label); ties go to false (no error handled)."""
    share = (
        labels.assign(value=labels["value"].astype(float))
        .groupby(["run_id", "item_id", "variant", "label"])["value"]
        .mean()
    )
    return (share > 0.5).rename("value").reset_index()


# ---------------------------------------------------------------------------------------------
# Charts (pure: DataFrame -> plotly Figure)
# ---------------------------------------------------------------------------------------------


def confusion_figure(matrices: Mapping[str, np.ndarray], annotator: str) -> go.Figure:
    """One 2×2 heatmap per label (rows of 3, in the order of `matrices`): rows judge true/false,
    columns annotator true/false; cells are counts of responses."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    labels = list(matrices)
    n_cols = 3
    n_rows = max(1, math.ceil(len(labels) / n_cols))
    fig = make_subplots(
        rows=n_rows,
        cols=n_cols,
        subplot_titles=labels,
        horizontal_spacing=0.08,
        vertical_spacing=0.22,
    )
    top = max([int(np.asarray(m).max()) for m in matrices.values() if np.asarray(m).size] + [1])
    for i, label in enumerate(labels):
        m = np.asarray(matrices[label])
        row, col = i // n_cols + 1, i % n_cols + 1
        fig.add_trace(
            go.Heatmap(
                z=m.tolist(),
                x=["true", "false"],
                y=["true", "false"],
                text=m.tolist(),
                texttemplate="%{text}",
                colorscale="Blues",
                showscale=False,
                zmin=0,
                zmax=top,
                name=label,
                hovertemplate=f"judge %{{y}} · {annotator} %{{x}}: %{{z}}<extra>{label}</extra>",
            ),
            row=row,
            col=col,
        )
        fig.update_yaxes(
            autorange="reversed", title_text="judge" if col == 1 else None, row=row, col=col
        )
        fig.update_xaxes(title_text=annotator, row=row, col=col)
    fig.update_layout(
        title=f"Confusion matrices: judge (rows) vs {annotator} (columns), counts of responses",
        height=260 * n_rows + 80,
        margin=dict(t=90, l=10, r=10, b=10),
    )
    return fig


def kappa_figure(agreement: pd.DataFrame, *, names: Sequence[str]) -> go.Figure:
    """Cohen's κ per label (in the order of `names`), one bar per annotator, with its bootstrap
    CI; κ on fewer than MIN_N items is left out (no bar) rather than drawn as if it meant
    something."""
    import plotly.express as px

    frame = agreement.copy()
    small = frame["n_too_small"].astype(bool)
    frame.loc[small, ["cohen_kappa", "ci_low", "ci_high"]] = float("nan")
    frame["err_plus"] = frame["ci_high"] - frame["cohen_kappa"]
    frame["err_minus"] = frame["cohen_kappa"] - frame["ci_low"]
    fig = px.bar(
        frame,
        x="label",
        y="cohen_kappa",
        color="annotator",
        barmode="group",
        error_y="err_plus",
        error_y_minus="err_minus",
        category_orders={"label": list(names)},
        hover_data={
            "cohen_kappa": ":.2f",  # not the bootstrap's float noise
            "n": True,
            "disagreement_pct": ":.1f",
            "err_plus": False,
            "err_minus": False,
        },
        title=f"Cohen's κ between the judge and each annotator, per label (95% "
        f"bootstrap CI; no bar below n = {MIN_N} items)",
        labels={"cohen_kappa": "Cohen's κ", "label": "label"},
    )
    fig.update_yaxes(range=[-1, 1.05])
    fig.update_layout(height=360)
    return fig
