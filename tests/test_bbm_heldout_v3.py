"""Shape of the held-out BBM answer corpus v3 (tests/data/bbm_heldout_v3.jsonl).

Only the corpus is checked here: row count, unique ids, id prefixes, modes and values. The
reader is measured on it separately (issue 29 point 3), so no parser is imported here.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "data" / "bbm_heldout_v3.jsonl"
TRACE_VALUES = {None, "out_of_range", "ambiguous", *range(1, 9)}
STEP_VALUES = {"yes", "no", "ambiguous"}


def _rows() -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), start=1):
        assert line.strip(), f"{CORPUS}:{n}: empty line"
        row = json.loads(line)
        assert isinstance(row, dict), f"{CORPUS}:{n}: not a JSON object"
        rows.append(row)
    return rows


def test_row_count_and_unique_ids() -> None:
    rows = _rows()
    assert len(rows) >= 180
    ids = [r["id"] for r in rows]
    assert [i for i, c in Counter(ids).items() if c > 1] == []


def test_trace_rows_shape() -> None:
    trace = [r for r in _rows() if r["mode"] == "trace"]
    for r in trace:
        assert set(r) == {"id", "mode", "text", "expected"}, r["id"]
        assert r["id"].startswith("t-"), r["id"]
        assert isinstance(r["text"], str) and r["text"], r["id"]
        e = r["expected"]
        assert not isinstance(e, bool) and e in TRACE_VALUES, r["id"]


def test_step_rows_shape() -> None:
    step = [r for r in _rows() if r["mode"] == "step"]
    for r in step:
        assert set(r) == {"id", "mode", "reasoning", "text", "expected"}, r["id"]
        assert isinstance(r["reasoning"], bool), r["id"]
        prefix = "s-r-" if r["reasoning"] else "s-d-"
        assert r["id"].startswith(prefix), r["id"]
        assert isinstance(r["text"], str) and r["text"], r["id"]
        assert r["expected"] in STEP_VALUES, r["id"]


def test_modes_and_mix() -> None:
    rows = _rows()
    assert {r["mode"] for r in rows} == {"trace", "step"}
    modes = Counter(r["mode"] for r in rows)
    # roughly two thirds trace, one third step; both step kinds present
    assert modes["trace"] > modes["step"] > 0
    assert {r["reasoning"] for r in rows if r["mode"] == "step"} == {True, False}
    ambiguous = sum(r["expected"] == "ambiguous" for r in rows)
    assert 0.10 <= ambiguous / len(rows) <= 0.20
