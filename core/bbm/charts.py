"""Figures for BIG-Bench Mistake and the proactive-vs-passive view: pure DataFrame -> plotly Figure.

Every figure is titled and axis-labelled; the page adds the source caption (paper table or run id).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from core.bbm.metrics import ACCURACY, OVERALL, WEIGHTED_F1, order_tasks
from core.bbm.prompts import METHOD_LABELS

MEASURE_LABELS = {
    ACCURACY: "Mistake-location accuracy (%)",
    WEIGHTED_F1: "Answer-correctness weighted F1 (%)",
    "unparsable_answers": "Unparsable answers (%)",
    "out_of_range_answers": "Out-of-range step numbers (%)",
    "partly_parsed_answers": "Partly parsed step answers (%)",
}
SUBSET_LABELS = {
    "all": "all traces",
    "traces_with_mistake": "traces with a mistake",
    "traces_without_mistake": "traces without a mistake",
}
PUBLISHED_TABLE = {
    (ACCURACY, "all"): "Table 4",
    (WEIGHTED_F1, "all"): "Table 5",
    (ACCURACY, "traces_without_mistake"): "Table 9a",
    (ACCURACY, "traces_with_mistake"): "Table 9b",
}


def column_label(row: pd.Series) -> str:
    """Published models keep their name; a run is `model · run id` (two runs of one model differ)."""
    if row.get("kind") == "run":
        return f"{row['model']} · {row['source']}"
    return str(row["model"])


def heatmap_frame(
    metrics: pd.DataFrame, method: str, measure: str = ACCURACY, subset: str = "all"
) -> pd.DataFrame:
    """Task × model matrix (rows in the paper's task order, published models first)."""
    part = metrics[
        (metrics["method"] == method)
        & (metrics["measure"] == measure)
        & (metrics["subset"] == subset)
    ].copy()
    if part.empty:
        return pd.DataFrame()
    if "kind" not in part:
        part["kind"] = "published"
    part["column"] = part.apply(column_label, axis=1)
    wide = part.pivot_table(
        index="task", columns="column", values="value", aggfunc="first", sort=False
    )
    cols = list(dict.fromkeys(part.sort_values("kind", kind="stable")["column"]))
    return wide.reindex(index=order_tasks(wide.index), columns=cols)


def heatmap(
    metrics: pd.DataFrame, method: str, measure: str = ACCURACY, subset: str = "all"
) -> go.Figure:
    wide = heatmap_frame(metrics, method, measure, subset)
    title = (
        f"{MEASURE_LABELS.get(measure, measure)} — {METHOD_LABELS.get(method, method)}, "
        f"{SUBSET_LABELS.get(subset, subset)}"
    )
    fig = go.Figure()
    if not wide.empty:
        text = [["" if pd.isna(v) else f"{v:.1f}" for v in row] for row in wide.to_numpy()]
        z = [[None if pd.isna(v) else float(v) for v in row] for row in wide.to_numpy()]
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=list(wide.columns),
                y=list(wide.index),
                zmin=0,
                zmax=100,
                colorscale="Viridis",
                text=text,
                texttemplate="%{text}",
                colorbar={"title": {"text": "%"}},
                hovertemplate="task %{y}<br>model %{x}<br>%{z:.2f}%<extra></extra>",
                name=title,
            )
        )
    fig.update_layout(
        title={"text": title},
        xaxis_title="Model (published) / model · run",
        yaxis_title="Task",
        yaxis={"autorange": "reversed"},
        height=max(320, 60 * (len(wide.index) + 2)),
        margin={"t": 60},
    )
    return fig


def method_split_bars(metrics: pd.DataFrame, column: str) -> go.Figure:
    """Like the paper's Figure 1 for one model/run: accuracy per method, with vs without mistake.

    Uses each subset's Overall (runs) or the mean over tasks (published, which has no Overall
    for Table 9).
    """
    part = metrics[
        (metrics["measure"] == ACCURACY)
        & metrics["subset"].isin(["traces_with_mistake", "traces_without_mistake"])
    ]
    if "kind" in part:
        part = part.assign(column=part.apply(column_label, axis=1))
    else:
        part = part.assign(column=part["model"])
    part = part[(part["column"] == column) & (part["task"] != OVERALL)]
    fig = go.Figure()
    for subset, name in (
        ("traces_without_mistake", "trace has no mistake"),
        ("traces_with_mistake", "trace has a mistake"),
    ):
        sub = part[part["subset"] == subset].groupby("method")["value"].mean()
        methods = [m for m in METHOD_LABELS if m in sub.index]
        fig.add_trace(
            go.Bar(x=[METHOD_LABELS[m] for m in methods], y=[sub[m] for m in methods], name=name)
        )
    fig.update_layout(
        barmode="group",
        title={"text": f"Accuracy by method, split by whether the trace has a mistake — {column}"},
        xaxis_title="Prompting method",
        yaxis_title="Mistake-location accuracy (%, mean over tasks)",
        yaxis={"range": [0, 100]},
    )
    return fig


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
            or "Proactive detection (Mis-prompt F1) vs passive "
            "mistake finding (BIG-Bench Mistake accuracy), "
            "per model"
        },
        xaxis_title="Model (names as each source spells them)",
        yaxis_title="Percent",
        yaxis={"range": [0, 100]},
        # legend above the plot: below it, it sat on the x-axis title
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "xanchor": "left", "x": 0},
        margin={"t": 110},
    )
    return fig


def proactive_passive_scatter(wide: pd.DataFrame, x: str, y: str) -> go.Figure:
    """One point per model that has both values (x: proactive detection F1, y: passive score)."""
    both = wide.dropna(subset=[x, y])
    labels = [f"{m} ({a:.1f}, {b:.1f})" for m, a, b in zip(both["model"], both[x], both[y])]
    fig = go.Figure(
        go.Scatter(
            x=both[x],
            y=both[y],
            mode="markers+text",
            text=labels,
            textposition=[label_position(a, b) for a, b in zip(both[x], both[y])],
            cliponaxis=False,
            marker={"size": 12},
            name="models with both values",
        )
    )
    fig.update_layout(
        title={"text": "Models with both a proactive and a passive score"},
        xaxis_title=x,
        yaxis_title=y,
        xaxis={"range": padded_range(both[x])},
        yaxis={"range": padded_range(both[y])},
        showlegend=False,
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
