"""AppTest: the Responses page (grid, filters and drill-down from the URL, empty database)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "app.py")
PAGE = "pages/grid.py"


def _page(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(PAGE)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _grid(at: AppTest):
    return next(df.value for df in at.dataframe if "disagreements" in df.value.columns)


@pytest.fixture
def gstore(all_runs_store):
    return all_runs_store


def test_empty_database_says_how_to_get_runs(store):
    at = _page()
    assert any("No Mis-prompt runs yet" in i.value for i in at.info)


def test_grid_with_runs_as_columns_and_filters_from_the_url(gstore):
    at = _page(g_bench="misprompt", g_set="gs")
    frame = _grid(at)
    assert list(frame["item_id"]) == ["c1", "e1", "e2", "e3"]
    assert {"r1", "r2", "r3"} <= set(frame.columns)
    assert any("4 items match" in c.value for c in at.caption)
    at = _page(
        g_bench="misprompt",
        g_set="gs",
        g_dis="runs disagree",
        g_sort="disagreements",
        g_runs="r1,r2,r3",
    )
    assert list(_grid(at)["item_id"]) == ["e3", "c1", "e1"]
    at = _page(g_bench="misprompt", g_set="gs", g_q="CAPITAL", g_label="identification_attempt")
    assert list(_grid(at)["item_id"]) == ["e2"]
    at = _page(g_bench="misprompt", g_set="gs", g_runs="r2")
    assert [c for c in _grid(at).columns if c.startswith("r")] == ["r2"]


def test_drilldown_of_the_item_in_the_url_is_plain_full_text(gstore):
    at = _page(g_bench="misprompt", g_set="gs", g_item="c1")
    texts = [t.value for t in at.text]
    assert "Prompt of c1" in texts
    full = next(t for t in texts if "All good." in t)
    assert full.count("All good.") == 30  # the full response, not the collapsed cell
    assert any(t.startswith("✗ r1 · model-r1 — D") for t in texts)
    rationale_tables = [df.value for df in at.dataframe if "rationale" in df.value.columns]
    assert len(rationale_tables) == 3
    assert not at.markdown or all("All good." not in m.value for m in at.markdown)


def test_next_item_button_moves_the_selection_in_the_url(gstore):
    at = _page(g_bench="misprompt", g_set="gs", g_item="c1")
    at.button(key="g_next").click().run()
    assert at.query_params["g_item"] in ("e1", ["e1"])
    assert any(t.value == "Prompt of e1" for t in at.text)


def test_errorbench_and_bbm_grids(gstore):
    at = _page(g_bench="errorbench", g_set="eb")
    frame = _grid(at)
    assert {"ebr · blind", "ebr · anchored"} <= set(frame.columns)
    at = _page(g_bench="bbm", g_set="bs", g_item="t1")
    assert _grid(at).set_index("item_id").loc["t1", "b1"].startswith("✓ step 2 · ")
    assert any(t.value.startswith("✗ b2") for t in at.text)


def test_paging_from_the_url_and_back_to_page_one_when_a_filter_changes(gstore):
    at = _page(g_bench="misprompt", g_set="gs", g_size="25")
    assert at.number_input(key="w_g_page").value == 1
    at = _page(g_bench="misprompt", g_set="gs", g_page="9")  # past the end: the last page
    assert at.number_input(key="w_g_page").value == 1 and len(_grid(at)) == 4
    at.radio(key="w_g_dis").set_value("runs disagree").run()
    assert not at.exception and len(_grid(at)) == 3
    assert at.query_params["g_page"] in ("1", ["1"])
    assert not at.warning or all("Session State" not in w.value for w in at.warning)


def test_page_number_beyond_any_grid_in_the_url_is_clamped_with_a_message(gstore):
    """g_page=99999999999999999999999 was an INT128 conversion error (a traceback) in DuckDB."""
    at = _page(g_bench="misprompt", g_set="gs", g_page="99999999999999999999999")
    assert not at.error, [e.value for e in at.error]
    assert at.number_input(key="w_g_page").value == 1 and len(_grid(at)) == 4
    assert any(
        "There is no page 99,999,999,999,999,999,999,999" in i.value and "showing page 1" in i.value
        for i in at.info
    )
    assert at.query_params["g_page"] in ("1", ["1"])


def _ticked(at: AppTest) -> list[str]:
    """The item ids of the grid's ticked rows (its selection state)."""
    grid = next(d for d in at.dataframe if "disagreements" in d.value.columns)
    assert grid.key is not None
    rows = list(at.session_state[grid.key]["selection"]["rows"])
    return [grid.value["item_id"].iloc[r] for r in rows]


def test_drilldown_shows_the_runs_side_by_side_as_columns(gstore):
    at = _page(g_bench="misprompt", g_set="gs", g_item="c1")
    headers: dict[str, set[int]] = {}  # run -> index of the column its response is in
    for n, column in enumerate(at.columns):
        for t in column.text:
            for run in ("r1", "r2", "r3"):
                if t.value[2:].startswith(f"{run} · model-{run}"):
                    headers.setdefault(run, set()).add(n)
    assert set(headers) == {"r1", "r2", "r3"}
    assert all(len(cols) == 1 for cols in headers.values())
    assert len({next(iter(cols)) for cols in headers.values()}) == 3  # one column per run
    # each run's six labels as one compact row of letters with ✓ / ✗
    r1 = next(c for c in at.columns if any(t.value.startswith("✗ r1 ·") for t in c.text))
    compact = [t.value for t in r1.text if t.value.startswith("D")]
    assert compact and compact[0].split() == ["D✓", "IA✗", "IC✗", "CA✗", "CC✗", "G✗"]


