"""Figures for ProcessBench: pure DataFrame -> plotly Figure. The page adds the source caption.

The heatmap is split × model (one column per run: `model · run id`, as two runs of one model
differ); a cell resting on fewer than core.stats.MIN_N items is drawn grey with its n, since
its number says little."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from core.benchmarks.processbench.metrics import AVERAGE, OVERALL, split_order
from core.stats import MIN_N

MEASURES = {
    "f1": "F1 (harmonic mean of the two accuracies, %)",
    "error_acc": "Accuracy on erroneous solutions (%)",
    "correct_acc": "Accuracy on correct solutions (%)",
}
GREY = "#d9d9d9"


def column_label(model: object, source: object) -> str:
    return f"{model} · {source}"


def heatmap_frames(metrics: pd.DataFrame, measure: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(values, n) as split × column matrices, splits in the release's order, then overall and
    average."""
    if metrics.empty:
        return pd.DataFrame(), pd.DataFrame()
    part = metrics.copy()
    part["column"] = [column_label(m, s) for m, s in zip(part["model"], part["source"])]
    values = part.pivot_table(
        index="split", columns="column", values=measure, aggfunc="first", sort=False, dropna=False
    )
    counts = part.pivot_table(index="split", columns="column", values="n", aggfunc="first")
    splits = [s for s in part["split"].unique() if s not in (OVERALL, AVERAGE)]
    rows = [*split_order(splits), *(s for s in (OVERALL, AVERAGE) if s in set(part["split"]))]
    cols = list(dict.fromkeys(part["column"]))
    return values.reindex(index=rows, columns=cols), counts.reindex(index=rows, columns=cols)


def heatmap(metrics: pd.DataFrame, measure: str = "f1") -> go.Figure:
    values, counts = heatmap_frames(metrics, measure)
    fig = go.Figure()
    if not values.empty:
        z, grey, text = [], [], []
        for vrow, nrow in zip(values.to_numpy(), counts.to_numpy()):
            z.append([None if pd.isna(v) or n < MIN_N else float(v) for v, n in zip(vrow, nrow)])
            grey.append([1.0 if not pd.isna(v) and n < MIN_N else None for v, n in zip(vrow, nrow)])
            text.append(
                [
                    "" if pd.isna(v) else f"{v:.1f}" + (f" (n={int(n)})" if n < MIN_N else "")
                    for v, n in zip(vrow, nrow)
                ]
            )
        x, y = list(values.columns), list(values.index)
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=x,
                y=y,
                zmin=0,
                zmax=100,
                colorscale="Viridis",
                text=text,
                texttemplate="%{text}",
                colorbar={"title": "%"},
                hoverongaps=False,
                name=measure,
            )
        )
        fig.add_trace(
            go.Heatmap(
                z=grey,
                x=x,
                y=y,
                colorscale=[[0, GREY], [1, GREY]],
                showscale=False,
                text=text,
                texttemplate="%{text}",
                hoverongaps=False,
                name=f"fewer than {MIN_N} items",
            )
        )
    fig.update_layout(
        title=MEASURES.get(measure, measure) + " — split × model (run)",
        xaxis_title="model · run",
        yaxis_title="split",
        yaxis={"autorange": "reversed"},
        height=120 + 45 * max(len(values.index), 3),
    )
    return fig
