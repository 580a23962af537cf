"""AppTest: the Overview and Mis-prompt results pages render, follow their filters, show runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.store import Store
from tests.conftest import ROOT, copy_of
from tests.misprompt_fixtures import insert_run, random_verdicts

APP = str(ROOT / "app.py")
PAGE = "pages/misprompt_results.py"
VIEWS = ["Categories", "Settings", "Judge vs human", "Tables", "Consistency", "Runs"]


def _page(view: str | None = None, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(PAGE)
    if view:
        at.query_params["view"] = view
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _one_line(spec: dict) -> dict:
    """Titles on one line (charts break long titles at ' — ' for phones)."""
    title = spec["layout"].get("title", {})
    if "text" in title:
        title["text"] = title["text"].replace("<br>", " — ")
    return spec


def _spec(at: AppTest, i: int = 0) -> dict:
    return _one_line(json.loads(at.get("plotly_chart")[i].proto.spec))


def _run_spec(at: AppTest, title_part: str) -> dict:
    """The runs' own heatmap whose title contains title_part."""
    specs = [_one_line(json.loads(c.proto.spec)) for c in at.get("plotly_chart")]
    found = [
        s
        for s in specs
        if s["layout"]["title"]["text"].startswith("Runs in this database")
        and title_part in s["layout"]["title"]["text"]
    ]
    assert found, [s["layout"]["title"]["text"] for s in specs]
    return found[0]


@pytest.fixture(scope="module")
def _with_run_template(tmp_path_factory, _initialised_template) -> Path:
    """The initialised store with two judged runs, written once for this module (~0.4 s of
    CPU); `with_run` gives each test its own copy."""
    path = tmp_path_factory.mktemp("with-run") / "with_run.duckdb"
    store = copy_of(_initialised_template, path)
    frame = random_verdicts(84, 84, seed=3)
    insert_run(store, "synthetic-run", frame, model="tiny", setting="cot")
    insert_run(
        store,
        "weak-run",
        frame,
        model="SmolLM2",
        setting="zero-shot",
        item_set="set-synthetic-run",
        weak=True,
        mode="passive",
    )
    return path


@pytest.fixture
def with_run(db_path, _with_run_template) -> Store:
    return copy_of(_with_run_template, db_path)


def test_overview_renders_on_empty_and_loaded_database(store):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    assert any("No published results" in w.value for w in at.warning)
    import streamlit as st

    from core.services.setup import init

    init(store)
    st.cache_data.clear()  # the app clears its cache after a write (pages.ui.common.clear_cache)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    assert not any("No published results" in w.value for w in at.warning)
    assert len(at.get("page_link")) >= 6


def test_overview_lists_runs_and_weak_model_note(with_run):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    assert any("Weak model" in w.value for w in at.warning)
    frames = [df.value for df in at.dataframe]
    assert any("run_id" in f.columns and "synthetic-run" in set(f["run_id"]) for f in frames)


def test_misprompt_page_without_data_says_what_to_do(store):
    at = _page()
    assert any("python -m core init" in w.value for w in at.warning)


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_renders(with_run, view):
    at = _page(view)
    if view in ("Categories", "Settings", "Judge vs human"):
        assert at.get("plotly_chart"), view
    assert at.caption, "every chart names its source"


def test_label_selector_changes_heatmap_data_and_url(with_run):
    at = _page()
    before = _spec(at, 0)
    assert "Average" in before["layout"]["title"]["text"]
    at.selectbox(key="w_label").set_value("detection").run()
    assert not at.exception
    after = _spec(at, 0)
    assert "Detection" in after["layout"]["title"]["text"]
    assert after["data"][0]["z"] != before["data"][0]["z"]
    assert at.query_params["label"] == ["detection"] or at.query_params["label"] == "detection"
    # runs are never rows of the published heatmap: they have a heatmap of their own, labelled
    # by run id, model, judge, judge template and mode
    assert not any("run" in y for y in after["data"][0]["y"])
    runs = _run_spec(at, "by primary category — F1")
    assert (
        "synthetic-run · tiny (judge test-judge, judge template unknown, proactive)"
        in runs["data"][0]["y"]
    )
    assert any("Tables 7–10" in c.value for c in at.caption)


def test_categories_draw_one_category_level_at_a_time_kept_in_the_url(with_run):
    """Five heatmaps drawn at once (two with a row per run) kept the browser busy before the
    first one showed (issue 20, 5b): the view draws one level; the other is one click away."""

    def titles(at: AppTest) -> list[str]:
        return [_spec(at, i)["layout"]["title"]["text"] for i in range(len(at.get("plotly_chart")))]

    at = _page()
    assert [t.split(" — ")[:2] for t in titles(at)] == [
        ["Published (paper)", "F1 by primary category"],
        ["Runs in this database", "by primary category"],
    ]
    at.radio(key="w_level").set_value("secondary").run()
    assert not at.exception
    assert at.query_params["level"] in ("secondary", ["secondary"])
    assert [t.split(" — ")[:2] for t in titles(at)] == [
        ["Published (paper)", "F1 by secondary category"],
        ["Runs in this database", "by secondary category"],
        ["Published (paper)", "GPT-4o: every label by secondary category"],
    ]
    assert titles(_page(level="secondary")) == titles(at)  # a shared link shows the same


def test_label_from_url_is_applied(with_run):
    at = _page(label="guidance")
    assert "Guidance" in _spec(at, 0)["layout"]["title"]["text"]


