"""The BBM answer reader measured on held-out corpus v9 (issue 29, point 3).

tests/data/bbm_heldout_v9.jsonl (236 rows, 43 of them answers a careful reader cannot resolve)
was written on 2026-12-04 by another developer apart from the reader (provenance:
bbm_heldout_v9.md): they opened no parser code, no reader test and no other corpus's rows, and
aimed at what current models really write. No reader change was tuned on it. Measured once
each, when it arrived: reader of h29r5 (tuned on v7) 223 / 6 / 0 / 7 (94.5 %); reader of h29r6
(tuned on v8) **228 / 4 / 0 / 4 (96.6 %; trace 148 / 2 / 0 / 2 = 97.4 %, step 80 / 2 / 0 / 2 =
95.2 %)** — agree / no reading / other step / guessed; of its 193 resolvable answers 189 read
right (97.9 %) and none misread, of its 43 unresolvable answers 39 called ambiguous. Just below
the issue's goal (≥ 97 %): four no-readings ("1<|im_end|>", Portuguese "sem erro", a step
answer whose verdict follows a ✅/❌ checklist, "Yes." before its reason) and four guesses on
unresolvable answers (a walk cut off after "Thought 2 computes" read as 2; a table's first
error at 2 beside "Final: 3" read as 2; "Verdict: Yes / Verdict: No" read as no; a
conditional verdict read as no). The counts below guard against a reader change that reads
fewer rows right or misreads more; once the reader is tuned on a row of this file, v9 is a
tuning corpus and the next held-out measurement needs a corpus v10.
Report: `.venv/bin/python -m tests.test_bbm_heldout_v9_measured`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_as_measured, load, report

CORPUS = "bbm_heldout_v9.jsonl"
MEASURED = {"agree": 228, "no_reading": 4, "other_step": 0, "guessed": 4}
MEASURED_TRACE = {"agree": 148, "no_reading": 2, "other_step": 0, "guessed": 2}
MEASURED_STEP = {"agree": 80, "no_reading": 2, "other_step": 0, "guessed": 2}


def test_heldout_v9_agreement_and_misreads_as_measured() -> None:
    rows = load(CORPUS)
    assert len(rows) == 236
    assert_as_measured(rows, MEASURED_TRACE, MEASURED_STEP, MEASURED)


if __name__ == "__main__":
    report(load(CORPUS))
