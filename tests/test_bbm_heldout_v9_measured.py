"""The BBM answer reader on corpus v9 (issue 29, point 3): measured held out, a tuning corpus since.

tests/data/bbm_heldout_v9.jsonl (236 rows, 43 of them answers a careful reader cannot resolve)
was written on 2026-12-04 by another developer apart from the reader (provenance:
bbm_heldout_v9.md): they opened no parser code, no reader test and no other corpus's rows, and
aimed at what current models really write. Measured held out, once each, when it arrived:
reader of h29r5 (tuned on v7) 223 / 6 / 0 / 7 (94.5 %); reader of h29r6 (tuned on v8)
228 / 4 / 0 / 4 (96.6 %; trace 148 / 2 / 0 / 2, step 80 / 2 / 0 / 2; resolvable 189 / 193 with
none misread, unresolvable 39 / 43) — agree / no reading / other step / guessed.
A tuning corpus since: branch h29r7 read its eight misses and fixed them by family
(chat-template tokens, "no error" in more languages, a step verdict after a ✅/❌ checklist,
"Yes." before its reason, cut-off walks, two marked verdicts that disagree, a "Final:" line
against a table, conditional verdicts; new phrasings of each in bbm_dev_v11.jsonl). On the
reader of h29r7: **236 / 0 / 0 / 0** (trace 152 / 0 / 0 / 0, step 84 / 0 / 0 / 0). These numbers
are no longer a held-out measurement; the next one is corpus v10's. The counts below guard
against a reader change that reads fewer rows right or misreads more.
Report: `.venv/bin/python -m tests.test_bbm_heldout_v9_measured`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_as_measured, load, report

CORPUS = "bbm_heldout_v9.jsonl"
MEASURED = {"agree": 236, "no_reading": 0, "other_step": 0, "guessed": 0}
MEASURED_TRACE = {"agree": 152, "no_reading": 0, "other_step": 0, "guessed": 0}
MEASURED_STEP = {"agree": 84, "no_reading": 0, "other_step": 0, "guessed": 0}


def test_heldout_v9_agreement_and_misreads_as_measured() -> None:
    rows = load(CORPUS)
    assert len(rows) == 236
    assert_as_measured(rows, MEASURED_TRACE, MEASURED_STEP, MEASURED)


if __name__ == "__main__":
    report(load(CORPUS))
