"""Mis-prompt chart builders: pure DataFrame -> Figure, titled, axes labelled, data placed right."""

from __future__ import annotations

import pandas as pd

from core.benchmarks.misprompt import charts
from core.benchmarks.misprompt.taxonomy import PRIMARY


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "row_label": ["GPT-4o", "GPT-4o", "run-1 · m", "run-1 · m"],
            "category": ["Factual Errors", "Language Errors", "Language Errors", "Logical Errors"],
            "f1": [72.99, 6.5, 40.0, 12.345],
        }
    )


def test_heatmap_places_values_by_category_order_and_leaves_gaps():
    fig = charts.primary_heatmap(_frame(), "detection", PRIMARY)
    trace = fig.data[0]
    assert list(trace.x) == [
        "Language Errors",
        "Factual Errors",
        "Logical Errors",
    ]  # taxonomy order
    assert list(trace.y) == ["GPT-4o", "run-1 · m"]
    z = [list(r) for r in trace.z]
    assert z[0] == [6.5, 72.99, None]  # missing cell stays blank
    assert z[1][0] == 40.0 and z[1][2] == 12.35 and z[1][1] is None
    assert "Detection" in fig.layout.title.text
    assert fig.layout.xaxis.title.text == "Primary error category"
    assert fig.layout.yaxis.title.text == "Model / run"
    assert trace.zmin == 0 and trace.zmax == 100


def test_difference_heatmap_is_diverging_and_symmetric():
    frame = pd.DataFrame(
        {
            "row_label": ["A", "A", "B"],
            "setting": ["zero-shot", "CoT", "CoT"],
            "difference": [-6.14, 1.5, 3.0],
        }
    )
    fig = charts.difference_heatmap(frame, "average", ["zero-shot", "CoT"])
    trace = fig.data[0]
    assert trace.zmid == 0 and trace.zmin == -trace.zmax == -6.14
    assert "human − judge" in fig.layout.title.text
    assert fig.layout.xaxis.title.text == "Setting"


def test_recall_metric_title_never_says_f1_alone():
    assert charts.metric_title("detection_recall") == "Detection — recall"
    assert charts.metric_title("average") == "Average of six labels"


def test_label_rates_bar_and_interval_chart():
    rates = pd.DataFrame(
        {
            "run": ["a", "a", "b", "b"],
            "label": ["detection", "guidance"] * 2,
            "rate": [50.0, 10.0, 70.0, 20.0],
        }
    )
    fig = charts.label_rates_bar(rates, "Rates")
    assert [t.name for t in fig.data] == ["a", "b"]
    assert list(fig.data[1].y) == [70.0, 20.0]
    assert fig.layout.yaxis.title.text and fig.layout.xaxis.title.text == "Judge label"
    ci = pd.DataFrame({"metric": ["detection"], "f1": [60.0], "ci_low": [55.0], "ci_high": [66.0]})
    fig = charts.f1_interval_chart(ci, "CI")
    assert list(fig.data[0].error_y.array) == [6.0]
    assert list(fig.data[0].error_y.arrayminus) == [5.0]
    assert fig.layout.title.text == "CI"


def test_empty_frame_gives_an_empty_but_titled_figure():
    fig = charts.settings_heatmap(
        pd.DataFrame(columns=["row_label", "setting", "f1"]), "guidance", ["zero-shot"]
    )
    assert "Guidance" in fig.layout.title.text
    assert not list(fig.data[0].z)


def test_primary_and_settings_heatmaps_size_their_margins_without_automargin() -> None:
    """The results page's first chart (primary) and the settings heatmaps are drawn once: with
    Plotly's automargin the browser measured every tick label and drew them again until the
    margins settled. Their margins come from the labels' length instead; the angled secondary
    heatmap keeps automargin (estimated margins squashed it at 390 px)."""
    frame = _frame()
    settings = frame.rename(columns={"category": "setting"})
    for fig in (
        charts.primary_heatmap(frame, "average", PRIMARY),
        charts.settings_heatmap(settings, "average", ["Factual Errors", "Language Errors"]),
    ):
        assert fig.layout.xaxis.automargin is False and fig.layout.yaxis.automargin is False
        # room for the longest row label ("run-1 · m") beside the plot
        assert fig.layout.margin.l >= charts.AXIS_TITLE_PX + charts.CHAR_PX * len("run-1 · m")
    secondary = charts.secondary_heatmap(frame, "average", PRIMARY)
    assert secondary.layout.xaxis.automargin is True
