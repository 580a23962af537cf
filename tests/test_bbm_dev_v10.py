"""Development corpus v10 for the BBM answer reader (issue 29, point 3, branch h29r6, 2026-12-04).

tests/data/bbm_dev_v10.jsonl holds 52 phrasings written on branch h29r6 for the rule added
while v8 (bbm_heldout_v8.jsonl, held out until measured on h29r4 and h29r5, tuning since) was
read: an answer whose claims name different answers, with nothing marking one as a correction
of the other, is `ambiguous` — never settled by precedence. They are new phrasings of that
rule, not copies of v8's rows, by the conventions of tests/data/bbm_heldout_v3.md, in both
directions:
- conflicts (`ambiguous`): a step called wrong before the answered one or beside "Final
  answer: No"; "no mistakes" beside "Answer: Thought 4"; a checklist or an "OK?" table whose
  first failing row is not the conclusion; a bare first line ("3", "No") against the sentence
  under it; a JSON reason or the prose around a JSON object naming another first mistake;
  "Answer: 4" above "The first error is in Thought 6"; "Thought 4 is fine. Final answer: 4";
  "Yeah. The whole trace is flawless."; a declined verdict; a numbered walk cut off before its
  verdict; step answers whose conclusion ("so the step is correct", "Therefore it is wrong")
  and marked verdict disagree, whose JSON explanation contradicts its flag, or that say two
  short verdicts ("Right. Wrong.", "Valid: yes / Valid: no");
- their neighbours (`-guard-` ids, a definite reading): the same shapes restated, corrected
  ("Wait, no: …"), after a <think> block, with a later step also wrong, an impression taken
  back, a walk that calls a step odd but not wrong, an agreeing table or JSON reason, "Out of
  8 steps, 8 are correct", "Six of the eight steps are fine; …", "Every step after 5 is
  wrong", German "falsch: Nein".
Measured once when written, on the reader of h29r5 (commit a5cbf6a, before the changes these
rows led to): the first 43 rows 26 / 2 / 0 / 15 (60.5 %) — agree / no reading / other step /
guessed; the last 6 (a second round, probed after the first 43 were read right: a marker above
a later "the first error is" sentence, the answered step called fine, a walk calling a step
odd) 4 / 0 / 0 / 2; the last 3 (a third round: "Answer: 3. Thought 6 is also wrong." on one
line — read 6 before, the marker took its whole line —, "Answer: 6. Thought 3 is wrong.",
"Answer: No. Thought 2 drops a bracket.") 0 / 0 / 1 / 2.
A tuning corpus: every row must be read as written.
Report: `.venv/bin/python -m tests.test_bbm_dev_v10`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_read_as_written, check_well_formed, load, report

CORPUS = "bbm_dev_v10.jsonl"


def test_dev_v10_is_well_formed() -> None:
    check_well_formed(load(CORPUS), min_rows=52, prefix="10")


def test_dev_v10_is_read_as_written() -> None:
    assert_read_as_written(load(CORPUS))


if __name__ == "__main__":
    report(load(CORPUS))
