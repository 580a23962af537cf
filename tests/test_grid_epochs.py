"""The Responses grid for a run asked K times (`run --epochs K`): a cell folds the K answers
(majority correct, `k/K correct`), the drill-down lists all K; AppTest shows them on the page."""

from __future__ import annotations

import pytest

from core.services import grid
from tests.grid_fixtures import EPOCH_DETECTION, MP_ITEMS, all_runs, epoch_run
from tests.test_grid_page import _grid, _page


@pytest.fixture
def kstore(store):
    return epoch_run(all_runs(store))


def _right(item_id: str) -> list[bool]:
    """Whether each of k3's answers to the item is correct, from the fixture's script."""
    return [d == MP_ITEMS[item_id][0] for d in EPOCH_DETECTION[item_id]]


def test_a_cell_shows_how_many_of_the_k_answers_are_correct_and_the_majority(kstore):
    page = grid.grid_page(kstore, "misprompt", "gs", ("r1", "k3"))
    rows = page.rows.set_index("item_id")
    cells = page.cells.set_index(["item_id", "col"])
    for item_id in EPOCH_DETECTION:
        right = _right(item_id)
        first = "D" if EPOCH_DETECTION[item_id][0] else "∅"
        mark = grid.MARK[sum(right) * 2 > len(right)]
        want = f"{mark} {sum(right)}/{len(right)} correct · {first} · Response to {item_id}"
        assert str(rows.loc[item_id, "k3"]).startswith(want)
        assert "(epoch" not in str(rows.loc[item_id, "k3"])  # the cell shows epoch 1's response
        assert bool(cells.loc[(item_id, "k3"), "correct"]) == (sum(right) * 2 > len(right))
    # one column per run: the K answers are one cell, and count once in the disagreements
    assert page.columns == ["r1", "k3"] and page.total == len(EPOCH_DETECTION)
    # a label is true in a cell when true in any of its answers
    hit = grid.grid_page(kstore, "misprompt", "gs", ("k3",), label="detection")
    assert set(hit.rows["item_id"]) == {i for i, d in EPOCH_DETECTION.items() if any(d)}


def test_runs_of_one_epoch_keep_their_cells(kstore):
    alone = grid.grid_page(kstore, "misprompt", "gs", ("r1", "r2", "r3"))
    assert not any("correct ·" in str(v) for v in alone.rows[["r1", "r2", "r3"]].to_numpy().ravel())


def test_the_drilldown_lists_the_k_answers(kstore):
    detail = grid.grid_detail(kstore, "gs", ("r1", "k3"), "e1")
    assert detail is not None
    k3 = [c for c in detail["cells"] if c["run_id"] == "k3"]
    assert [c["epoch"] for c in k3] == [1, 2, 3] and {c["epochs"] for c in k3} == {3}
    assert [c["response"] for c in k3] == [
        "Response to e1",
        "Response to e1 (epoch 2)",
        "Response to e1 (epoch 3)",
    ]
    assert [c["correct"] for c in k3] == _right("e1")
    r1 = [c for c in detail["cells"] if c["run_id"] == "r1"]
    assert len(r1) == 1 and r1[0]["epochs"] == 1


def test_the_page_shows_the_k_answers_of_a_cell(kstore):
    at = _page(g_bench="misprompt", g_set="gs", g_runs="r1,k3", g_item="e1")
    frame = _grid(at).set_index("item_id")
    right = _right("e1")
    assert frame.loc["e1", "k3"].startswith(
        f"{grid.MARK[sum(right) * 2 > len(right)]} {sum(right)}/{len(right)} correct"
    )
    texts = [t.value for t in at.text]
    for epoch in (1, 2, 3):
        assert any(f"k3 · epoch {epoch}/3 · model-k3" in t for t in texts), epoch
    assert "Response to e1 (epoch 3)" in texts
    assert not any("epoch" in t for t in texts if "r1 ·" in t)


def test_the_export_of_a_run_of_k_epochs_has_one_row_per_answer(kstore):
    from core.services.export import export_frame

    frame = export_frame(kstore, ["k3"])
    assert list(frame["epoch"]) == [1, 2, 3] * len(EPOCH_DETECTION)
    for item_id in EPOCH_DETECTION:
        assert list(frame[frame["item_id"] == item_id]["correct"]) == _right(item_id)
    assert "epoch" not in export_frame(kstore, ["r1"]).columns  # a run asked once: as before
