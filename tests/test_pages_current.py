"""AppTest: pages that stay current and explain themselves (issue 31, points 4-7, 10, 15):
Overview's links and intro from the registry, the navigation never folded, empty cells shown
empty, rounded tables, marks on published values that disagree with their rows."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core import registry
from tests.conftest import ROOT

APP = str(ROOT / "app.py")


def _page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def example():
    from tests import example_benchmark

    bench = example_benchmark.install()
    yield bench
    registry.BENCHMARKS.pop(bench.name, None)


def test_overview_links_every_results_page_and_compare(initialised_store):
    at = _page("pages/overview.py")
    links = {link.proto.label for link in at.get("page_link")}
    for bench in registry.BENCHMARKS.values():
        assert bench.results_page.title in links, (bench.name, links)
    assert {"Compare two runs", "Proactive vs passive", "Start or watch a run"} <= links
    intro = at.caption[0].value
    assert "three" not in intro
    for bench in registry.BENCHMARKS.values():
        assert bench.label in intro


def test_a_new_benchmark_appears_in_the_overview_and_runs_intros(initialised_store, example):
    at = _page("pages/overview.py")
    assert "Example" in at.caption[0].value
    at = _page("pages/runs.py")
    runs_intro = at.caption[0].value
    assert "three" not in runs_intro and "Example" in runs_intro and "PCBench" in runs_intro


def test_the_terminal_command_names_a_store_other_than_the_default():
    from core.services.terminal import terminal_command
    from core.store import DEFAULT_DB

    args = ["run", "bbm", "--items", "bbm-sample"]
    assert terminal_command(args, str(DEFAULT_DB), is_lake=False) == (
        "python -m core run bbm --items bbm-sample"
    )
    assert terminal_command(args, "/tmp/my file.duckdb", is_lake=False).endswith(
        "--db '/tmp/my file.duckdb'"
    )
    lake = "ducklake:postgres:dbname=evals host=db user=ehw"
    assert terminal_command(args, lake, is_lake=True).endswith(f"--db '{lake}'")


def test_the_runs_form_command_names_a_non_default_file(initialised_store, db_path):
    at = _page("pages/runs.py")
    assert f"--db {db_path}" in at.code[-1].value


# -- point 4: a page that follows the current judging unless one is chosen ------------------


def _judged_again(store, run: str, judging: str, judge: str) -> None:
    """A finished re-judging of `run` (as `rescore` leaves it), newer than the ones before."""
    store.execute(
        "INSERT INTO judgings (run_id, judging, kind, judge_model, template_id, status, "
        "created_at) VALUES (?, ?, 'judge', ?, 'misprompt/judge.v2', 'done', now() + "
        "to_seconds((SELECT count(*) FROM judgings)::BIGINT + 1))",
        [run, judging, judge],
    )
    store.execute(
        "INSERT INTO results (run_id, judging, item_id, variant, status, answer, correct, "
        "labels) SELECT run_id, ?, item_id, variant, status, answer, correct, labels "
        "FROM results WHERE run_id = ? AND judging = 'default'",
        [judging, run],
    )


@pytest.fixture
def rejudged(store):
    from tests.misprompt_fixtures import insert_run, random_verdicts

    insert_run(store, "mp1", random_verdicts(12, 4, seed=3), judge_model="judge-one")
    _judged_again(store, "mp1", "misj2", "judge-two")
    return store


def _judging_box(at: AppTest):
    return next(s for s in at.selectbox if s.label == "Judging")


def test_the_default_judging_stays_out_of_the_url_and_follows_a_newer_one(rejudged):
    at = _page("pages/misprompt_results.py", view="Runs", run="mp1")
    assert _judging_box(at).value == "misj2"
    assert "judging" not in at.query_params  # not chosen: not written
    _judged_again(rejudged, "mp1", "misj3", "judge-three")
    at = _page("pages/misprompt_results.py", view="Runs", run="mp1")  # a reload
    assert _judging_box(at).value == "misj3" and "judging" not in at.query_params


def test_an_explicit_older_judging_stays_and_says_a_newer_one_exists(rejudged):
    at = _page("pages/misprompt_results.py", view="Runs", run="mp1")
    _judging_box(at).set_value("default").run()
    assert at.query_params["judging"] in (["default"], "default")  # a choice is written
    _judged_again(rejudged, "mp1", "misj3", "judge-three")
    at = _page("pages/misprompt_results.py", view="Runs", run="mp1", judging="default")
    assert _judging_box(at).value == "default"
    notes = " ".join(i.value for i in at.info)
    assert "misj3" in notes and "newer" in notes, notes


def test_the_runs_table_names_the_current_judge_and_shows_no_emoji(rejudged):
    at = _page("pages/runs.py")
    frame = at.dataframe[0].value
    row = frame[frame["run_id"] == "mp1"].iloc[0]
    assert row["judge_model"] == "judge-two"
    drawn = set("✓✗●■‖…–")  # glyphs of the text fonts (the grid's cells use ✓ ✗ – too)
    for text in [*frame["status"], *frame["model"], at.title[0].value]:
        # Debian's Chromium has no emoji font: ✅ ⚠️ ⏹️ ▶️ drew as boxes
        assert all(ord(ch) < 0x2190 or ch in drawn for ch in str(text)), text


# -- point 6: numbers people read -------------------------------------------------------------


def test_pcbench_cells_show_the_wilson_interval_they_promise():
    import pandas as pd
    from statsmodels.stats.proportion import proportion_confint

    from core.benchmarks.pcbench.charts import rate_heatmap

    rates = pd.DataFrame({"all": [11.0, 57.4]}, index=["a", "b"])
    counts = pd.DataFrame({"all": [1200, 5]}, index=["a", "b"])
    fig = rate_heatmap(rates, counts, "t")
    text = fig.data[1].text
    low, high = proportion_confint(132, 1200, method="wilson")
    assert text[0][0] == f"11% [{100 * low:.0f}–{100 * high:.0f}] (n=1200)"
    assert text[1][0].startswith("57% · n=5 <")  # too few for an interval worth reading


def test_proactive_passive_tables_show_no_none(initialised_store):
    at = _page("pages/proactive_passive.py")
    wide = at.dataframe[0].value
    assert len(wide) and not wide.isna().to_numpy().any()
    published = [c for c in wide.columns if c.endswith("[published]")]
    assert any((wide[c] == "–").any() for c in published)  # a blank: the source has none


def test_the_papers_avg_cell_that_its_rows_do_not_give_is_marked(initialised_store):
    """Table 10's Avg 'average' for Logical Errors is 52.16; its 13 model rows average 44.44."""
    import json

    at = _page("pages/misprompt_results.py", view="Categories", label="average")
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    marks = {
        (a["x"], a["y"]): a["text"]
        for a in spec["layout"].get("annotations", [])
        if "≠" in a["text"]
    }
    assert marks.get(("Logical Errors", "Avg")) == "≠ 44.4", marks
    caption = " ".join(c.value for c in at.caption)
    assert "Logical Errors: printed 52.2, mean of the rows 44.4" in caption
