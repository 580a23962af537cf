"""Development corpus v5 for the BBM answer reader (issue 29, point 3, round of 2026-12-04).

tests/data/bbm_dev_v5.jsonl holds phrasings written on branch h29r for the reader's general
rules, by the conventions of tests/data/bbm_heldout_v2.md and the v3 clarifications in
bbm_heldout_v3.md:
- number grammar: bare ordinals ("1st", "Second.", "The fourth one.", "It's the third one."),
  "number seven", "the twelfth thought" (out of range);
- step words shortened ("T5", "T#6", "Th. 4", "St. 3", "Stp 2", "T1–T8 all correct");
- contrast and negation scope: "Not Thought 3 but Thought 6", "It isn't the second thought;
  it's the fifth", "Thought 8 rather than Thought 7 is wrong", a verb phrase carrying its
  sentence's subject ("Thought 5 reads the list correctly but then sorts it wrongly"), first
  impressions ("At first glance Thought 3 looks off, but …"), someone else's view ("One could
  think …"), "all thoughts but Thought 2";
- no-mistake claims: "Zero issues.", "None detected.", "Error-free.", "Flawless — …", "The
  reasoning is clean …", "Mistakes: none", "Errors found: 0", all-✅ checklists and tables;
- self-corrections ("Revised answer: 3", "let me restate: …", "scratch that, 7");
- several steps stated wrong (the smallest), and answers that must stay `ambiguous`: a range
  as the place of one mistake ("somewhere between Thought 3 and Thought 5", "in Thoughts
  5–7"), two labelled answers, a checklist against its conclusion, hedges, contradictions;
- step answers, direct and reasoned ("Conclusion: no problems with this step." is yes).

The first 153 rows were written before the reader was changed for them and measured once on
4c065d8 (144 / 6 / 2 / 1); the last 46 (ids with "-p-") were written after that as a fresh
probe and measured once before any change for them (40 / 5 / 0 / 1); the last 3 ("-g-") guard
the two rules narrowed after that ("It's 3." is a step only after steps were named or as the
answer's only number; "At first, Thought 2 seemed fine" keeps "at first" with its claim). The
reader of main 9941c5f reads the 202 rows 153 / 37 / 5 / 7. It is a tuning corpus now. The held-out corpus that
follows v3 (tuning since 2026-12-04, bbm_heldout_v3.md) is written apart by someone else.
Report: `.venv/bin/python -m tests.test_bbm_dev_v5`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_read_as_written, check_well_formed, load, report

CORPUS = "bbm_dev_v5.jsonl"


def test_dev_v5_is_well_formed() -> None:
    check_well_formed(load(CORPUS), min_rows=150, prefix="5")


def test_dev_v5_is_read_as_written() -> None:
    assert_read_as_written(load(CORPUS))


if __name__ == "__main__":
    report(load(CORPUS))
