"""The BBM answer reader measured on held-out corpus v11 (issue 29, point 3).

tests/data/bbm_heldout_v11.jsonl (240 rows, 44 of them answers a careful reader cannot resolve)
was written on 2026-12-04 by another developer apart from the reader (provenance:
bbm_heldout_v11.md): they opened no parser code, no reader test and no other corpus's rows, and
wrote what current models answer on the five BBM tasks. No reader change was tuned on it.
Measured once each, when it arrived: reader of h29r7 (tuned on v9) 236 / 4 / 0 / 0 (98.3 %);
reader of h29r8 (tuned on v10, shipped) **236 / 4 / 0 / 0 (98.3 %; trace 157 / 4 / 0 / 0 =
97.5 %, step 79 / 0 / 0 / 0 = 100 %)** — agree / no reading / other step / guessed; of its 196
resolvable answers 192 read right and none misread, of its 44 unresolvable answers all 44
called ambiguous. The issue's goal (≥ 97 %, 0 misread as another step) is met on this corpus;
on the one before it (v10) the reader of that day read 95.9 % with one misread
(docs/benchmarks.md has the whole series). The four no-readings: "mistake index 5" style,
a reason naming the swap without a step word, "not Thought 4 but Thought 3" in a walk, and a
task-box list. The counts below guard against a reader change that reads fewer rows right or
misreads more; once the reader is tuned on a row of this file, v11 is a tuning corpus and the
next held-out measurement needs a corpus v12.
Report: `.venv/bin/python -m tests.test_bbm_heldout_v11_measured`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_as_measured, load, report

CORPUS = "bbm_heldout_v11.jsonl"
MEASURED = {"agree": 236, "no_reading": 4, "other_step": 0, "guessed": 0}
MEASURED_TRACE = {"agree": 157, "no_reading": 4, "other_step": 0, "guessed": 0}
MEASURED_STEP = {"agree": 79, "no_reading": 0, "other_step": 0, "guessed": 0}


def test_heldout_v11_agreement_and_misreads_as_measured() -> None:
    rows = load(CORPUS)
    assert len(rows) == 240
    assert_as_measured(rows, MEASURED_TRACE, MEASURED_STEP, MEASURED)


if __name__ == "__main__":
    report(load(CORPUS))
