"""Development corpus v7 for the BBM answer reader (issue 29, point 3, branch h29r3, 2026-12-04).

DOCSTRING_PLACEHOLDER
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.test_bbm_heldout_v2 import measure

CORPUS = Path(__file__).resolve().parent / "data" / "bbm_dev_v7.jsonl"


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def test_dev_v7_is_well_formed() -> None:
    rows = load()
    assert len(rows) >= 45 and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["mode"] in ("trace", "step"), r["id"]
        if r["mode"] == "step":
            assert r["id"].startswith("s7-r-" if r["reasoning"] else "s7-d-"), r["id"]
            assert r["expected"] in ("yes", "no", "ambiguous"), r["id"]
        else:
            assert r["id"].startswith("t7-"), r["id"]
            e = r["expected"]
            assert (
                e is None
                or e in ("out_of_range", "ambiguous")
                or (isinstance(e, int) and not isinstance(e, bool) and 1 <= e <= 8)
            ), r["id"]


def test_dev_v7_is_read_as_written() -> None:
    m = measure(load())
    assert not m["other_step"] and not m["guessed"] and not m["no_reading"], m


if __name__ == "__main__":
    m = measure(load())
    print({k: len(v) for k, v in m.items()})
    for k, v in m.items():
        if k != "agree":
            for i, e, g in v:
                print(f"  {k}: {i}: expected {e!r}, reader {g!r}")
