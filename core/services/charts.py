"""Figures shared by every benchmark: pure DataFrame -> plotly Figure.

The proactive-vs-passive view (one bar or point per model and measure, whatever benchmarks
contribute). Every figure is titled and axis-labelled; the page adds the source caption.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def proactive_passive_bars(frame: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Grouped bars: one group per model, one bar per measure (column `measure_label`).

    `frame` columns: model, measure_label, value, source (+ judge, mode: shown on hover, so a
    run's number names the judge that produced it). Recall rows belong in a figure of their own.
    """
    fig = go.Figure()
    for label, part in frame.groupby("measure_label", sort=False):
        extra = [c for c in ("judge", "mode") if c in part.columns]
        fig.add_trace(
            go.Bar(
                x=part["model"],
                y=part["value"],
                name=str(label),
                customdata=part[["source", *extra]].astype(str).to_numpy(),
                hovertemplate="%{x}<br>%{y:.2f}<br>source: %{customdata[0]}"
                + (
                    "<br>judge: %{customdata[1]}<br>mode: %{customdata[2]}"
                    if len(extra) == 2
                    else ""
                )
                + "<extra>"
                + str(label)
                + "</extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        title={
            "text": title
            or "Proactive vs passive error handling, per model (each measure as its "
            "benchmark defines it)"
        },
        xaxis_title="Model (names as each source spells them)",
        yaxis_title="Percent",
        yaxis={"range": [0, 100]},
        # legend above the plot: below it, it sat on the x-axis title
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
        # a legend row holds two measures: leave room above the plot for every row
        margin={"t": 80 + 22 * ((len(fig.data) + 1) // 2)},
    )
    return fig


def proactive_passive_scatter(wide: pd.DataFrame, x: str, y: str) -> go.Figure:
    """One point per model that has both values (x: proactive detection F1, y: passive score).

    Each point carries a number inside its marker and the legend says which model and values
    it is: names written beside the points overlapped where models score alike (issue 31)."""
    both = wide.dropna(subset=[x, y]).reset_index(drop=True)
    fig = go.Figure()
    for k, (model, a, b) in enumerate(zip(both["model"], both[x], both[y]), start=1):
        fig.add_trace(
            go.Scatter(
                x=[a],
                y=[b],
                mode="markers+text",
                text=[str(k)],
                textposition="middle center",
                textfont={"color": "white", "size": 11},
                cliponaxis=False,
                marker={"size": 20},
                name=f"{k} {model} ({a:.1f}, {b:.1f})",
                hovertemplate=f"{model}<br>{x}: %{{x:.1f}}<br>{y}: %{{y:.1f}}<extra></extra>",
            )
        )
    fig.update_layout(
        title={"text": "Models with both a proactive and a passive score"},
        xaxis_title=x,
        yaxis_title=y,
        xaxis={"range": padded_range(both[x])},
        yaxis={"range": padded_range(both[y])},
        showlegend=True,
        legend={"title": {"text": "point · model (x, y)"}},
    )
    return fig


def label_position(x: float, y: float) -> str:
    """Put a point's label towards the middle of a 0–100 plot, so one at the edge stays inside."""
    vertical = "top" if y < 20 else "bottom"
    horizontal = "left" if x > 60 else "right" if x < 40 else "center"
    return f"{vertical} {horizontal}"


def padded_range(
    values: pd.Series, lo: float = 0.0, hi: float = 100.0, pad: float = 8.0
) -> list[float]:
    """A percent axis that shows 0–100 plus room around every point (a point at 100 was cut
    in half, its label cut off)."""
    vals = pd.to_numeric(values, errors="coerce").dropna()
    low = min([lo, *vals]) - pad
    high = max([hi, *vals]) + pad
    return [float(low), float(high)]
