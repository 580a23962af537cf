"""The PCBench results page's heatmap: critique rate per error type × difficulty (or model)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.benchmarks.pcbench.items import ERROR_TYPE_LABELS
from core.stats import MIN_N, wilson_percent


def rate_heatmap(rates: pd.DataFrame, counts: pd.DataFrame, title: str) -> go.Figure:
    """Rows = error types, columns = difficulties or models; a cell with fewer than MIN_N
    problems is left grey (no colour) and says so."""
    z = rates.to_numpy(dtype=float)
    n = counts.reindex(index=rates.index, columns=rates.columns).to_numpy(dtype=float)
    shown = np.where(n >= MIN_N, z, np.nan)
    # the Wilson 95% interval the page promises, from the rate and n (critiqued = rate × n)
    with np.errstate(invalid="ignore"):
        low, high = wilson_percent(np.round(np.nan_to_num(z) * n / 100), n)
    text = [
        [
            "—"
            if np.isnan(v)
            else (
                f"{v:.0f}% [{lo:.0f}–{hi:.0f}] (n={int(k)})"
                if k >= MIN_N
                else f"{v:.0f}% · n={int(k)} < {MIN_N}"
            )
            for v, k, lo, hi in zip(zrow, nrow, lrow, hrow)
        ]
        for zrow, nrow, lrow, hrow in zip(z, n, low, high)
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
