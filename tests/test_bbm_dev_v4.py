"""Development corpus v4 for the BBM answer reader (issue 29, point 3, round of 2026-12-04).

tests/data/bbm_dev_v4.jsonl holds phrasings written on branch h29reader for the reader of
claims, by the conventions of tests/data/bbm_heldout_v2.md: negation and contrast ("It isn't
Thought 3 — …; the real slip is in Thought 5", "… rather than in Thought 4"), checklists and
tables (a "— OK" / "— INCORRECT" list, an "Error?" column, all-✅ → No), number words and
ordinals ("Thought number two", "the 2nd thought", "step eleven" → out of range), "no errors to
report" / "Mistakes found: none" / "Zero issues", self-corrections (the final claim counts),
numbers in the text that are not step numbers, the conclusion of a chain of thought, JSON
fields named by the model, step answers direct and reasoned, and answers that must stay
`ambiguous` (a hedge, two candidates, a contradiction, a refusal, a trailing question, a cut-off
chain of thought). It is a tuning corpus: the reader was developed on it. v2 and v3 are tuning
since 2026-12-04 (bbm_heldout_v2.md, bbm_heldout_v3.md); the held-out corpus is v4.
Report: `.venv/bin/python -m tests.test_bbm_dev_v4`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.test_bbm_heldout_v2 import measure

CORPUS = Path(__file__).resolve().parent / "data" / "bbm_dev_v4.jsonl"


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def test_dev_v4_is_well_formed() -> None:
    rows = load()
    assert len(rows) >= 90 and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["mode"] in ("trace", "step")
        if r["mode"] == "step":
            assert r["expected"] in ("yes", "no", "ambiguous")
            assert isinstance(r["reasoning"], bool)
        else:
            assert (
                r["expected"] is None
                or r["expected"] in ("out_of_range", "ambiguous")
                or (isinstance(r["expected"], int) and 1 <= r["expected"] <= 8)
            )


# rows the reader does not read yet; each is a "no reading" (safe), none a misread. Empty since
# h29r: "… but adds wrongly" now takes its sentence's subject (t-possessive-ref).
KNOWN_NO_READING: set[str] = set()


def test_dev_v4_is_read_as_written() -> None:
    m = measure(load())
    assert not m["other_step"] and not m["guessed"], m
    assert {i for i, _, _ in m["no_reading"]} == KNOWN_NO_READING, m["no_reading"]


if __name__ == "__main__":
    m = measure(load())
    print({k: len(v) for k, v in m.items()})
    for k, v in m.items():
        if k != "agree":
            for i, e, g in v:
                print(f"  {k}: {i}: expected {e!r}, reader {g!r}")
