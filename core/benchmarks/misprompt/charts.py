"""Plotly figures for the Mis-prompt views: pure functions DataFrame -> Figure (no Streamlit).

Every figure has a title and labelled axes; the page adds the source caption under it. Values
are F1 (or recall) in percent; missing cells stay blank instead of being filled with zeros.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from core.services.labels import short_labels

# A phone shows ~350 px of plot: axes carry short labels (full ones in the hover), and past
# this many columns the cells are too narrow for their numbers (hover and colour carry them).
TEXT_MAX_COLUMNS = 6
X_LABEL_CHARS = 14
# Characters of column names that fit side by side under a phone's plot (~200 px beside the
# row labels, ~7 px a character): wider sets of names are angled instead of wrapped (checked
# in a 390 px screenshot: four wrapped primary categories ran into each other).
X_LABELS_PHONE_CHARS = 30
TITLE_LINE_CHARS = 44


def wrap_title(title: str, width: int = TITLE_LINE_CHARS) -> str:
    """A long title broken into lines at ' — ' (Plotly never wraps; on a phone it ran off)."""
    lines: list[str] = []
    for part in title.split(" — "):
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " — " + part
        else:
            lines.append(part)
    return "<br>".join(lines)


def wrap_words(text: str, width: int = X_LABEL_CHARS) -> str:
    """A column name on lines of about `width` characters (Plotly tick text takes '<br>')."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


# Margins set from the tick labels' length instead of Plotly's automargin (see _phone_layout):
# ~7 px a character at the default 12 px font, plus room for the axis title.
CHAR_PX = 7
AXIS_TITLE_PX = 40


def _phone_layout(
    fig: go.Figure,
    title: str,
    xs: Sequence[str],
    ys: Sequence[str],
    row_px: int,
    automargin: bool = True,
) -> None:
    """Axes that leave a phone's 390 px to the plot: the data keep the full names (the hover
    shows them), the ticks show short unique row labels and wrapped column names; past
    TEXT_MAX_COLUMNS, or when the names would not fit side by side on a phone, they are angled;
    the title is broken into lines.

    automargin=False sizes the left and bottom margins from the labels' length: Plotly's
    automargin measures every tick label in the page and draws the figure again until the
    margins settle, which for a 40-run heatmap cost more browser time than everything else on
    the Mis-prompt page (measured: bench/bench_browser.py)."""
    n_x, n_y = len(xs), len(ys)
    lines = wrap_title(title).count("<br>") + 1
    longest = max((len(line) for x in xs for line in wrap_words(x).split("<br>")), default=0)
    angled = n_x > TEXT_MAX_COLUMNS or n_x * longest > X_LABELS_PHONE_CHARS
    y_text = short_labels(ys)
    x_text = short_labels(xs) if angled else [wrap_words(x) for x in xs]
    if automargin:
        left, bottom = 10, 10
    else:
        x_lines = max((t.count("<br>") + 1 for t in x_text), default=1)
        x_chars = max((len(t) for t in x_text), default=0)
        left = AXIS_TITLE_PX + CHAR_PX * max((len(t) for t in y_text), default=0)
        # an angled label's height: its length × sin 60°
        bottom = AXIS_TITLE_PX + (
            int(CHAR_PX * x_chars * 0.87) + 10 if angled else 16 * x_lines + 10
        )
    fig.update_layout(
        title=dict(text=wrap_title(title)),
        height=max(340, 110 + 22 * lines + row_px * n_y + (90 if angled else 0)),
        margin=dict(l=left, r=10, t=30 + 22 * lines, b=bottom),
    )
    fig.update_yaxes(
        autorange="reversed",
        type="category",
        automargin=automargin,
        tickmode="array",
        tickvals=list(ys),
        ticktext=y_text,
    )
    fig.update_xaxes(
        type="category",
        side="bottom",
        automargin=automargin,
        tickangle=-60 if angled else 0,
        tickmode="array",
        tickvals=list(xs),
        ticktext=x_text,
    )


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


