"""Development corpus v6 for the BBM answer reader (issue 29, point 3, round of 2026-12-04).

tests/data/bbm_dev_v6.jsonl holds 78 phrasings written on branch h29r2 for the general rules
added while v4 (bbm_heldout_v4.jsonl, tuning since 2026-12-04) was read. They are new
phrasings of those rules, not copies of v4's rows, by the conventions of
tests/data/bbm_heldout_v4.md:
- markup: `<answer>` / `<final_answer>` tags, `<think>` / `<thinking>` / `<reasoning>` blocks
  (the answer after the block counts; a block never closed is a cut-off answer);
- step numbers: "Thought nr. 4", "step num. 2", "Step No.3", "Th 5", a bare number after a
  mistake's place ("The problem lies in 7.", "Error in #6."), "Not 4." as a sentence, "N is 3.",
  "the step right after Thought 3" / "the one immediately following it" / "just before";
- no-mistake claims: "n/a", "Not applicable — …", "The logic holds everywhere.", "from start to
  finish", "from the first thought to the last one", "Right from the outset, …" (an
  intensifier, not a verdict);
- key-value labels with number words ("Wrong step: five", "Incorrect thought = two"), "the
  earlier one is 4" / "the first of them is 2", a one-line "label: answer" (not a count);
- task boxes: "[x] Thought 2" is ✅, an unchecked box denies a bare claim but keeps an item's
  own "is wrong" / "fails";
- short Spanish / French / German verdicts and conclusions ("Por tanto, el paso es
  incorrecto.", "Donc, l'étape est correcte.", "ist nicht richtig");
- answers that must stay `ambiguous`: "equally plausible", "a toss-up", "I cannot narrow it
  down", a range, a plan with no answer ("I'll go through the thoughts …"), "Everything is
  correct. The first mistake is Thought 3.", a correction cut off on a bare mention, a refusal
  ("I can't verify this step"); a quoted phrase is mentioned, not said.

The first 69 rows were measured once when written, on the reader of commit f4495d2 (v4's
rules, before the changes these rows led to): 65 / 1 / 1 / 2 — agree / no reading / other
step / guessed. The last 9 ("-g-") guard rules narrowed or added after that ("in 2 places" is no step,
"is right after all" is a verdict, "Confidence: 8" is no label answer, a boundary "after
Thought 2" is no subject, "Not 6, but 2.", "Nothing is wrong here. The first error is …", a
plan's colon ("Let me check: Thought 4 is wrong."), "Not 3 either. It is 4.").
The reader of main 9941c5f reads the 78 rows 31 / 38 / 2 / 7, that of h29r 29 / 38 / 2 / 9.
A tuning corpus: every row must be read as written.
Report: `.venv/bin/python -m tests.test_bbm_dev_v6`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_read_as_written, check_well_formed, load, report

CORPUS = "bbm_dev_v6.jsonl"


def test_dev_v6_is_well_formed() -> None:
    check_well_formed(load(CORPUS), min_rows=60, prefix="6")


def test_dev_v6_is_read_as_written() -> None:
    assert_read_as_written(load(CORPUS))


if __name__ == "__main__":
    report(load(CORPUS))
