"""core.services.grid: cells, correctness, disagreements, filters, sort and paging, against hand cases and
an independent pandas computation."""

from __future__ import annotations

import pandas as pd
import pytest

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import grid
from tests.grid_fixtures import MP_ITEMS
from tests.misprompt_fixtures import insert_run, random_verdicts

RUNS = ("r1", "r2", "r3")


@pytest.fixture
def gstore(all_runs_store):
    return all_runs_store


def page(store, **kw):
    return grid.grid_page(store, "misprompt", "gs", RUNS, **kw)


def test_rows_columns_cells_and_correctness(gstore):
    p = page(gstore)
    assert p.columns == ["r1", "r2", "r3"] and p.total == 4 and p.pages == 1
    rows = p.rows.set_index("item_id")
    assert list(rows.index) == ["c1", "e1", "e2", "e3"]
    # e1: r1 says D (correct), r2 nothing (wrong: missed), r3 D
    assert rows.loc["e1", "r1"].startswith("✓ D · Response to e1")
    assert rows.loc["e1", "r2"].startswith("✗ ∅ ·")
    # control c1: r1 flags an error that is not there (wrong), r2 says nothing (right)
    assert rows.loc["c1", "r1"].startswith("✗ D ·") and rows.loc["c1", "r2"].startswith("✓ ∅ ·")
    assert rows.loc["e2", "r3"].startswith("✓ D IA ·")
    assert rows.loc["c1", "category"] == "control"
    assert rows.loc["e1", "category"] == "Language Errors / Spelling Errors"


def test_disagreements_count_cells_off_the_most_common_verdict(gstore):
    rows = page(gstore).rows.set_index("item_id")["disagreements"].to_dict()
    # c1: D, ∅, ∅ -> 1; e1: D, ∅, D -> 1; e2: all D IA -> 0; e3: G, D G, D IA -> 2
    assert rows == {"c1": 1, "e1": 1, "e2": 0, "e3": 2}


def test_disagreements_match_an_independent_pandas_count(store):
    frame = random_verdicts(30, 10, seed=5)
    for k in range(4):
        shuffled = random_verdicts(30, 10, seed=10 + k)
        insert_run(store, f"x{k}", shuffled, item_set="rand")
    got = grid.grid_page(store, "misprompt", "rand", ("x0", "x1", "x2", "x3"), page_size=100)
    v = store.df("SELECT * FROM misprompt_verdicts WHERE run_id LIKE 'x%'")
    v["pattern"] = v[list(JUDGE_LABELS)].astype(int).astype(str).agg("".join, axis=1)
    expected = {}
    for item_id, g in v.groupby("item_id"):
        expected[item_id] = len(g) - g["pattern"].value_counts().max()
    assert got.rows.set_index("item_id")["disagreements"].to_dict() == expected
    assert len(frame) == got.total


def test_sort_by_disagreements_then_item(gstore):
    p = page(gstore, sort="disagreements")
    assert list(p.rows["item_id"]) == ["e3", "c1", "e1", "e2"]
    p = page(gstore, sort="category")
    assert list(p.rows["item_id"])[-1] == "c1"  # no category last


def test_filters(gstore):
    assert list(page(gstore, disagree_only=True).rows["item_id"]) == ["c1", "e1", "e3"]
    assert list(page(gstore, label="identification_attempt").rows["item_id"]) == ["e2", "e3"]
    assert list(page(gstore, category="Location").rows["item_id"]) == ["e2", "e3"]
    assert list(page(gstore, category="Language Errors").rows["item_id"]) == ["e1"]
    # free text, case-insensitive, in responses and in prompts; % and _ are literal
    assert list(page(gstore, text="the CAPITAL is paris").rows["item_id"]) == ["e2"]
    assert list(page(gstore, text="prompt of C1").rows["item_id"]) == ["c1"]
    assert page(gstore, text="100%_").total == 0
    assert list(
        page(gstore, category="Location", label="guidance", disagree_only=True).rows["item_id"]
    ) == ["e3"]


def test_paging_limit_offset_and_clamp(gstore):
    p = page(gstore, page_size=3, page=2)
    assert p.total == 4 and p.pages == 2 and list(p.rows["item_id"]) == ["e3"]
    p = page(gstore, page_size=3, page=9)  # past the end: the last page
    assert p.page == 2 and list(p.rows["item_id"]) == ["e3"]
    assert set(p.cells["item_id"]) == {"e3"}  # only the page's cells were fetched


def test_repetitive_response_is_collapsed_in_its_cell_and_expandable(gstore):
    cell = page(gstore).rows.set_index("item_id").loc["c1", "r3"]
    assert "All good. [repeated line ×30]" in cell and "End." in cell
    assert cell.count("All good.") == 1
    full = page(gstore, expanded=True).rows.set_index("item_id").loc["c1", "r3"]
    assert full.count("All good.") == 30 and full.endswith("End.")


