"""M2 parsing, passage grouping/selection, `import m2` (CoNLL-2014 counts), the built-in sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.benchmarks.errorbench.items import group_passages, select_passages
from core.benchmarks.errorbench.m2 import M2Error, essays_from_sgml, parse_m2, read_m2
from core.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
CONLL = ROOT.parent / "shared" / "data" / "conll2014"
COMBINED = CONLL / "official-2014.combined.m2"
SGML = CONLL / "official-2014.0.sgml"
SAMPLE = ROOT / "data" / "samples" / "errorbench_sample.m2"
needs_conll = pytest.mark.skipif(not COMBINED.exists(), reason="CoNLL-2014 data not present")

SMALL = """S A b c .
A 1 2|||Nn|||B|||REQUIRED|||-NONE-|||0
A 0 0|||ArtOrDet|||The|||REQUIRED|||-NONE-|||1

S d e .
A -1 -1|||noop|||-NONE-|||REQUIRED|||-NONE-|||0
A 1 2|||Prep||||||REQUIRED|||-NONE-|||1
"""


def _m2(blocks: list[tuple[str, int]]) -> str:
    """Sentences with k annotator-0 edits each."""
    out = []
    for text, k in blocks:
        out.append(f"S {text}")
        out += [f"A {i} {i + 1}|||Nn|||x|||REQUIRED|||-NONE-|||0" for i in range(k)]
        out.append("")
    return "\n".join(out)


# -- parsing ------------------------------------------------------------------------------------


def test_parse_keeps_all_annotators_noops_and_lines():
    s1, s2 = parse_m2(SMALL)
    assert s1.tokens == ["A", "b", "c", "."] and s1.line == 1
    assert [(e.start, e.end, e.correction, e.annotator, e.line) for e in s1.edits] == [
        (1, 2, "B", 0, 2),
        (0, 0, "The", 1, 3),
    ]
    assert (
        s2.edits[0].is_noop and s2.edits_by(0) == [] and len(s2.edits_by(0, include_noop=True)) == 1
    )
    assert s2.edits_by(1)[0].correction == ""
    assert s2.annotators() == {0, 1}


@pytest.mark.parametrize(
    "text, line, why",
    [
        ("A 1 2|||Nn|||x|||REQUIRED|||-NONE-|||0\n", 1, "does not follow an S line"),
        ("S a b\nA 1 x|||Nn|||x|||REQUIRED|||-NONE-|||0\n", 2, "two integers"),
        ("S a b\nA 1 2|||Nn|||x\n", 2, "6 '|||'-separated fields"),
        ("S a b\nA 2 1|||Nn|||x|||REQUIRED|||-NONE-|||0\n", 2, "bad span"),
        ("S a b\nA 1 5|||Nn|||x|||REQUIRED|||-NONE-|||0\n", 2, "runs past"),
        ("S a b\nA 1 2|||Nn|||x|||REQUIRED|||-NONE-|||zero\n", 2, "annotator id"),
        ("S a b\n\nS c d\nhello\n", 4, "expected a line"),
        ("S a b\n\nA 0 1|||Nn|||x|||REQUIRED|||-NONE-|||0\n", 3, "does not follow an S line"),
    ],
)
def test_malformed_m2_names_line_and_reason(text, line, why):
    with pytest.raises(M2Error) as info:
        parse_m2(text, "f.m2")
    assert f"f.m2, line {line}:" in str(info.value) and why in str(info.value)


# -- grouping and selection ---------------------------------------------------------------------


def test_groups_of_four_drop_short_tail_and_count_annotator_zero():
    sents = parse_m2(_m2([("a b c", 1)] * 9) + "\nS z\nA 0 1|||Nn|||x|||REQUIRED|||-NONE-|||1\n")
    passages = group_passages(sents)
    assert [len(p.sentences) for p in passages] == [4, 4]  # 10 sentences → 2 groups
    assert [p.n for p in passages] == [4, 4]
    assert passages[1].sentences[0].index == 4


def test_essay_grouping_never_crosses_an_essay():
    sents = parse_m2(_m2([("a b", 1)] * 10))
    essays = ["1"] * 5 + ["2"] * 5
    passages = group_passages(sents, essays=essays)
    assert [(p.essay, [s.index for s in p.sentences]) for p in passages] == [
        ("1", [0, 1, 2, 3]),
        ("2", [5, 6, 7, 8]),
    ]
    assert all(p.grouping == "essay" for p in passages)


def test_selection_is_seeded_per_count_and_in_file_order():
    # 12 groups: N cycles 3,4,5 → 4 eligible for each
    blocks = []
    for g in range(12):
        n = 3 + g % 3
        blocks += [("a b c d e f g", n)] + [("a", 0)] * 3
    passages = group_passages(parse_m2(_m2(blocks)))
    sel = select_passages(passages, per_count=2, seed=5)
    assert sel.eligible_per_count == {3: 4, 4: 4, 5: 4, 6: 0, 7: 0}
    assert sel.selected_per_count == {3: 2, 4: 2, 5: 2, 6: 0, 7: 0}
    groups = [p.group for p in sel.passages]
    assert groups == sorted(groups)
    again = select_passages(passages, per_count=2, seed=5)
    assert [p.passage_id for p in again.passages] == [p.passage_id for p in sel.passages]
    # changing the range leaves an unaffected bucket's sample as it was
    narrower = select_passages(passages, per_count=2, seed=5, min_errors=4, max_errors=4)
    assert [p.passage_id for p in narrower.passages] == [
        p.passage_id for p in sel.passages if p.n == 4
    ]


@needs_conll
def test_conll_file_order_reproduces_the_papers_143_passages():
    passages = group_passages(read_m2(COMBINED))
    sel = select_passages(passages, per_count=30, min_errors=3, max_errors=7, seed=0)
    assert sel.selected_per_count == {3: 30, 4: 30, 5: 30, 6: 30, 7: 23}
    assert len(sel.passages) == 143
    assert sel.eligible_per_count[7] == 23


@needs_conll
def test_conll_sgml_essays_align_with_every_sentence():
    sents = read_m2(COMBINED)
    essays = essays_from_sgml(sents, SGML.read_text(encoding="utf-8"), str(SGML))
    assert len(essays) == len(sents) == 1312
    assert len(set(essays)) == 50
    assert essays[0] == "1" and sents[0].text == "Keeping the Secret of Genetic Testing"
    # essays are contiguous runs
    changes = sum(a != b for a, b in zip(essays, essays[1:]))
    assert changes == 49


def test_sgml_mismatch_is_reported():
    sents = parse_m2("S Hello world .\n")
    with pytest.raises(M2Error, match="does not match M2 sentence 1"):
        essays_from_sgml(sents, '<DOC nid="1"><TEXT><P>Goodbye.</P></TEXT></DOC>', "x.sgml")


# -- import m2 via the CLI ----------------------------------------------------------------------


@needs_conll
def test_import_m2_json_summary_and_items(db_path, capsys, store):
    rc = cli_main(["import", "m2", str(COMBINED), "--name", "conll", "--format", "json"])
    assert rc == 0
    info = json.loads(capsys.readouterr().out)
    assert info["eligible_per_count"] == {"3": 30, "4": 34, "5": 31, "6": 32, "7": 23}
    assert info["selected_per_count"] == {"3": 30, "4": 30, "5": 30, "6": 30, "7": 23}
    assert info["grouping"] == "file" and info["passages"] == 143
    rows = store.df(
        "SELECT item_id, gold, primary_category, prompt, payload FROM items "
        "WHERE item_set = 'conll' ORDER BY item_id"
    )
    # the error count N is the gold answer; the shared category column holds no N (issue 30)
    assert len(rows) == 143 and rows["gold"].value_counts()["7"] == 23
    assert rows["primary_category"].isna().all()
    payload = json.loads(rows["payload"].iloc[0])
    assert payload["grouping"] == "file" and len(payload["sentences"]) == 4
    assert len(payload["gold"]["0"]) == payload["n"] == int(rows["gold"].iloc[0])
    assert set(payload["gold"]) == {"0", "1"}
    assert rows["prompt"].iloc[0] == " ".join(" ".join(s["tokens"]) for s in payload["sentences"])
    set_info = json.loads(store.scalar("SELECT info FROM item_sets WHERE name = 'conll'"))
    assert set_info["grouping"] == "file"


@needs_conll
def test_import_m2_with_sgml_groups_within_essays(db_path, capsys, store):
    rc = cli_main(["import", "m2", str(COMBINED), "--sgml", str(SGML), "--name", "essays"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "within essays" in out
    payloads = [
        json.loads(p)
        for p in store.df("SELECT payload FROM items WHERE item_set = 'essays'")["payload"]
    ]
    assert payloads and all(p["grouping"] == "essay" and p["essay"] for p in payloads)


def test_malformed_import_writes_nothing(db_path, tmp_path, capsys, store):
    good = tmp_path / "good.m2"
    good.write_text(SAMPLE.read_text())
    assert cli_main(["import", "m2", str(good), "--name", "s"]) == 0
    before = store.scalar("SELECT count(*) FROM items WHERE item_set = 's'")
    bad = tmp_path / "bad.m2"
    lines = SAMPLE.read_text().splitlines()
    lines[40] = "A 1 2|||Nn|||oops"
    bad.write_text("\n".join(lines))
    capsys.readouterr()
    assert cli_main(["import", "m2", str(bad), "--name", "s"]) == 1
    err = capsys.readouterr().err
    assert "line 41" in err and "nothing was imported" in err
    assert store.scalar("SELECT count(*) FROM items WHERE item_set = 's'") == before


def test_builtin_sample_has_eligible_passages_for_every_count(initialised_store):
    rows = initialised_store.df("SELECT gold FROM items WHERE item_set = 'errorbench-sample'")
    counts = rows["gold"].astype(int).value_counts().to_dict()
    assert len(rows) >= 12
    assert set(counts) == {3, 4, 5, 6, 7}
    # the sample also has groups outside 3..7, which were left out
    all_groups = group_passages(read_m2(SAMPLE))
    assert any(p.n < 3 or p.n > 7 for p in all_groups)
    # init twice leaves the same rows
    from core.services.setup import init

    before = initialised_store.df(
        "SELECT * FROM items WHERE item_set = 'errorbench-sample' ORDER BY item_id"
    )
    init(initialised_store)
    after = initialised_store.df(
        "SELECT * FROM items WHERE item_set = 'errorbench-sample' ORDER BY item_id"
    )
    assert before.equals(after)
