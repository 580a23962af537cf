"""The benchmark-neutral record checks (core/engine/records.py) the importers share: every
problem names the key and why, lines are the file's, nothing depends on a benchmark."""

from __future__ import annotations

import json

import pytest

from core.engine import records as r
from core.engine.structured import one_key_format
from core.store import ITEM_COLUMNS


def test_a_step_index_with_null_for_none() -> None:
    steps = ["a", "b"]
    assert r.step_index({"k": None}, "k", steps) == []
    assert r.step_index({"k": 1}, "k", steps) == []
    assert r.step_index({}, "k", steps) == []
    assert r.step_index({"k": True}, "k", steps) == ["'k' must be an integer or null, got true"]
    assert r.step_index({"k": -1}, "k", steps) == ["'k' -1 is negative (it is 0-based)"]
    assert r.step_index({"k": 2}, "k", steps) == [
        "'k' 2 is out of range for 2 steps (it is 0-based)"
    ]
    assert r.step_index({"k": 9}, "k", None) == []  # bad steps: only type and lower bound


def test_a_step_index_with_minus_one_for_none() -> None:
    steps = ["a"]
    assert r.step_index({"k": -1}, "k", steps, none=-1) == []
    assert r.step_index({"k": None}, "k", steps, none=-1) == [
        "'k' must be an integer (-1 = no wrong step), got null"
    ]
    assert r.step_index({"k": -2}, "k", steps, none=-1) == [
        "'k' -2 is below -1 (-1 = no wrong step, else a 0-based index)"
    ]
    assert r.step_index({"k": 1}, "k", steps, none=-1) == [
        "'k' 1 is out of range for 1 steps (it is 0-based)"
    ]


def test_strings_objects_and_the_problem_list() -> None:
    assert r.non_empty_strings({"a": " ", "b": 3, "c": "x"}, "a", "b", "c", "d") == [
        "'a' must be a non-empty string",
        "'b' must be a non-empty string",
    ]
    assert r.not_an_object([1]) == ["expected a JSON object, got list"]
    assert r.not_an_object({}) == []
    many = r.RecordProblems([f"f:{n}: bad" for n in range(1, 53)])
    assert str(many).splitlines()[-1] == "… and 2 more"
    assert len(many.problems) == 52


def test_json_lines_keep_their_lines_and_order() -> None:
    text = '{"a": 1}\n\n{oops\r\n[2]\n'
    got = list(r.each_json_line(text, "f.jsonl"))
    assert [(n, obj) for n, obj, _ in got] == [(1, {"a": 1}), (3, None), (4, [2])]
    assert got[1][2] == (
        "f.jsonl:3: invalid JSON (Expecting property name enclosed in double quotes at column 2)"
    )
    bare = list(r.each_json_line("{oops", "f", column=False))
    assert bare[0][2] == "f:1: invalid JSON (Expecting property name enclosed in double quotes)"


def test_a_json_array_gives_each_element_its_line() -> None:
    records, problems = r.json_records('[\n {"a": 1},\n\n {"b": 2}\n]', "f.json")
    assert (records, problems) == ([(2, {"a": 1}), (4, {"b": 2})], [])
    assert r.json_records("[1,\n 2", "f.json")[1][0].startswith("f.json:2: invalid JSON")


def test_rows_payloads_and_formats() -> None:
    class Rec:
        x, y = 1, "é"

    assert r.fields_of(Rec(), "y", "x") == {"y": "é", "x": 1}
    frame = r.item_rows_frame("s", "any", [{"item_id": "1", "payload": {"y": "é"}}])
    assert list(frame.columns) == ["item_set", *ITEM_COLUMNS]
    assert frame.iloc[0]["benchmark"] == "any" and frame.iloc[0]["gold"] is None
    assert json.loads(frame.iloc[0]["payload"]) == {"y": "é"} and "é" in frame.iloc[0]["payload"]
    fmt = one_key_format("n", "k", {"type": "boolean"})
    assert fmt["json_schema"]["schema"]["required"] == ["k"]
    assert fmt["json_schema"]["strict"] is True


@pytest.mark.parametrize("value", [0.5, "1", [1]])
def test_non_integer_indexes_are_named(value: object) -> None:
    assert r.step_index({"k": value}, "k", ["a"])[0].startswith("'k' must be an integer")


def test_counts_by_group_in_first_seen_order() -> None:
    rows = [("b", 1), ("a", 0), ("b", 0)]
    got = r.count_by(rows, lambda x: x[0], lambda x: {"n": True, "odd": x[1] == 1})
    assert got == {"b": {"n": 2, "odd": 1}, "a": {"n": 1, "odd": 0}}
    assert list(got) == ["b", "a"] and r.count_by([], str, lambda x: {}) == {}
