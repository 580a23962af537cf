"""Development corpus v9 for the BBM answer reader (issue 29, point 3, branch h29r5, 2026-12-04).

tests/data/bbm_dev_v9.jsonl holds 109 phrasings written on branch h29r5 for the general rules
added while v7 (bbm_heldout_v7.jsonl, held out until measured on h29r4 at 296 / 28 / 3 / 4,
tuning since) was read. They are new phrasings of those rules, not copies of v7's rows, by the
conventions of tests/data/bbm_heldout_v3.md:
- a step answer whose JSON fields disagree ({"valid": true, "is_wrong": true}), whose ✅ and ❌
  stand side by side, or that stops inside a table row, is `ambiguous`; fields that agree, or
  a field read the other way round ({"has_mistake": false} = yes), give the answer;
- what the speaker would have answered ("My first instinct would answer No …", "I was going to
  answer Yes …") is no answer marker, "Final: Yes" is one;
- "the next-to-final thought" is n - 1; "Although Thought 7 …, the mistake starts in Thought 3"
  places the mistake in 3;
- JSON and XML shapes: a count beside the step field ("steps_reviewed", "error_count"), {"n":
  …}, a list of per-step objects with a verdict flag, an XML attribute that names the step,
  <step n="2">wrong</step> rows;
- an arrow before the answer ("⇒ 6"), a number word with its digits ("Four (4)"; "Two (5)"
  is no answer), "none whatsoever", "there are none at all", a number then its reason ("6 — it
  swaps …"; with a doubt, no answer), bold numbers ("**3**", "__2__");
- "the first two are fine, the third is not", "the rest / the others are wrong" (the first step
  not called right), "the rest are fine";
- ordinals and verdicts in French, Spanish, Italian, German and Chinese ("la deuxième
  pensée", "el segundo paso", "il terzo pensiero", "im sechsten Gedanken", "第二步", "正确");
- "right from the first thought" / "right away" is not "correct";
- what the speaker first believed ("At first I suspected Thought 2, but …") and what someone
  might blame claim nothing; "the problem is Thought 5" places the mistake;
- a search denied ("I can't point to any thought that isn't correct": no mistake);
- step mode "Affirmative." / "In the negative."; "loses" is doing it wrongly, and "… correct
  until it loses a bracket in Thought 5" places it (with a later "No mistakes.": `ambiguous`).
"-guard" ids are neighbours that must keep their reading.

Measured once when written, on the reader of h29r4 (commit 7d51c98, before the changes these
rows led to): the first 83 rows 33 / 35 / 8 / 7 (39.8 %) — agree / no reading / other step /
guessed; rows 84-92 (a second round, neighbours probed after the first 83 were read right:
XML step rows, a number then a doubt, {"n": 8, "first_error": 3}, Spanish "son", "need to
answer") 6 / 2 / 1 / 0; rows 93-101 (a third round: per-step JSON objects with a "status"
string — read 1 for [ok, wrong] by this branch's own first per-step rule, caught here —, "…
correct until it swaps the wrong pair" with no place, "the rest of the thoughts are wrong, only
Thought 1 is right", "all fine, only Thought 4 is wrong") 2 / 4 / 1 / 2; the last 8 (a
fourth round, a search denied: "I can't point to any thought that isn't correct", "I cannot find any part of
it that is wrong" — read "no" before) 1 / 5 / 2 / 0.
A tuning corpus: every row must be read as written.
Report: `.venv/bin/python -m tests.test_bbm_dev_v9`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_read_as_written, check_well_formed, load, report

CORPUS = "bbm_dev_v9.jsonl"


def test_dev_v9_is_well_formed() -> None:
    check_well_formed(load(CORPUS), min_rows=109, prefix="9")


def test_dev_v9_is_read_as_written() -> None:
    assert_read_as_written(load(CORPUS))


if __name__ == "__main__":
    report(load(CORPUS))