def test_errorbench_columns_per_condition_and_counts(gstore):
    p = grid.grid_page(gstore, "errorbench", "eb", ("ebr",))
    assert p.columns == ["ebr · anchored", "ebr · blind"]
    rows = p.rows.set_index("item_id")
    # the cell shows the record's answer (the reported count); the mark says whether it is N
    assert str(rows.loc["p1", "ebr · blind"]).startswith("✓ n̂ 3 · ")
    assert str(rows.loc["p1", "ebr · anchored"]).startswith("✗ n̂ 5 · ")
    assert str(rows.loc["p2", "ebr · anchored"]).startswith("– response failed")
    assert rows["disagreements"].to_dict() == {"p1": 1, "p2": 0}  # failed cells do not count
    only = grid.grid_page(gstore, "errorbench", "eb", ("ebr",), variants=("blind",))
    assert only.columns == ["ebr"]


def test_bbm_predicted_vs_gold(gstore):
    rows = grid.grid_page(gstore, "bbm", "bs", ("b1", "b2")).rows.set_index("item_id")
    # the cell shows the record's answer (the step named); the mark says whether it is gold's
    assert str(rows.loc["t1", "b1"]).startswith("✓ step 2 · ")
    assert str(rows.loc["t1", "b2"]).startswith("✗ none · ")
    assert rows.loc["t1", "disagreements"] == 1


def test_detail_has_full_texts_and_verdicts(gstore):
    d = grid.grid_detail(gstore, "gs", RUNS, "c1")
    assert d is not None
    assert d["prompt"] == "Prompt of c1" and len(d["cells"]) == 3
    r3 = d["cells"][2]
    assert r3["col"] == "r3" and r3["response"].count("All good.") == 30  # full, not collapsed
    assert r3["metadata"]["rationales"]["detection"] == "because detection"
    assert r3["explanation"].splitlines()[0] == "D: because detection"
    assert d["cells"][0]["labels"]["detection"] is True and d["cells"][0]["correct"] is False
    assert d["cells"][0]["answer"] == "D"
    assert grid.grid_detail(gstore, "gs", RUNS, "nope") is None


def test_choices(gstore):
    assert list(grid.grid_item_sets(gstore, "misprompt")["item_set"]) == ["gs"]
    assert set(grid.grid_runs(gstore, "misprompt", "gs")["run_id"]) == set(RUNS)
    assert "Location" in grid.grid_categories(gstore, "gs")
    assert grid.grid_variants(gstore, ("ebr",)) == ["anchored", "blind"]
    with pytest.raises(ValueError, match="sort must be"):
        page(gstore, sort="nope")


def test_collapse_hand_cases():
    assert grid.collapse("a\nb") == "a ⏎ b"
    assert grid.collapse("x\n" * 2) == "x ⏎ x"  # two are not a run
    assert grid.collapse("loop\n" * 30) == "loop [repeated line ×30]"
    assert grid.collapse("I am sure. " * 12) == "I am sure. [repeated ×12]"
    long = "".join(f"w{i} " for i in range(200))
    out = grid.collapse(long, limit=50)
    assert len(out) <= 51 and out.endswith("…")
    assert grid.cell_text("D", None, "r") == "– D · r"
    assert grid.cell_text("D", True, "abc", n_chars=9000).endswith("[9,000 chars]")


def test_every_item_of_mp_items_is_a_row(gstore):
    assert set(page(gstore).rows["item_id"]) == set(MP_ITEMS)
    assert isinstance(page(gstore).rows, pd.DataFrame)


def test_run_labels_name_the_judging_the_cells_show(gstore):
    """After a re-judging, a run's column is labelled by the judging its cells read (its current
    one: judge, template and name), as on every other page — not by the run's own judge."""
    before = dict(zip(*grid.grid_runs(gstore, "misprompt", "gs")[["run_id", "label"]].T.values))
    assert before["r1"] == "r1 · model-r1 (judge test-judge, judge template unknown)"
    gstore.execute(
        "INSERT INTO judgings (run_id, judging, kind, judge_model, template_id, status) "
        "VALUES ('r1', 'second', 'judge', 'judge-two', 'misprompt/judge.v2', 'done')"
    )
    gstore.execute(
        "INSERT INTO results (run_id, judging, item_id, variant, status, answer, correct) "
        "SELECT run_id, 'second', item_id, variant, 'ok', 'D', true FROM results "
        "WHERE run_id = 'r1' AND judging = 'default'"
    )
    runs = grid.grid_runs(gstore, "misprompt", "gs").set_index("run_id")
    assert runs.loc["r1", "label"] == (
        "r1 · model-r1 (judge judge-two, misprompt/judge.v2, judging second)"
    )
    assert runs.loc["r2", "label"] == before["r2"]
    cells = page(gstore).cells
    assert set(cells[cells["col"] == "r1"]["answer"]) == {"D"}  # the cells read that judging
