"""`import bbm --dyck-sample N --seed S`: a Dyck-languages subsample at the paper's 15/85
correct/incorrect-answer proportions (Table 2: 592 = 88 + 504). Counts are checked against a
plain reading of the released file here (json + exact match), not against core code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.benchmarks.bbm import items as bi
from core.cli import main as cli

SHARED_BBM = Path("/work/shared/data/bigbench_mistake")
DYCK = SHARED_BBM / "dyck_languages.jsonl"


def _released() -> list[dict]:
    return [json.loads(line) for line in DYCK.read_text().splitlines() if line.strip()]


def _correct(rec: dict) -> bool:
    return rec["answer"] is not None and rec["answer"].strip() == rec["target"].strip()


@pytest.mark.parametrize(
    "n,expected",
    [(592, (88, 504)), (300, (45, 255)), (20, (3, 17)), (100, (15, 85))],
    ids=["paper-592", "300", "20", "100"],
)
def test_sizes_follow_the_papers_proportions(n: int, expected: tuple[int, int]) -> None:
    assert bi.dyck_sample_sizes(n) == expected


def test_592_draw_has_88_correct_and_all_504_incorrect(store) -> None:
    released = _released()
    assert sum(map(_correct, released)) == 482 and len(released) == 986  # Table 2, full set
    res = bi.import_files(
        store, [DYCK, SHARED_BBM / "word_sorting.jsonl"], name="s", dyck_sample=592, seed=7
    )
    rows = store.rows(
        "SELECT item_id, payload FROM items WHERE item_set = 's' "
        "AND primary_category = 'dyck_languages'"
    )
    payloads = [json.loads(p) for _, p in rows]
    assert len(rows) == 592
    assert sum(p["answer_correct"] for p in payloads) == 88
    # every incorrect-answer trace of the release is in (504 of 504), each at most once
    lines = sorted(int(i.split(":")[1]) for i, _ in rows)
    assert len(set(lines)) == 592
    incorrect_lines = {k for k, r in enumerate(released, start=1) if not _correct(r)}
    assert incorrect_lines <= set(lines)
    # each kept trace is the released line it names
    for (item_id, _), p in list(zip(rows, payloads))[:50]:
        rec = released[int(item_id.split(":")[1]) - 1]
        assert p["steps"] == rec["steps"] and p["mistake_index"] == rec["mistake_index"]
    info = res.info["dyck_sample"]
    assert (info["traces"], info["seed"], info["from"]) == (592, 7, 986)
    assert info["with_mistake"] == sum(p["mistake_index"] is not None for p in payloads)
    # the other task is imported whole
    assert (
        store.scalar(
            "SELECT count(*) FROM items WHERE item_set = 's' AND primary_category = 'word_sorting'"
        )
        == 300
    )


def test_seed_decides_the_draw(store) -> None:
    def drawn(seed: int, name: str) -> set[str]:
        bi.import_files(store, [DYCK], name=name, dyck_sample=100, seed=seed)
        return {r[0] for r in store.rows("SELECT item_id FROM items WHERE item_set = ?", [name])}

    a, b, c = drawn(1, "a"), drawn(1, "b"), drawn(2, "c")
    assert a == b and a != c and len(a) == len(c) == 100


def test_cli_says_it_is_not_the_papers_sample(store, capsys) -> None:
    assert cli(["import", "bbm", str(DYCK), "--dyck-sample", "592", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "NOT the paper's exact sample" in out and "88 with a correct final answer" in out
    assert "504 incorrect" in out and "(the paper's sample: 545)" in out
    assert (
        store.scalar(
            "SELECT count(*) FROM items WHERE item_set = 'bbm-dyck_languages-dyck592-seed3'"
        )
        == 592
    )


def test_impossible_or_pointless_samples_import_nothing(store, capsys) -> None:
    assert cli(["import", "bbm", str(DYCK), "--dyck-sample", "2000"]) == 1
    err = capsys.readouterr().err
    assert "needs" in err and "nothing was imported" in err
    assert (
        cli(["import", "bbm", str(SHARED_BBM / "word_sorting.jsonl"), "--dyck-sample", "592"]) == 1
    )
    assert "none of the imported traces is Dyck" in capsys.readouterr().err
    assert store.scalar("SELECT count(*) FROM items") == 0
