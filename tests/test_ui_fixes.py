"""Issue 12 point 3: chart and caption fixes, each with the check that would have caught it."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.benchmarks.misprompt import queries
from core.services import overview
from core.services.charts import proactive_passive_bars, proactive_passive_scatter
from tests.conftest import ROOT
from tests.misprompt_fixtures import insert_run, random_verdicts

APP = str(ROOT / "app.py")


def test_bars_legend_sits_above_the_plot_not_on_the_x_axis_title():
    frame = pd.DataFrame(
        {
            "model": ["A", "B"],
            "measure_label": ["m1", "m2"],
            "value": [40.0, 60.0],
            "source": ["s", "s"],
        }
    )
    layout = proactive_passive_bars(frame).layout
    assert layout.xaxis.title.text  # the title the legend used to cover
    # A horizontal legend below the plot (y < 0) shares the band of the x-axis title.
    assert layout.legend.y >= 1 and layout.legend.yanchor == "bottom"
    assert layout.margin.t >= 100  # room for the title and the legend above the plot


def test_scatter_point_at_100_is_inside_the_axes_and_labelled():
    wide = pd.DataFrame({"model": ["GPT-x"], "pro": [100.0], "pas": [100.0]})
    fig = proactive_passive_scatter(wide, "pro", "pas")
    trace = fig.data[0]
    lo_x, hi_x = fig.layout.xaxis.range
    lo_y, hi_y = fig.layout.yaxis.range
    assert lo_x < 0 and hi_x > 100 and lo_y < 0 and hi_y > 100  # padding on both sides
    assert trace.cliponaxis is False
    # labelled by a number inside the marker; the legend names it (issue 31: names beside
    # the points overlapped)
    assert list(trace.text) == ["1"] and trace.name == "1 GPT-x (100.0, 100.0)"
    assert trace.textposition == "middle center"
    assert "text" in trace.mode


def test_scatter_labels_of_models_scoring_alike_do_not_overlap():
    wide = pd.DataFrame(
        {
            "model": ["model-a", "model-b", "model-c"],
            "pro": [40.0, 40.5, 41.0],
            "pas": [60.0, 60.2, 59.8],
        }
    )
    fig = proactive_passive_scatter(wide, "pro", "pas")
    # nothing is written outside the markers: each point's text is its number, inside it
    assert [list(t.text) for t in fig.data] == [["1"], ["2"], ["3"]]
    assert {t.textposition for t in fig.data} == {"middle center"}
    assert [t.name.split(" ")[1] for t in fig.data] == ["model-a", "model-b", "model-c"]
    assert fig.layout.showlegend is True


def test_scatter_range_grows_past_100_for_larger_values():
    wide = pd.DataFrame({"model": ["a", "b"], "pro": [5.0, 120.0], "pas": [-3.0, 50.0]})
    fig = proactive_passive_scatter(wide, "pro", "pas")
    assert fig.layout.xaxis.range[1] > 120 and fig.layout.yaxis.range[0] < -3


def test_overview_counts_13_models_not_avg(initialised_store):
    sources = overview.published_sources(initialised_store)
    models = dict(zip(sources["source"], sources["models"]))
    for table in ("misprompt:T3", "misprompt:T7", "misprompt:T10", "misprompt:T6"):
        assert models[table] == 13, (table, models[table])
    assert models["misprompt:T11"] == 1


def test_shown_caption_counts_rows_on_screen():
    wide = pd.DataFrame({"a": range(14)})
    assert queries.shown_caption(wide, 98) == "14 rows shown (98 F1 values)."
    assert queries.shown_caption(wide.head(1), 1) == "1 row shown."


@pytest.fixture
def with_run(initialised_store):
    insert_run(initialised_store, "synthetic-run", random_verdicts(84, 84, seed=3), model="tiny")
    return initialised_store


def test_tables_tab_follows_the_sidebar_label_and_counts_what_it_shows(with_run):
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/misprompt_results.py")
    at.query_params["view"] = "Tables"
    at.query_params["label"] = "detection"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    main = next(df.value for df in at.dataframe if "row_label" in df.value.columns)
    metric_cols = [
        c for c in main.columns if c in queries.mm.METRICS or c.endswith(queries.mm.RECALL_SUFFIX)
    ]
    assert metric_cols == ["detection"], metric_cols
    caption = next(c.value for c in at.caption if "shown" in c.value)
    assert caption.startswith(f"{len(main):,} row"), (caption, len(main))
    # An explicit Metrics choice (a link with t_met) overrides the sidebar label.
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/misprompt_results.py")
    for k, v in {"view": "Tables", "label": "detection", "t_met": "guidance,average"}.items():
        at.query_params[k] = v
    at.run()
    main = next(df.value for df in at.dataframe if "row_label" in df.value.columns)
    assert {"guidance", "average"} <= set(main.columns) and "detection" not in main.columns


def test_default_run_names_are_short_readable_unique_per_second_and_valid():
    from datetime import datetime

    from core.engine.runner import RUN_NAME_RE, default_run_name

    when = datetime(2026, 12, 1, 13, 15, 2)
    cases = {
        (
            "misprompt",
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            "zero-shot",
            None,
        ): "mp-smollm2-135m-zs-1201-131502",
        ("misprompt", "gpt-4o", "three-shot", "passive"): "mp-gpt-4o-3s-p-1201-131502",
        (
            "errorbench",
            "SmolLM2-135M-Instruct",
            "blind+hinted+anchored+mislead_high+mislead_low",
            None,
        ): "eb-smollm2-135m-all-1201-131502",
        ("errorbench", "m", "blind+anchored", None): "eb-m-ba-1201-131502",
    }
    for args, expected in cases.items():
        assert default_run_name(*args, when=when) == expected
    name = default_run_name(
        "bbm", "org/a-really-long-model-name-with-many-words-v2", "cot_step", when=when
    )
    assert name.startswith("bbm-a-really-long-model") and name.endswith("-cs-1201-131502")
    assert len(name) <= 40 and RUN_NAME_RE.match(name)
    # the old names were up to 95 characters; a long model id still fits
    long = default_run_name("misprompt", "x" * 90, "three-shot", "passive", when=when)
    assert len(long) == 40 and long.endswith("-3s-p-1201-131502")
    later = default_run_name(
        "misprompt", "gpt-4o", "zero-shot", when=datetime(2026, 12, 1, 13, 15, 3)
    )
    assert later != default_run_name("misprompt", "gpt-4o", "zero-shot", when=when)
