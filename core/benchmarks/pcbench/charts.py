"""The PCBench results page's heatmap: critique rate per error type × difficulty (or model)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.benchmarks.pcbench.items import ERROR_TYPE_LABELS
from core.stats import MIN_N


def rate_heatmap(rates: pd.DataFrame, counts: pd.DataFrame, title: str) -> go.Figure:
    """Rows = error types, columns = difficulties or models; a cell with fewer than MIN_N
    problems is left grey (no colour) and says so."""
    z = rates.to_numpy(dtype=float)
    n = counts.reindex(index=rates.index, columns=rates.columns).to_numpy(dtype=float)
    shown = np.where(n >= MIN_N, z, np.nan)
    text = [
        [
            "—"
            if np.isnan(v)
            else (f"{v:.0f}% (n={int(k)})" if k >= MIN_N else f"{v:.0f}% · n={int(k)} < {MIN_N}")
            for v, k in zip(zrow, nrow)
        ]
        for zrow, nrow in zip(z, n)
    ]
    x = [str(c) for c in rates.columns]
    y = [ERROR_TYPE_LABELS.get(str(i), str(i)) for i in rates.index]
    few = ~np.isnan(z) & (n < MIN_N)
    fig = go.Figure(
        [
            go.Heatmap(  # cells with too few problems: grey, with their n
                z=np.where(few, 0.0, np.nan),
                x=x,
                y=y,
                text=text,
                texttemplate="%{text}",
                colorscale=[[0, "#e6e6e6"], [1, "#e6e6e6"]],
                showscale=False,
                hoverinfo="text",
            ),
            go.Heatmap(
                z=shown,
                x=x,
                y=y,
                text=text,
                texttemplate="%{text}",
                zmin=0,
                zmax=100,
                colorscale="Blues",
                colorbar={"title": "critique %"},
            ),
        ]
    )
    fig.update_layout(title=title, height=320 + 10 * len(rates.index), margin={"l": 10, "r": 10})
    return fig