def test_runs_can_be_hidden_from_the_published_views(with_run):
    at = _page(runs="weak-run")
    ys = _run_spec(at, "by primary category — F1")["data"][0]["y"]
    assert ys == ["weak-run · SmolLM2 (judge test-judge, judge template unknown, passive)"]
    assert any("Weak model" in w.value for w in at.warning)


def test_runs_view_drilldown_and_compare(with_run):
    at = _page("Runs", run="weak-run", d_kind="control")
    assert any("Weak model" in w.value for w in at.warning)
    assert any(m.label == "Inconsistent verdicts" for m in at.metric)
    items = at.dataframe[1].value if len(at.dataframe) > 1 else None
    frames = [df.value for df in at.dataframe]
    listing = next(f for f in frames if "item_id" in f.columns and "kind" in f.columns)
    assert set(listing["kind"]) == {"control"}
    labels = next(f for f in frames if list(f.columns) == ["label", "value", "rationale"])
    assert labels["rationale"].str.startswith("because").all()
    titles = [_spec(at, i)["layout"]["title"]["text"] for i in range(len(at.get("plotly_chart")))]
    assert any("bootstrap" in t for t in titles)
    assert any("erroneous items" in t for t in titles)
    assert items is not None


def test_tables_view_filters_follow_url(with_run):
    at = _page("Tables", t_src="misprompt:T6", t_set="cot", t_layout="one row per cell (long)")
    frames = [df.value for df in at.dataframe]
    main = next(f for f in frames if "f1" in f.columns)
    assert set(main["source"]) == {"misprompt:T6"} and set(main["setting"]) == {"cot"}


def _count_calls(monkeypatch, module, name: str) -> list[tuple]:
    """Record the calls of module.name (the page and `cached` look it up by name)."""
    import functools

    calls: list[tuple] = []
    original = getattr(module, name)

    @functools.wraps(original)
    def counted(*args, **kwargs):
        calls.append(args[1:])
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("view", ["Consistency", "Runs"])
def test_views_without_run_cells_never_bootstrap_them(with_run, monkeypatch, view):
    """The shown runs' intervals (a bootstrap over every shown run: seconds at 40 runs) are
    computed by the views that draw them only (issue 20, 5b: every view computed them)."""
    from core.benchmarks.misprompt import queries

    calls = _count_calls(monkeypatch, queries, "run_cells")
    _page(view)
    assert calls == []
    _page("Categories", runs="synthetic-run")
    assert calls == [(("synthetic-run",),)]


def test_a_rerun_reuses_the_built_figures_until_the_store_changes(with_run, monkeypatch):
    """Building the heatmaps was most of a warm page's script time: a rerun on the same store
    version reuses them (identical charts); a write makes the next rerun build them again."""
    from core.benchmarks.misprompt import charts

    built = _count_calls(monkeypatch, charts, "run_heatmap")
    at = _page()
    first = [c.proto.spec for c in at.get("plotly_chart")]
    assert len(built) == 1  # primary categories (no recall-only run)
    at.run()
    assert not at.exception
    assert len(built) == 1 and [c.proto.spec for c in at.get("plotly_chart")] == first
    insert_run(with_run, "third-run", random_verdicts(30, 30, seed=9), model="m3")
    at.run()
    assert not at.exception
    assert len(built) == 2  # the store's version changed: built again


def test_an_import_cut_by_the_legacy_rerun_still_offers_every_name(monkeypatch):
    """On a fresh server the first session's import of pages.ui.common is cut short by
    leave_legacy_page_mode's st.rerun; a second session importing it at that moment gets the
    half-run module (seen: the bench's first Mis-prompt visit died with 'cannot import name
    database_notice'). Every name must already be defined when that rerun is raised."""
    import types

    import streamlit as st
    from streamlit.runtime.pages_manager import PagesManager

    class Rerun(Exception):
        pass

    def rerun() -> None:
        raise Rerun

    monkeypatch.setattr(PagesManager, "uses_pages_directory", True)
    monkeypatch.setattr(st, "rerun", rerun)
    path = ROOT / "pages" / "ui" / "common.py"
    half = types.ModuleType("pages.ui.common_half")
    half.__file__ = str(path)
    with pytest.raises(Rerun):
        exec(compile(path.read_text(), str(path), "exec"), half.__dict__)
    for name in ("database_notice", "get_store", "cached", "cached_figure", "url_radio"):
        assert callable(getattr(half, name, None)), name


def test_a_rerun_attaches_the_file_once_and_lets_it_go(with_run, monkeypatch):
    """A page's queries share one attachment of the file per rerun (app.py's rerun_session:
    attaching costs more than most of the page's reads), and the file is let go when the
    rerun ends, so another process can write between reruns."""
    from core.store import files
    from pages.ui.common import clear_cache

    _page()  # the app's store handle is made (Store.open attaches on its own)
    uses: list[bool] = []  # per use of the file: whether it had to be attached
    real = files.acquire

    def acquire(path, read_only):
        uses.append(Path(os.path.abspath(path)) not in files.attached_paths())
        return real(path, read_only)

    monkeypatch.setattr(files, "acquire", acquire)
    clear_cache()  # the page's reads run again, not from the cache
    _page()  # a new session, through app.py: every read of the page again
    assert len(uses) > 5 and uses.count(True) == 1, uses
    assert files.attached_paths() == []
