"""Plotly figures for the Anchoring page: pure functions DataFrame -> Figure (no Streamlit).

The paper's figures, redrawn from runs: count-bias box plots per condition and model (its
Figure 1), Count-F1 against overlap F0.5 with the inflation gap (Figures 2/4), span precision
and recall per condition (Figure 6), paired-bootstrap intervals per model (Figure 9). The
published headline numbers are constants here so the page can show them beside the runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from core.benchmarks.errorbench.prompts import CONDITIONS

PAPER = (
    "Yang 2026, “Prompt Framing Distorts Count-Based Evaluation of LLM Error Detection” "
    "(ErrorBench, arXiv 2607.01240)"
)

# SPEC §2 / the paper's abstract: what a run can be compared with.
PUBLISHED_HEADLINE: dict[str, Any] = {
    "delta_count_f1": 0.21,  # blind → anchored, mean of six models (100-passage ERRANT set)
    "delta_errant_f05": 0.04,  # same shift, multi-reference ERRANT F0.5
    "max_inflation_overlap": 0.79,  # Count-F1 − overlap F0.5, anchored, largest model value
    "max_inflation_strict": 0.96,  # Count-F1 − strict F0.5
    "passages": 143,
    "models": 6,
    "responses": 4290,
    "bootstrap_positive": "5 of 6 models",  # ΔCount − ΔERRANT > 0 at 95%
}
PUBLISHED_DIFFERENCE = PUBLISHED_HEADLINE["delta_count_f1"] - PUBLISHED_HEADLINE["delta_errant_f05"]

CONDITION_LABELS = {
    "blind": "Blind",
    "hinted": "Hinted",
    "anchored": "Anchored (N)",
    "mislead_high": "Mislead high (N+2)",
    "mislead_low": "Mislead low (max(1, N−2))",
}
SHORT_LABELS = {
    "blind": "Blind",
    "hinted": "Hinted",
    "anchored": "Anchored",
    "mislead_high": "High N+2",
    "mislead_low": "Low N−2",
}
PALETTE = [
    "#4C78A8",
    "#F58518",
    "#54A24B",
    "#E45756",
    "#72B7B2",
    "#B279A2",
    "#FF9DA6",
    "#9D755D",
    "#BAB0AC",
    "#EECA3B",
]


def _conditions(values: Iterable[str]) -> list[str]:
    present = list(dict.fromkeys(values))
    return [c for c in CONDITIONS if c in present] + [c for c in present if c not in CONDITIONS]


def _empty(title: str, message: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(
        title=title,
        xaxis=dict(visible=False),
        yaxis=dict(visible=False),
        annotations=[dict(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")],
    )
    return fig


def count_bias_box(flat: pd.DataFrame) -> go.Figure:
    """CB = n̂ − N per passage: one box per condition and model (grouped by condition)."""
    title = "Count bias (reported − true error count) by condition and model"
    data = flat[flat["ok"]] if len(flat) else flat
    if data.empty:
        return _empty(title, "no scored responses")
    order = _conditions(data["condition"])
    fig = go.Figure()
    for i, (model, g) in enumerate(data.groupby("model_label", sort=True)):
        g = g.assign(_o=g["condition"].map({c: k for k, c in enumerate(order)})).sort_values("_o")
        fig.add_trace(
            go.Box(
                x=[SHORT_LABELS.get(c, c) for c in g["condition"]],
                y=g["count_bias"],
                name=str(model),
                marker_color=PALETTE[i % len(PALETTE)],
                boxmean=True,
                hovertemplate="%{x}<br>CB %{y}<extra>" + str(model) + "</extra>",
            )
        )
    fig.add_hline(
        y=0,
        line_dash="dot",
        line_color="gray",
        annotation_text="reported = true count",
        annotation_position="top left",
    )
    fig.update_layout(
        title=title,
        boxmode="group",
        legend_title_text="Model",
        xaxis=dict(
            title="Prompt condition",
            categoryorder="array",
            categoryarray=[SHORT_LABELS.get(c, c) for c in order],
        ),
        yaxis=dict(title="Count bias CB = n̂ − N (errors)", zeroline=False),
    )
    return fig


def inflation_bars(metrics: pd.DataFrame, span: str = "overlap") -> go.Figure:
    """Count-F1 (solid) next to span F0.5 (hatched) per model × condition; the gap ΔF marked."""
    title = f"Count-F1 vs {span} F0.5 — the gap is the F1 inflation ΔF"
    data = metrics.dropna(subset=["count_f1"]) if len(metrics) else metrics
    if data.empty:
        return _empty(title, "no scored responses")
    order = _conditions(data["condition"])
    data = data.assign(_o=data["condition"].map({c: k for k, c in enumerate(order)}))
    data = data.sort_values(["model", "_o"], kind="stable")
    x = [data["model"].astype(str).tolist(), [SHORT_LABELS.get(c, c) for c in data["condition"]]]
    span_col = f"{span}_f05"
    gap = data["count_f1"] - data[span_col]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            x=x,
            y=data["count_f1"],
            name="Count-F1",
            marker_color="#4C78A8",
            hovertemplate="%{x}<br>Count-F1 %{y:.3f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            x=x,
            y=data[span_col],
            name=f"{span.capitalize()} F0.5",
            marker=dict(color="#F58518", pattern=dict(shape="/")),
            hovertemplate="%{x}<br>" + span + " F0.5 %{y:.3f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=data["count_f1"],
            mode="markers+text",
            name="ΔF = Count-F1 − span F0.5",
            text=[f"{g:+.2f}" for g in gap],
            textposition="top center",
            textfont=dict(size=10, color="#B03A2E"),
            marker=dict(symbol="line-ew-open", size=14, color="#E45756"),
            error_y=dict(
                type="data",
                symmetric=False,
                array=[0] * len(gap),
                arrayminus=gap.clip(lower=0).tolist(),
                color="#E45756",
                thickness=2,
                width=0,
            ),
            hovertemplate="%{x}<br>ΔF %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        barmode="group",
        legend_title_text="",
        height=520,
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        yaxis=dict(title="Score (0–1)", range=[0, 1.15]),
        xaxis=dict(
            title="Model · prompt condition (red: ΔF, from the Count-F1 "
            "bar down to the span bar's level)"
        ),
    )
    return fig


def span_precision_recall(metrics: pd.DataFrame, span: str = "overlap") -> go.Figure:
    """Span precision (solid) and recall (dashed) per condition, one colour per model."""
    title = f"Span precision and recall ({span} matching) by condition"
    data = metrics.dropna(subset=[f"{span}_p"]) if len(metrics) else metrics
    if data.empty:
        return _empty(title, "no scored responses")
    order = _conditions(data["condition"])
    fig = go.Figure()
    for i, (model, g) in enumerate(data.groupby("model", sort=True)):
        g = g.set_index("condition").reindex(order)
        labels = [SHORT_LABELS.get(c, c) for c in order]
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(
            go.Scatter(
                x=labels,
                y=g[f"{span}_p"],
                name=f"{model} — precision",
                mode="lines+markers",
                line=dict(color=color),
                hovertemplate="%{x}<br>precision %{y:.3f}<extra></extra>",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=labels,
                y=g[f"{span}_r"],
                name=f"{model} — recall",
                mode="lines+markers",
                line=dict(color=color, dash="dash"),
                marker=dict(symbol="diamond"),
                hovertemplate="%{x}<br>recall %{y:.3f}<extra></extra>",
            )
        )
    fig.update_layout(
        title=title,
        yaxis=dict(title="Span precision / recall", range=[0, 1.05]),
        xaxis=dict(title="Prompt condition"),
        legend_title_text="",
    )
    return fig


def bootstrap_forest(boot: pd.DataFrame, span: str = "overlap") -> go.Figure:
    """Per model: ΔCount-F1 − ΔSpan-F0.5 (blind → anchored) with its 95% bootstrap interval."""
    title = f"Paired bootstrap: (ΔCount-F1 − Δ{span} F0.5), blind → anchored, 95% interval"
    data = boot.dropna(subset=["difference"]) if len(boot) else boot
    if data.empty:
        return _empty(title, "needs blind and anchored responses on the same passages")
    data = data.iloc[::-1]
    fig = go.Figure(
        go.Scatter(
            x=data["difference"],
            y=data["model"].astype(str),
            mode="markers",
            name="this database",
            marker=dict(size=11, color="#4C78A8"),
            error_x=dict(
                type="data",
                symmetric=False,
                array=data["ci_high"] - data["difference"],
                arrayminus=data["difference"] - data["ci_low"],
                thickness=2,
            ),
            customdata=data[["ci_low", "ci_high", "passages"]].to_numpy(),
            hovertemplate="%{y}<br>difference %{x:.3f}<br>95% CI [%{customdata[0]:.3f}, "
            "%{customdata[1]:.3f}]<br>%{customdata[2]} passages<extra></extra>",
        )
    )
    fig.add_vline(
        x=0,
        line_dash="dot",
        line_color="gray",
        annotation_text="no inflation",
        annotation_position="bottom right",
    )
    fig.add_vline(
        x=PUBLISHED_DIFFERENCE,
        line_dash="dash",
        line_color="#E45756",
        annotation_text=f"paper: +0.21 − 0.04 = {PUBLISHED_DIFFERENCE:.2f} "
        "(mean of 6 models, ERRANT)",
        annotation_position="top right",
    )
    fig.update_layout(
        title=title,
        xaxis=dict(title="ΔCount-F1 − ΔSpan-F0.5"),
        yaxis=dict(title="Model"),
        showlegend=False,
    )
    return fig


def count_f1_by_condition(metrics: pd.DataFrame) -> go.Figure:
    """Count-F1 per condition, one bar per model (the paper's Figure 2)."""
    title = "Count-F1 by condition and model"
    data = metrics.dropna(subset=["count_f1"]) if len(metrics) else metrics
    if data.empty:
        return _empty(title, "no scored responses")
    order = _conditions(data["condition"])
    fig = go.Figure()
    for i, (model, g) in enumerate(data.groupby("model", sort=True)):
        g = g.set_index("condition").reindex(order)
        fig.add_trace(
            go.Bar(
                x=[SHORT_LABELS.get(c, c) for c in order],
                y=g["count_f1"],
                name=str(model),
                marker_color=PALETTE[i % len(PALETTE)],
                hovertemplate="%{x}<br>Count-F1 %{y:.3f}<extra></extra>",
            )
        )
    fig.update_layout(
        title=title,
        barmode="group",
        yaxis=dict(title="Count-F1", range=[0, 1.05]),
        xaxis=dict(title="Prompt condition"),
        legend_title_text="Model",
    )
    return fig


def headline_comparison(metrics: pd.DataFrame, boot: pd.DataFrame | None = None) -> pd.DataFrame:
    """The paper's headline numbers beside the same quantities from the selected runs."""

    def mean_delta(col: str) -> float | None:
        if metrics.empty:
            return None
        wide = metrics.pivot_table(index="model", columns="condition", values=col)
        if not {"blind", "anchored"} <= set(wide.columns):
            return None
        return float((wide["anchored"] - wide["blind"]).mean())

    def max_gap(span: str) -> float | None:
        sub = metrics[metrics["condition"] == "anchored"] if len(metrics) else metrics
        if sub.empty:
            return None
        return float((sub["count_f1"] - sub[f"{span}_f05"]).max())

    ours_errant = mean_delta("errant_f05") if "errant_f05" in metrics.columns else None
    rows = [
        (
            "Mean ΔCount-F1, blind → anchored",
            PUBLISHED_HEADLINE["delta_count_f1"],
            mean_delta("count_f1"),
            "mean over models",
        ),
        (
            "Mean ΔERRANT F0.5, blind → anchored",
            PUBLISHED_HEADLINE["delta_errant_f05"],
            ours_errant,
            "multi-reference (annotators 0, 1); runs: only with ERRANT on",
        ),
        (
            "Mean Δoverlap F0.5, blind → anchored",
            None,
            mean_delta("overlap_f05"),
            "the paper reports ERRANT for this shift",
        ),
        (
            "Largest inflation ΔF (overlap), anchored",
            PUBLISHED_HEADLINE["max_inflation_overlap"],
            max_gap("overlap"),
            "Count-F1 − overlap F0.5",
        ),
        (
            "Largest inflation (strict), anchored",
            PUBLISHED_HEADLINE["max_inflation_strict"],
            max_gap("strict"),
            "Count-F1 − strict F0.5",
        ),
        (
            "Models with ΔCount − ΔSpan > 0 at 95%",
            PUBLISHED_HEADLINE["bootstrap_positive"],
            None
            if boot is None or boot.empty
            else f"{int((boot['ci_low'] > 0).sum())} of {len(boot)} models",
            "paired bootstrap",
        ),
    ]

    def fmt(value: object) -> str:
        if value is None or (isinstance(value, float) and pd.isna(value)):
            return "—"
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    return pd.DataFrame(
        [(q, fmt(p), fmt(o), n) for q, p, o, n in rows],
        columns=["quantity", "paper", "selected runs", "note"],
    )
