"""AppTest: the Compare runs page (runs from the URL, table with its download, flipped items
linked to the Responses grid, refusals, empty database)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT
from tests.grid_fixtures import LETTER, MP_ITEMS, all_runs

APP = str(ROOT / "app.py")
PAGE = "pages/compare.py"


def _page(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(PAGE)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _frame(at: AppTest, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_empty_database_says_how_to_get_runs(store):
    at = _page()
    assert any("two runs of one benchmark" in i.value for i in at.info)


def test_table_and_flipped_items_of_the_runs_in_the_url(store):
    all_runs(store)
    at = _page(baseline="r1", candidate="r2")
    chosen = {s.label: s.value for s in at.selectbox}
    assert (chosen["Baseline"], chosen["Candidate"]) == ("r1", "r2")  # read from the URL
    at = _page(baseline="r1", candidate="r3")
    assert {s.label: s.value for s in at.selectbox}["Candidate"] == "r3"
    at = _page(baseline="r1", candidate="r2")
    result = _frame(at, "p_holm")
    detection = result[(result["metric"] == "detection") & (result["category"] == "all")].iloc[0]
    # by hand from the fixture's patterns: detection true in r1 only / in r2 only
    b = sum(1 for *_, (p1, p2, _p3) in MP_ITEMS.values() if "D" in p1 and "D" not in p2)
    c = sum(1 for *_, (p1, p2, _p3) in MP_ITEMS.values() if "D" not in p1 and "D" in p2)
    assert (detection["n"], detection["b"], detection["c"]) == (len(MP_ITEMS), b, c)
    assert any(b.label == "Download CSV" for b in at.get("download_button"))

    flipped = _frame(at, "responses")
    expected = {
        (item, LETTER[letter])
        for item, (_, _, (p1, p2, _p3)) in MP_ITEMS.items()
        for letter in p1 ^ p2
    }
    got = {(i, m) for i, m in zip(flipped["item_id"], flipped["metric"]) if m in LETTER.values()}
    assert got == expected
    url = flipped["responses"].iloc[0]
    query = parse_qs(urlparse(url).query)
    assert urlparse(url).path.endswith("grid")
    assert query["g_runs"] == ["r1,r2"] and query["g_bench"] == ["misprompt"]
    assert query["g_item"] == [flipped["item_id"].iloc[0]] and query["g_set"] == ["gs"]


def test_candidate_list_holds_only_the_baselines_benchmark(store):
    all_runs(store)
    at = _page(baseline="r1", candidate="r2")
    candidates = next(s for s in at.selectbox if s.label == "Candidate").options
    assert candidates and all(o.startswith(("r2", "r3")) for o in candidates)
