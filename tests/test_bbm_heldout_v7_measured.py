"""The BBM answer reader on corpus v7, measured held out, a tuning corpus since (issue 29, point 3).

tests/data/bbm_heldout_v7.jsonl (331 rows) was written on 2026-12-04 by another developer apart
from the reader (provenance: bbm_heldout_v7.md): they opened no parser code, no reader test and
no other corpus's rows. It was measured held out once per reader: h29r3 (8199c55, shipped at
the start of the day) 288 / 31 / 8 / 4 (87.0 %); h29r4 (e355130, tuned on v6) 296 / 28 / 3 / 4
(89.4 %; trace 193 / 25 / 2 / 0, step 103 / 3 / 1 / 4) — agree / no reading / other step /
guessed. Those are the held-out figures to quote.

**A tuning corpus since**: on h29r5 the reader was changed for the families of its failing
rows (step JSON fields or ✅/❌ marks that disagree and a table cut mid-row: `ambiguous`; "the
final thought is wrong but the error starts earlier, in 2"; "the next-to-final thought"; the
speaker's "I would answer No" as no marker; JSON counts, {"N": …}, per-step lists, XML
attributes; arrows, "Three (3)", "N - reason", bold numbers; "the first four are fine, the
fifth is not", "the rest are wrong"; French, Spanish, Italian, German, Chinese ordinals and
verdicts; "none whatsoever"; "At first I thought …"; "the problem is Thought 4"; "… until it
loses one in the fourth thought"; "I can't point to any thought that isn't correct"), with new phrasings of those rules in bbm_dev_v9.jsonl.
After, on h29r5: **330 / 1 / 0 / 0 (99.7 %; trace 219 / 1 / 0 / 0, step 111 / 0 / 0 / 0)** — a
tuned figure. The row left unread: a swap count whose place is said only by the puzzle's
content ("the third, in Thought 4, gives Claire the pink ball instead of the blue one"). The counts below guard
against a reader change that reads fewer rows right or misreads more; the next held-out
measurement is corpus v8, written apart.
Report: `.venv/bin/python -m tests.test_bbm_heldout_v7_measured`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_as_measured, load, report

CORPUS = "bbm_heldout_v7.jsonl"
MEASURED = {"agree": 330, "no_reading": 1, "other_step": 0, "guessed": 0}
MEASURED_TRACE = {"agree": 219, "no_reading": 1, "other_step": 0, "guessed": 0}
MEASURED_STEP = {"agree": 111, "no_reading": 0, "other_step": 0, "guessed": 0}


def test_heldout_v7_agreement_and_misreads_as_measured() -> None:
    rows = load(CORPUS)
    assert len(rows) == 331
    assert_as_measured(rows, MEASURED_TRACE, MEASURED_STEP, MEASURED)


if __name__ == "__main__":
    report(load(CORPUS))