def heatmap(
    frame: pd.DataFrame,
    *,
    x: str,
    y: str,
    z: str,
    title: str,
    x_title: str,
    y_title: str,
    x_order: Sequence[str] | None = None,
    y_order: Sequence[str] | None = None,
    zmin: float | None = 0.0,
    zmax: float | None = 100.0,
    diverging: bool = False,
    colorbar_title: str = "F1 %",
    automargin: bool = True,
) -> go.Figure:
    """A labelled heatmap of `z` over x × y (one frame row per cell; duplicates are averaged).
    automargin: see _phone_layout (False where screenshots at 390 and 1,400 px showed the
    estimated margins fit: the primary and settings heatmaps)."""
    xs = _ordered(frame[x].astype(str).tolist(), x_order) if len(frame) else []
    ys = _ordered(frame[y].astype(str).tolist(), y_order) if len(frame) else []
    grid = (
        (
            frame.assign(**{x: frame[x].astype(str), y: frame[y].astype(str)})
            .pivot_table(index=y, columns=x, values=z, aggfunc="mean")
            .reindex(index=ys, columns=xs)
        )
        if len(frame)
        else pd.DataFrame()
    )
    values = grid.to_numpy().tolist() if len(grid) else []
    values = [[None if pd.isna(v) else round(float(v), 2) for v in row] for row in values]
    if diverging:
        extent = max([abs(v) for row in values for v in row if v is not None] or [1.0])
        kwargs = dict(colorscale="RdBu", zmid=0, zmin=-extent, zmax=extent)
    else:
        kwargs = dict(colorscale="Blues", zmin=zmin, zmax=zmax)
    fig = go.Figure(
        go.Heatmap(
            z=values,
            x=xs,
            y=ys,
            texttemplate="%{z:.1f}" if len(xs) <= TEXT_MAX_COLUMNS else "",
            hoverongaps=False,
            hovertemplate=f"{y_title}: %{{y}}<br>{x_title}: %{{x}}<br>{colorbar_title}: %{{z:.2f}}"
            "<extra></extra>",
            colorbar=dict(title=dict(text=colorbar_title)),
            **kwargs,
        )
    )
    fig.update_layout(xaxis_title=x_title, yaxis_title=y_title)
    _phone_layout(fig, title, xs, ys, 26, automargin=automargin)
    return fig


RUN_F1_SCALE = "Greens"  # runs' F1: never the published scale (Blues)
RUN_RECALL_SCALE = "Purples"  # runs' recall (no controls): a scale of its own
LOW_N_SCALE = [[0.0, "#d9d9d9"], [1.0, "#d9d9d9"]]


def run_heatmap(
    frame: pd.DataFrame,
    *,
    x: str,
    title: str,
    x_title: str,
    x_order: Sequence[str] | None = None,
    recall: bool = False,
    min_n: int = 10,
) -> go.Figure:
    """Runs × x for one label, apart from the published heatmaps: every cell's hover carries its
    value, 95% bootstrap interval and n (erroneous items in the cell, controls of the run);
    cells with n < min_n are drawn grey with "n<min_n" in their text and hover.

    frame: row_label, x, f1, ci_low, ci_high, n_error, n_control (one row per cell). Recall
    (runs without controls) and F1 never share a figure: pass one kind at a time.
    """
    value = "Recall %" if recall else "F1 %"
    xs = _ordered(frame[x].astype(str).tolist(), x_order) if len(frame) else []
    ys = _ordered(frame["row_label"].astype(str).tolist(), None) if len(frame) else []
    cell = {(str(r[x]), str(r["row_label"])): r for r in frame.to_dict("records")}

    def num(v: Any) -> float | None:
        return None if v is None or pd.isna(v) else round(float(v), 2)

    z_ok, z_low, text_low, custom = [], [], [], []
    for yv in ys:
        row_ok, row_low, row_text, row_custom = [], [], [], []
        for xv in xs:
            r = cell.get((xv, yv))
            v = num(r["f1"]) if r is not None else None
            n = int(r["n_error"]) if r is not None and not pd.isna(r["n_error"]) else 0
            low = r is not None and v is not None and n < min_n
            row_ok.append(None if low else v)
            row_low.append(0.0 if low else None)
            row_text.append(f"{v:.1f} (n<{min_n})" if low else "")
            row_custom.append(
                [
                    v,
                    num(r["ci_low"]) if r is not None else None,
                    num(r["ci_high"]) if r is not None else None,
                    n,
                    int(r["n_control"]) if r is not None and not pd.isna(r["n_control"]) else 0,
                ]
            )
        z_ok.append(row_ok)
        z_low.append(row_low)
        text_low.append(row_text)
        custom.append(row_custom)
    hover = (
        f"Run: %{{y}}<br>{x_title}: %{{x}}<br>{value}: %{{customdata[0]:.2f}}"
        "<br>95% CI: %{customdata[1]:.1f} – %{customdata[2]:.1f}"
        "<br>n = %{customdata[3]} erroneous items, %{customdata[4]} controls"
    )
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(
            z=z_ok,
            x=xs,
            y=ys,
            customdata=custom,
            texttemplate="%{z:.1f}" if len(xs) <= TEXT_MAX_COLUMNS else "",
            hoverongaps=False,
            colorscale=RUN_RECALL_SCALE if recall else RUN_F1_SCALE,
            zmin=0,
            zmax=100,
            name="runs",
            hovertemplate=hover + "<extra></extra>",
            colorbar=dict(title=dict(text=value + " (runs)")),
        )
    )
    if any(v is not None for row in z_low for v in row):
        fig.add_trace(
            go.Heatmap(
                z=z_low,
                x=xs,
                y=ys,
                customdata=custom,
                text=text_low,
                texttemplate="%{text}" if len(xs) <= TEXT_MAX_COLUMNS else "",
                hoverongaps=False,
                colorscale=LOW_N_SCALE,
                showscale=False,
                zmin=0,
                zmax=1,
                name=f"n<{min_n}",
                hovertemplate=hover + f"<br><b>n&lt;{min_n}: too few items for a stable value</b>"
                "<extra></extra>",
            )
        )
    fig.update_layout(xaxis_title=x_title, yaxis_title="Run (hover: judge, template, mode)")
    _phone_layout(fig, title, xs, ys, 30, automargin=False)
    return fig


