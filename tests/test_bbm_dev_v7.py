"""Development corpus v7 for the BBM answer reader (issue 29, point 3, branch h29r3, 2026-12-04).

tests/data/bbm_dev_v7.jsonl holds 51 phrasings written on branch h29r3 for the general rules
added while v5 (bbm_heldout_v5.jsonl, tuning since 2026-12-04) was read. They are new
phrasings of those rules, not copies of v5's rows, by the conventions of
tests/data/bbm_heldout_v5.md:
- tables whose verdict cell carries its reason ("No — the count is off" under "OK?");
- a mistake passed on: "… is carried forward into Thoughts 4 through 7", "Thoughts 3-8 inherit
  that error" (the receivers are not the first mistake; the step named before them is);
- `ambiguous`, never a guess: a line-by-line check that stops on the next step's bare label, a
  step-mode chain of thought cut before its conclusion, two JSON step fields that disagree;
- slips found by probing: a pronoun after a plan that names a step ("Let me verify Thought 6
  first - it is wrong."), "at 5 of the 7 thoughts", French "le pas 4" (a noun, not "not"),
  "I cannot check every letter, but the step is correct.";
- step numbers: Roman numerals ("Thought VII"), "the initial / opening / very first thought",
  the answer's variable ("N = 4", "k = 7"), an opening bare number pointed back at ("3 — the
  first error is there."), "…, hence 2."; "all the intermediate steps are right" (not the last);
- step mode: "the step holds / does not hold / doesn't hold", "fails to hold", an attitude word
  and a bare answer ("Sadly not.", "I'm afraid not."), a lead "No" agreeing with a denied
  mistake ("No, there is no error in this step."); "right of" is a place, not a verdict;
- guards ("It is not Thought 4; … Thought 2.", a range stays `ambiguous`, "No.").

Measured once when written, on the reader of commit e589c82 (main with h29r2, before the
changes these rows led to): 24 / 18 / 4 / 3 (49.0 %) — agree / no reading / other step /
guessed — on these 49 rows (50 were written and measured, 24 / 19 / 4 / 3; the row "Perhaps
Thought 3? It reverses …" was then removed: v5's convention reads a hedged single claim as
its step, the reader reads a hedge as `ambiguous`, and that is a question for the corpus
conventions, not a reader rule; v5's t-hedged-maybe-question-mark is the same case).
The last 2 rows ("-g-", added after that measurement, from probing the new rules) guard them:
"Thought 4 repeats the same error." names no source (`ambiguous`, not 4), and "n = 8 steps"
is a count, not the answer's variable.
A tuning corpus: every row must be read as written.
Report: `.venv/bin/python -m tests.test_bbm_dev_v7`.
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
