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

from tests.bbm_corpus import assert_read_as_written, check_well_formed, load, report

CORPUS = "bbm_dev_v7.jsonl"


def test_dev_v7_is_well_formed() -> None:
    check_well_formed(load(CORPUS), min_rows=45, prefix="7")


def test_dev_v7_is_read_as_written() -> None:
    assert_read_as_written(load(CORPUS))


if __name__ == "__main__":
    report(load(CORPUS))
