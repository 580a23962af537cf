"""Figures for BIG-Bench Mistake: pure DataFrame -> plotly Figure (shared ones: core.services.charts).

Every figure is titled and axis-labelled; the page adds the source caption (paper table or run id).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from core.benchmarks.bbm.metrics import ACCURACY, OVERALL, WEIGHTED_F1, order_tasks
from core.benchmarks.bbm.prompts import METHOD_LABELS
from core.stats import MIN_N

MEASURE_LABELS = {
    ACCURACY: "Mistake-location accuracy (%)",
    WEIGHTED_F1: "Answer-correctness weighted F1 (%)",
    "unparsable_answers": "Unparsable answers (%)",
    "ambiguous_answers": "Ambiguous answers (%)",
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


def _cell_note(row: pd.Series) -> str:
    """A heatmap cell's n and interval for the hover (issue 18); a published cell has none."""
    n = row.get("n")
    if n is None or pd.isna(n):
        return "published (the paper gives no n)"
    low, high = row.get("ci_low"), row.get("ci_high")
    ci = "" if low is None or pd.isna(low) else f", 95% CI {low:.1f} – {high:.1f}"
    few = f" — n < {MIN_N}: too few for a stable value" if int(n) < MIN_N else ""
    return f"n = {int(n)}{ci}{few}"


def heatmap_notes(
    metrics: pd.DataFrame, method: str, measure: str = ACCURACY, subset: str = "all"
) -> pd.DataFrame:
    """`heatmap_frame`'s shape with each cell's hover note (n and interval)."""
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
    part["note"] = part.apply(_cell_note, axis=1)
    return part.pivot_table(
        index="task", columns="column", values="note", aggfunc="first", sort=False
    )


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
        notes = heatmap_notes(metrics, method, measure, subset).reindex(
            index=wide.index, columns=wide.columns
        )
        custom = [["" if pd.isna(v) else str(v) for v in row] for row in notes.to_numpy()]
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
                customdata=custom,
                hovertemplate="task %{y}<br>model %{x}<br>%{z:.2f}%<br>%{customdata}"
                "<extra></extra>",
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
