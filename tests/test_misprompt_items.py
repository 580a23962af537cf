"""Mis-prompt importer: formats, taxonomy checks with line numbers, all-or-nothing writes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from core.benchmarks.misprompt import items as mi
from core.benchmarks.misprompt.taxonomy import PRIMARY_OF, SECONDARY
from core.store import Store
from tests.core_cli import run_core

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "misprompt_sample.csv"
SHARED_SAMPLE = ROOT.parent / "shared" / "data" / "misprompt" / "misprompt_sample.csv"
HEADER = mi.COLUMNS


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows)
    return out.getvalue()


GOOD = [
    [
        "a1",
        "train",
        "Wher is Paris?",
        "error",
        "Language Errors",
        "Spelling Errors",
        "'Wher' is misspelled",
        "It should be 'Where'.",
    ],
    [
        "a2",
        "dev",
        "Why did Edison write Hamlet?",
        "error",
        "Factual Errors",
        "Entity Error",
        "Shakespeare wrote Hamlet",
        "Edison did not write Hamlet; Shakespeare did.",
    ],
    ["a3", "eval", "What is 2+2?", "no_error", "", "", "", "4"],
]


def test_shipped_sample_covers_every_category_with_controls(store: Store) -> None:
    n = mi.import_builtin(store, SAMPLE, "misprompt-sample")
    items = mi.load_items(store, "misprompt-sample")
    assert n == len(items)
    errors = items[items["is_error"]]
    counts = errors["secondary_category"].value_counts()
    assert set(counts.index) == set(SECONDARY)
    assert counts.min() >= 3
    assert (~items["is_error"]).sum() == len(errors)  # 1:1 controls
    # every erroneous item has an explanation and a ground truth; primaries match the taxonomy
    assert errors["explanation"].str.len().min() > 20
    assert errors["gold"].str.len().min() > 40
    assert all(
        PRIMARY_OF[s] == p for s, p in zip(errors["secondary_category"], errors["primary_category"])
    )
    controls = items[~items["is_error"]]
    assert controls["primary_category"].isna().all() and controls["gold"].notna().all()
    # ids S0001…, written by us: no question copied from the third-party excerpt
    assert items["item_id"].str.match(r"^S\d{4}$").all()
    if SHARED_SAMPLE.exists():
        with open(SHARED_SAMPLE, newline="", encoding="utf-8") as handle:
            theirs = {" ".join(r["question"].split()).lower() for r in csv.DictReader(handle)}
        ours = {" ".join(q.split()).lower() for q in items["prompt"]}
        assert not ours & theirs


def test_good_csv_with_short_and_long_category_names(store: Store, tmp_path: Path) -> None:
    rows = GOOD + [
        [
            "a4",
            "train",
            "Why did it stop?",
            "error",
            "Incomplete Information",
            "TextContSubjSpec",
            "no subject",
            "Please say what stopped.",
        ],
        [
            "a5",
            "train",
            "When did it open?",
            "error",
            "incomplete information",
            "Textual Context and Subject Specification",
            "no subject",
            "Which place?",
        ],
    ]
    path = tmp_path / "items.csv"
    path.write_text(_csv(rows), encoding="utf-8")
    assert mi.import_file(store, path, "set1") == 5
    got = store.df("SELECT * FROM items WHERE item_set='set1' ORDER BY item_id")
    assert list(got["is_error"]) == [True, True, False, True, True]
    assert list(got["secondary_category"].iloc[3:]) == ["TextContSubjSpec"] * 2
    assert list(got["primary_category"].iloc[3:]) == ["Incomplete Information"] * 2
    assert (
        got.loc[0, "prompt"] == "Wher is Paris?" and got.loc[0, "gold"] == "It should be 'Where'."
    )
    assert json.loads(str(got.loc[0, "payload"]))["question"] == "Wher is Paris?"
    info = json.loads(store.scalar("SELECT info FROM item_sets WHERE name='set1'"))
    assert info["n_error"] == 4 and info["n_control"] == 1


def test_bad_category_reports_line_and_writes_nothing(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "ok.csv"
    path.write_text(_csv(GOOD), encoding="utf-8")
    mi.import_file(store, path, "keep")
    bad = GOOD + [
        ["b1", "train", "q?", "error", "Factual Errors", "Spelling Errors", "x", "y"],
        ["b2", "train", "q?", "error", "Factual Errors", "Made-up Error", "x", "y"],
        ["b3", "train", "q?", "maybe", "", "", "", "y"],
    ]
    path2 = tmp_path / "bad.csv"
    path2.write_text(_csv(bad), encoding="utf-8")
    with pytest.raises(mi.ItemImportError) as info:
        mi.import_file(store, path2, "keep")  # same name: the old set must survive
    errors = info.value.errors
    assert errors[0].startswith(f"{path2}:5: ") and "belongs to 'Language Errors'" in errors[0]
    assert errors[1].startswith(f"{path2}:6: ") and "Made-up Error" in errors[1]
    assert errors[2].startswith(f"{path2}:7: ") and "'maybe'" in errors[2]
    assert len(errors) == 3
    # nothing written: the previous set of that name is untouched, no other set appeared
    assert store.scalar("SELECT count(*) FROM items WHERE item_set='keep'") == 3
    assert store.scalar("SELECT count(*) FROM item_sets") == 1


def test_multiline_cells_keep_true_line_numbers(store: Store, tmp_path: Path) -> None:
    rows = [
        [
            "m1",
            "train",
            "Line one\nline two?",
            "error",
            "Language Errors",
            "Grammatical Errors",
            "x",
            "para one\n\npara three",
        ],  # lines 2-5
        ["m2", "train", "fine?", "no_error", "", "", "", "yes"],  # line 6
        ["m3", "train", "three\nlines\nhere", "error", "Logical Errors", "Nonsense", "x", "y"],
    ]  # line 7-9: reported as 7
    path = tmp_path / "multi.csv"
    path.write_text(_csv(rows), encoding="utf-8")
    with pytest.raises(mi.ItemImportError) as info:
        mi.import_file(store, path, "multi")
    assert info.value.errors == [
        f"{path}:7: unknown secondary_category 'Nonsense' (see the "
        "taxonomy: e.g. 'Spelling Errors', 'TextContSubjSpec')"
    ]
    rows[2][5] = "Fallacy of Relevance"
    path.write_text(_csv(rows), encoding="utf-8")
    assert mi.import_file(store, path, "multi") == 3
    gold = store.scalar("SELECT gold FROM items WHERE item_set='multi' AND item_id='m1'")
    assert gold == "para one\n\npara three"


def test_duplicate_ids_missing_fields_and_control_with_category() -> None:
    rows = [
        GOOD[0],
        GOOD[0],
        ["", "train", "", "error", "Language Errors", "Spelling Errors", "x", ""],
        ["c1", "train", "ok?", "no_error", "Factual Errors", "Entity Error", "", "y"],
    ]
    parsed = mi.parse_bytes(_csv(rows).encode(), "f.csv")
    assert not parsed.ok
    assert parsed.errors == [
        "f.csv:3: duplicate id 'a1' (first on line 2)",
        "f.csv:4: missing id",
        "f.csv:4: empty question",
        "f.csv:4: erroneous item without gold_answer (the judge needs it)",
        "f.csv:5: no_error item must have empty categories, got 'Factual Errors'",
    ]


def test_error_cap_reports_the_total() -> None:
    rows = [[f"x{i}", "train", "q", "wrong", "", "", "", "a"] for i in range(80)]
    parsed = mi.parse_bytes(_csv(rows).encode(), "many.csv")
    assert len(parsed.errors) == mi.MAX_REPORTED and parsed.total_errors == 80
    assert "… and 30 more" in str(mi.ItemImportError(parsed.errors, parsed.total_errors))


def _records() -> list[dict]:
    return [dict(zip(HEADER, r)) for r in GOOD]


def test_json_list_and_data_wrapper_and_jsonl(store: Store, tmp_path: Path) -> None:
    records = _records()
    records[0]["id"] = 101  # numeric ids become strings
    p1 = tmp_path / "a.json"
    p1.write_text(json.dumps(records, indent=2), encoding="utf-8")
    assert mi.import_file(store, p1, "j1") == 3
    assert store.scalar("SELECT count(*) FROM items WHERE item_set='j1' AND item_id='101'") == 1

    p2 = tmp_path / "b.json"
    p2.write_text(json.dumps({"data": _records()}), encoding="utf-8")
    assert mi.import_file(store, p2, "j2") == 3

    # the original release's field names: prompt / correct
    original = [
        {
            "id": "o1",
            "prompt": "What is the capital of France?",
            "error": "correct",
            "gold_answer": "Paris",
        }
    ]
    p3 = tmp_path / "c.jsonl"
    p3.write_text("\n".join(json.dumps(r) for r in _records() + original) + "\n", encoding="utf-8")
    assert mi.import_file(store, p3, "j3") == 4
    assert store.scalar("SELECT is_error FROM items WHERE item_set='j3' AND item_id='o1'") is False


def test_json_errors_carry_line_numbers() -> None:
    records = _records()
    records[1]["secondary_category"] = "Entity Errr"
    text = json.dumps(records, indent=2)
    parsed = mi.parse_bytes(text.encode(), "x.json")
    expected_line = text.splitlines().index("  {", 1 + text.splitlines().index("  {")) + 1
    assert parsed.errors == [
        f"x.json:{expected_line}: unknown secondary_category 'Entity Errr' "
        "(see the taxonomy: e.g. 'Spelling Errors', 'TextContSubjSpec')"
    ]
    wrapped = json.dumps({"data": records}, indent=1)
    parsed = mi.parse_bytes(wrapped.encode(), "w.json")
    line = parsed.errors[0].split(":")[1]
    assert '"id": "a2"' in wrapped.splitlines()[int(line)]  # line of the record's opening brace
    # JSONL: the physical line; an invalid line is named as such
    lines = [json.dumps(r) for r in records] + ["{not json"]
    parsed = mi.parse_bytes("\n".join(lines).encode(), "y.jsonl")
    assert parsed.errors == [
        "y.jsonl:4: invalid JSON (Expecting property name enclosed in double quotes)"
    ]
    parsed = mi.parse_bytes("\n".join(lines[:3]).encode(), "y.jsonl")
    assert parsed.errors[0].startswith("y.jsonl:2: unknown secondary_category")


def test_reimport_replaces_and_other_benchmark_names_are_refused(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "r.csv"
    path.write_text(_csv(GOOD), encoding="utf-8")
    mi.import_file(store, path, "r")
    path.write_text(_csv(GOOD[:1]), encoding="utf-8")
    mi.import_file(store, path, "r")
    assert store.scalar("SELECT count(*) FROM items WHERE item_set='r'") == 1
    store.execute("INSERT INTO item_sets (name, benchmark) VALUES ('bbm-x', 'bbm')")
    with pytest.raises(mi.ItemImportError, match="already exists for benchmark 'bbm'"):
        mi.import_file(store, path, "bbm-x")


def test_export_round_trips(store: Store) -> None:
    mi.import_builtin(store, SAMPLE, "s")
    data = mi.export_items_csv(store, "s")
    mi.import_bytes(store, data, "again.csv", "s2")
    cols = (
        "item_id, split, is_error, primary_category, secondary_category, prompt, explanation, gold"
    )
    a = store.df(f"SELECT {cols} FROM items WHERE item_set='s' ORDER BY item_id")
    b = store.df(f"SELECT {cols} FROM items WHERE item_set='s2' ORDER BY item_id")
    assert a.equals(b)


def test_cli_import_reports_errors_and_success(tmp_path: Path, db_path: Path) -> None:
    good = tmp_path / "good.csv"
    good.write_text(_csv(GOOD), encoding="utf-8")
    bad = tmp_path / "bad.csv"
    bad.write_text(
        _csv(GOOD + [["z", "train", "q", "error", "", "Nope", "", "a"]]), encoding="utf-8"
    )

    def run(*a):
        return run_core("import", "misprompt", *a, "--db", str(db_path))

    out = run(str(bad), "--name", "cli")
    assert out.returncode == 1 and f"{bad}:5: unknown secondary_category 'Nope'" in out.stderr
    out = run(str(good), "--name", "cli")
    assert out.returncode == 0, out.stderr
    assert "imported 3 items into set 'cli': 2 erroneous, 1 controls" in out.stdout


# -- the Import page (AppTest) ----------------------------------------------------------------


def _page(db_path: Path):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/import_data.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_import_page_bad_file_shows_lines_and_writes_nothing(initialised_store: Store) -> None:
    at = _page(initialised_store.path)
    bad = GOOD + [["b1", "train", "q?", "error", "Factual Errors", "Spelling Errors", "x", "y"]]
    at.file_uploader(key="upload_misprompt").set_value(("bad.csv", _csv(bad).encode(), "text/csv"))
    at.run()
    assert not at.exception, at.exception
    assert "1 problem(s) found" in at.error[0].value
    assert (
        "bad.csv:5: secondary_category 'Spelling Errors' belongs to 'Language Errors'"
        in at.code[0].value
    )
    assert at.button(key="do_import").disabled
    assert initialised_store.scalar("SELECT count(*) FROM item_sets WHERE name='bad'") == 0


def test_import_page_previews_imports_and_lists_sets(initialised_store: Store) -> None:
    at = _page(initialised_store.path)
    names = list(at.dataframe[0].value["name"])
    assert "misprompt-sample" in names
    at.file_uploader(key="upload_misprompt").set_value(
        ("mine.csv", _csv(GOOD).encode(), "text/csv")
    )
    at.run()
    assert "3 items read from mine.csv: 2 erroneous, 1 controls." in at.success[0].value
    preview = at.dataframe[0].value
    assert list(preview["item_id"]) == ["a1", "a2", "a3"]
    at.text_input(key="set_name").set_value("my-set")
    at.button(key="do_import").click()
    at.run()
    assert not at.exception, at.exception
    assert any("Imported 3 items as item set **my-set**" in s.value for s in at.success)
    assert initialised_store.scalar("SELECT count(*) FROM items WHERE item_set='my-set'") == 3
    listing = at.dataframe[-1].value
    row = listing[listing["name"] == "my-set"].iloc[0]
    assert (row["items"], row["erroneous"], row["controls"]) == (3, 2, 1)


def test_import_page_bbm_upload_uses_bbm_importer(initialised_store: Store) -> None:
    at = _page(initialised_store.path)
    at.radio(key="import_kind").set_value("BIG-Bench Mistake traces")
    at.run()
    record = {
        "input": "Sort: b a",
        "steps": ["Thought 1", "Thought 2"],
        "answer": "a b",
        "target": "a b",
        "mistake_index": None,
    }
    at.file_uploader(key="upload_bbm").set_value(
        ("word_sorting.jsonl", (json.dumps(record) + "\n").encode(), "application/json")
    )
    at.run()
    button = at.button(key="do_import")
    assert not button.disabled
    at.text_input(key="set_name").set_value("bbm-upload")
    button.click()
    at.run()
    assert not at.exception, at.exception
    assert (
        initialised_store.scalar(
            "SELECT count(*) FROM items WHERE item_set='bbm-upload' AND benchmark='bbm'"
        )
        == 1
    )


def test_csv_header_without_required_columns() -> None:
    parsed = mi.parse_bytes(b"id,prompt_text,error\n1,q,error\n", "h.csv")
    assert parsed.errors == [
        "h.csv:1: header lacks column(s) question (expected " + ", ".join(mi.COLUMNS) + ")"
    ]


def test_import_page_m2_upload_uses_errorbench_importer(initialised_store: Store) -> None:
    sample = ROOT / "data" / "samples" / "errorbench_sample.m2"
    assert sample.exists()
    at = _page(initialised_store.path)
    at.radio(key="import_kind").set_value("ErrorBench (M2 file)")
    at.run()
    at.file_uploader(key="upload_m2").set_value(("mine.m2", sample.read_bytes(), "text/plain"))
    at.run()
    button = at.button(key="do_import")
    assert not button.disabled
    button.click()
    at.run()
    assert not at.exception, at.exception
    n = initialised_store.scalar("SELECT count(*) FROM items WHERE item_set='mine'")
    assert (
        n
        == initialised_store.scalar("SELECT count(*) FROM items WHERE item_set='errorbench-sample'")
        and n > 0
    )
    assert any(f"Imported {n} items as item set **mine**" in s.value for s in at.success)
    # a broken M2 file: its problem is shown with the uploaded file's name, nothing written
    at.file_uploader(key="upload_m2").set_value(("broken.m2", b"A 0 1|||x\n", "text/plain"))
    at.text_input(key="set_name").set_value("broken")
    at.run()
    at.button(key="do_import").click()
    at.run()
    assert at.error and "broken.m2" in at.code[-1].value
    assert initialised_store.scalar("SELECT count(*) FROM item_sets WHERE name='broken'") == 0
