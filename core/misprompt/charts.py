"""Plotly figures for the Mis-prompt views: pure functions DataFrame -> Figure (no Streamlit).

Every figure has a title and labelled axes; the page adds the source caption under it. Values
are F1 (or recall) in percent; missing cells stay blank instead of being filled with zeros.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

METRIC_TITLES = {
    "detection": "Detection",
    "identification_attempt": "Identification (attempt)",
    "identification_accurate": "Identification (accurate)",
    "correction_attempt": "Correction (attempt)",
    "correction_accurate": "Correction (accurate)",
    "guidance": "Guidance",
    "average": "Average of six labels",
}


def metric_title(metric: str) -> str:
    base = metric.removesuffix("_recall")
    title = METRIC_TITLES.get(base, base)
    return title + (" — recall" if metric.endswith("_recall") else "")


def _ordered(values: Sequence[str], order: Sequence[str] | None) -> list[str]:
    present = list(dict.fromkeys(values))
    if not order:
        return present
    return [v for v in order if v in present] + [v for v in present if v not in order]


def heatmap(frame: pd.DataFrame, *, x: str, y: str, z: str, title: str, x_title: str,
            y_title: str, x_order: Sequence[str] | None = None,
            y_order: Sequence[str] | None = None, zmin: float | None = 0.0,
            zmax: float | None = 100.0, diverging: bool = False,
            colorbar_title: str = "F1 %") -> go.Figure:
    """A labelled heatmap of `z` over x × y (one frame row per cell; duplicates are averaged)."""
    xs = _ordered(frame[x].astype(str).tolist(), x_order) if len(frame) else []
    ys = _ordered(frame[y].astype(str).tolist(), y_order) if len(frame) else []
    grid = (frame.assign(**{x: frame[x].astype(str), y: frame[y].astype(str)})
            .pivot_table(index=y, columns=x, values=z, aggfunc="mean")
            .reindex(index=ys, columns=xs)) if len(frame) else pd.DataFrame()
    values = grid.to_numpy().tolist() if len(grid) else []
    values = [[None if pd.isna(v) else round(float(v), 2) for v in row] for row in values]
    if diverging:
        extent = max([abs(v) for row in values for v in row if v is not None] or [1.0])
        kwargs = dict(colorscale="RdBu", zmid=0, zmin=-extent, zmax=extent)
    else:
        kwargs = dict(colorscale="Blues", zmin=zmin, zmax=zmax)
    fig = go.Figure(go.Heatmap(
        z=values, x=xs, y=ys, texttemplate="%{z:.1f}", hoverongaps=False,
        hovertemplate=f"{y_title}: %{{y}}<br>{x_title}: %{{x}}<br>{colorbar_title}: %{{z:.2f}}"
                      "<extra></extra>",
        colorbar=dict(title=dict(text=colorbar_title)), **kwargs))
    fig.update_layout(
        title=dict(text=title), xaxis_title=x_title, yaxis_title=y_title,
        height=max(340, 160 + 26 * len(ys)), margin=dict(l=10, r=10, t=60, b=10))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", side="bottom")
    return fig


def primary_heatmap(frame: pd.DataFrame, metric: str, categories: Sequence[str]) -> go.Figure:
    """Rows (models, runs) × primary categories for one label; frame: row_label, category, f1."""
    return heatmap(frame, x="category", y="row_label", z="f1", x_order=categories,
                   title=f"F1 by primary category — {metric_title(metric)}",
                   x_title="Primary error category", y_title="Model / run")


def secondary_heatmap(frame: pd.DataFrame, metric: str, categories: Sequence[str]) -> go.Figure:
    return heatmap(frame, x="category", y="row_label", z="f1", x_order=categories,
                   title=f"F1 by secondary category — {metric_title(metric)}",
                   x_title="Secondary error category", y_title="Model / run")


def settings_heatmap(frame: pd.DataFrame, metric: str, settings: Sequence[str],
                     title: str | None = None) -> go.Figure:
    return heatmap(frame, x="setting", y="row_label", z="f1", x_order=settings,
                   title=title or f"F1 by setting — {metric_title(metric)}",
                   x_title="Setting", y_title="Model / run")


def difference_heatmap(frame: pd.DataFrame, metric: str, settings: Sequence[str]) -> go.Figure:
    """frame: row_label, setting, difference (human − judge)."""
    return heatmap(frame, x="setting", y="row_label", z="difference", x_order=settings,
                   diverging=True, colorbar_title="Δ F1 (points)",
                   title=f"{metric_title(metric)}: human − judge F1 (points)",
                   x_title="Setting", y_title="Model / run")


def label_rates_bar(frame: pd.DataFrame, title: str) -> go.Figure:
    """frame: run, label, rate (percent of items with the label true), one bar group per label."""
    fig = go.Figure()
    for run, sub in frame.groupby("run", sort=False):
        fig.add_bar(x=sub["label"].map(metric_title), y=sub["rate"], name=str(run),
                    hovertemplate="%{x}: %{y:.1f}%<extra>" + str(run) + "</extra>")
    fig.update_layout(title=dict(text=title), barmode="group", xaxis_title="Judge label",
                      yaxis_title="Items with the label true (%)", yaxis_range=[0, 100],
                      height=380, margin=dict(l=10, r=10, t=60, b=10), legend_title_text="Run")
    return fig


def f1_interval_chart(frame: pd.DataFrame, title: str) -> go.Figure:
    """frame: metric, f1, ci_low, ci_high (one run, one category) as points with 95% intervals."""
    fig = go.Figure(go.Scatter(
        x=frame["metric"].map(metric_title), y=frame["f1"], mode="markers",
        marker=dict(size=10),
        error_y=dict(type="data", symmetric=False,
                     array=(frame["ci_high"] - frame["f1"]).tolist(),
                     arrayminus=(frame["f1"] - frame["ci_low"]).tolist()),
        hovertemplate="%{x}: %{y:.2f}<extra></extra>"))
    fig.update_layout(title=dict(text=title), xaxis_title="Label",
                      yaxis_title="F1 % (95% bootstrap interval)", yaxis_range=[0, 100],
                      height=360, margin=dict(l=10, r=10, t=60, b=10))
    return fig