def primary_heatmap(
    frame: pd.DataFrame, metric: str, categories: Sequence[str], title: str | None = None
) -> go.Figure:
    """Rows (models) × primary categories for one label; frame: row_label, category, f1.
    The page passes published rows only: runs get run_heatmap, a figure of their own."""
    return heatmap(
        frame,
        x="category",
        y="row_label",
        z="f1",
        x_order=categories,
        title=title or f"F1 by primary category — {metric_title(metric)}",
        x_title="Primary error category",
        y_title="Model / run",
        automargin=False,  # the page's first chart: drawn once, not again for its margins
    )


def secondary_heatmap(
    frame: pd.DataFrame, metric: str, categories: Sequence[str], title: str | None = None
) -> go.Figure:
    return heatmap(
        frame,
        x="category",
        y="row_label",
        z="f1",
        x_order=categories,
        title=title or f"F1 by secondary category — {metric_title(metric)}",
        x_title="Secondary error category",
        y_title="Model / run",
    )


def settings_heatmap(
    frame: pd.DataFrame, metric: str, settings: Sequence[str], title: str | None = None
) -> go.Figure:
    return heatmap(
        frame,
        x="setting",
        y="row_label",
        z="f1",
        x_order=settings,
        title=title or f"F1 by setting — {metric_title(metric)}",
        x_title="Setting",
        y_title="Model / run",
        automargin=False,
    )


def difference_heatmap(frame: pd.DataFrame, metric: str, settings: Sequence[str]) -> go.Figure:
    """frame: row_label, setting, difference (human − judge)."""
    return heatmap(
        frame,
        x="setting",
        y="row_label",
        z="difference",
        x_order=settings,
        diverging=True,
        colorbar_title="Δ F1 (points)",
        title=f"{metric_title(metric)}: human − judge F1 (points)",
        x_title="Setting",
        y_title="Model / run",
    )


def label_rates_bar(frame: pd.DataFrame, title: str) -> go.Figure:
    """frame: run, label, rate (percent of items with the label true), one bar group per label."""
    fig = go.Figure()
    for run, sub in frame.groupby("run", sort=False):
        fig.add_bar(
            x=sub["label"].map(metric_title),
            y=sub["rate"],
            name=str(run),
            hovertemplate="%{x}: %{y:.1f}%<extra>" + str(run) + "</extra>",
        )
    fig.update_layout(
        title=dict(text=title),
        barmode="group",
        xaxis_title="Judge label",
        yaxis_title="Items with the label true (%)",
        yaxis_range=[0, 100],
        height=380,
        margin=dict(l=10, r=10, t=60, b=10),
        legend_title_text="Run",
    )
    return fig


def f1_interval_chart(frame: pd.DataFrame, title: str, recall: bool = False) -> go.Figure:
    """frame: metric, f1, ci_low, ci_high (one run, one category) as points with 95% intervals;
    recall=True for a run without controls (the axis then says recall, not F1)."""
    fig = go.Figure(
        go.Scatter(
            x=frame["metric"].map(metric_title),
            y=frame["f1"],
            mode="markers",
            marker=dict(size=10),
            error_y=dict(
                type="data",
                symmetric=False,
                array=(frame["ci_high"] - frame["f1"]).tolist(),
                arrayminus=(frame["f1"] - frame["ci_low"]).tolist(),
            ),
            hovertemplate="%{x}: %{y:.2f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=dict(text=title),
        xaxis_title="Label",
        yaxis_title=("Recall" if recall else "F1") + " % (95% bootstrap interval)",
        yaxis_range=[0, 100],
        height=360,
        margin=dict(l=10, r=10, t=60, b=10),
    )
    return fig


def mark_cells(fig: go.Figure, cells: pd.DataFrame, y: str, note: str) -> go.Figure:
    """A '≠ recomputed' mark under each of `cells` (category, published, recomputed) in row `y`
    of a heatmap: the paper printed a value its own rows do not give (the cell keeps the
    paper's number; the mark says what its rows give)."""
    for row in cells.itertuples():
        fig.add_annotation(
            x=row.category,
            y=y,
            text=f"≠ {row.recomputed:.1f}",
            showarrow=False,
            yshift=-11,
            font={"size": 10, "color": "#b00020"},
            hovertext=f"{note}: published {row.published:.2f}, mean of its rows "
            f"{row.recomputed:.2f}",
        )
    return fig
