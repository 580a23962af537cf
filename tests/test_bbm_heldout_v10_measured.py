"""The BBM answer reader on corpus v10 (issue 29, point 3): measured held out, a tuning corpus since.

tests/data/bbm_heldout_v10.jsonl (246 rows, 43 of them answers a careful reader cannot resolve)
was written on 2026-12-04 by another developer apart from the reader (provenance:
bbm_heldout_v10.md): they opened no parser code, no reader test and no other corpus's rows, and
wrote what current models answer on the five BBM tasks. Measured held out once per reader when
it arrived — agree / no reading / other step / guessed: reader of h29r6 (tuned on v8) 230 / 10 /
1 / 5 (93.5 %); reader of h29r7 (tuned on v9) 236 / 6 / 1 / 3 (95.9 %; trace 156 / 5 / 1 / 2,
step 80 / 1 / 0 / 1; one misread as another step). Since then a tuning corpus: the reader of
h29r8 was tuned on its ten misses by family (new phrasings in bbm_dev_v12.jsonl) and reads
**246 / 0 / 0 / 0** (trace 164, step 82) — a tuned figure, not a held-out one; the next
held-out measurement is corpus v11's. The counts below guard against a reader change that
reads fewer rows right or misreads more.
Report: `.venv/bin/python -m tests.test_bbm_heldout_v10_measured`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_as_measured, load, report

CORPUS = "bbm_heldout_v10.jsonl"
MEASURED = {"agree": 246, "no_reading": 0, "other_step": 0, "guessed": 0}
MEASURED_TRACE = {"agree": 164, "no_reading": 0, "other_step": 0, "guessed": 0}
MEASURED_STEP = {"agree": 82, "no_reading": 0, "other_step": 0, "guessed": 0}


def test_heldout_v10_agreement_and_misreads_as_measured() -> None:
    rows = load(CORPUS)
    assert len(rows) == 246
    assert_as_measured(rows, MEASURED_TRACE, MEASURED_STEP, MEASURED)


if __name__ == "__main__":
    report(load(CORPUS))