def test_the_grid_tick_follows_the_item_through_next_previous_and_the_url(gstore):
    at = _page(g_bench="misprompt", g_set="gs", g_item="c1")
    assert _ticked(at) == ["c1"]
    at.button(key="g_next").click().run()  # what j presses
    assert at.query_params["g_item"] in ("e1", ["e1"]) and _ticked(at) == ["e1"]
    at.button(key="g_next").click().run()
    assert _ticked(at) == ["e2"] and any(t.value == "Prompt of e2" for t in at.text)
    at.button(key="g_prev").click().run()  # what k presses
    assert at.query_params["g_item"] in ("e1", ["e1"]) and _ticked(at) == ["e1"]
    at = _page(g_bench="misprompt", g_set="gs")  # no item: nothing ticked
    assert _ticked(at) == []


def test_the_disagreement_column_is_explained(gstore):
    import json

    at = _page(g_bench="misprompt", g_set="gs")
    grid = next(d for d in at.dataframe if "disagreements" in d.value.columns)
    config = json.loads(grid.proto.columns)["disagreements"]
    assert config["label"] == "≠" and "most common verdict" in config["help"]
    assert any(
        c.value.startswith("≠ disagreements:") and "0 = every run agrees" in c.value
        for c in at.caption
    )


def test_the_neighbours_drilldowns_are_read_before_j_or_k_asks(gstore, monkeypatch):
    """Issue 31, point 8: while an item is read, the items j and k go to are fetched into the
    cache in the background, so the key draws its drill-down without waiting for the query."""
    import functools
    import threading

    import streamlit as st

    from core.services import grid

    st.cache_data.clear()
    asked: list[str] = []
    real = grid.grid_detail

    @functools.wraps(real)
    def counting(*args, **kwargs):
        asked.append(args[3])  # (store, item_set, runs, item_id, variants)
        return real(*args, **kwargs)

    monkeypatch.setattr(grid, "grid_detail", counting)
    at = _page(g_bench="misprompt", g_set="gs", g_item="e1")
    for thread in threading.enumerate():
        if thread.name == "ehw-warm":
            thread.join(timeout=120)
    assert sorted(asked) == ["c1", "e1", "e2"]  # the item shown and both neighbours
    at.button(key="g_next").click().run()  # what j presses
    assert any(t.value == "Prompt of e2" for t in at.text)
    assert asked.count("e2") == 1  # the drill-down came from the cache


def test_the_grids_colours_are_computed_once_not_on_every_j_or_k(gstore, monkeypatch):
    """Issue 31, point 8: every j / k redraws the grid (its tick follows the item); the
    correctness colours (pandas' Styler: a map over every cell, then its HTML translation)
    were computed again on each key, ~30 ms of the server's CPU. They are computed once per
    view and store version, and every later draw reuses them."""
    from pandas.io.formats.style import Styler

    computed: list[list[str]] = []
    real = Styler._compute  # type: ignore[attr-defined]

    def counting(self):
        computed.append(list(self.data.columns))
        return real(self)

    from pages.ui.common import clear_cache

    clear_cache()  # another test's view of an equal file is not this one's first draw
    monkeypatch.setattr(Styler, "_compute", counting)
    at = _page(g_bench="misprompt", g_set="gs", g_item="c1")
    for key in ("g_next", "g_next", "g_prev"):  # what j, j, k press
        at.button(key=key).click().run()
        assert not at.exception, [e.value for e in at.exception]
    assert _ticked(at) == ["e1"]
    grid_styles = [cols for cols in computed if "disagreements" in cols]
    assert len(grid_styles) == 1  # the first draw only
    frame = _grid(at)
    assert frame.iloc[0]["item_id"] == "c1"
    at.selectbox(key="w_g_sort").select("disagreements").run()  # another view: its colours
    assert _grid(at)["disagreements"].is_monotonic_decreasing
    assert len([cols for cols in computed if "disagreements" in cols]) == 2


def test_a_rerun_leaves_the_imports_out_of_the_collection_streamlit_runs_after_it(
    gstore, monkeypatch
):
    """Issue 31, point 8: Streamlit collects garbage in full after every script run (fragment
    reruns of j / k included): walking the imported modules' objects cost ~0.1 s of the
    server's CPU per key. A page's run freezes them first (gc.freeze), so that collection walks
    what the reruns made, not pandas, pyarrow or Streamlit."""
    import gc

    import pandas
    import pyarrow
    import streamlit

    from pages.ui import common

    gc.unfreeze()
    monkeypatch.setattr(common, "_MODULES_FROZEN", 0, raising=False)
    at = _page(g_bench="misprompt", g_set="gs", g_item="c1")
    at.button(key="g_next").click().run()
    walked = {id(o) for o in gc.get_objects()}  # what a full collection walks
    assert gc.get_freeze_count() > len(walked)
    for module in (pandas, pyarrow, streamlit):
        assert id(vars(module)) not in walked


def test_freezing_the_imports_leaves_no_garbage_uncollectable(monkeypatch):
    """What freeze_imports freezes is never walked again: garbage in a reference cycle at that
    moment must be collected first, or it would stay in memory for the server's life."""
    import gc
    import weakref

    from pages.ui import common

    class Node:
        other: object = None

    monkeypatch.setattr(common, "_MODULES_FROZEN", 0)
    gc.disable()
    try:
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only a collection frees it
        gone = weakref.ref(a)
        del a, b
        assert common.freeze_imports()
    finally:
        gc.enable()
    gc.collect()
    assert gone() is None
    assert not common.freeze_imports()  # no new imports: nothing to freeze again
