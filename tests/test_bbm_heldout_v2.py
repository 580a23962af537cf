"""Held-out corpus v2 for the BBM answer reader (issue 29, point 3).

tests/data/bbm_heldout_v2.jsonl (its provenance and conventions: bbm_heldout_v2.md) was written
by another developer apart from the reader, and merged only after the reader's redesign was
committed: no rule was tuned on it. Each row is an answer and what a careful person reads in
it. The reader's `unparsable` and `ambiguous` are both "no reading" (scored as wrong, never a
guess) and agree with an expected `ambiguous`.

Disagreements are counted in three kinds (tests/bbm_corpus.py): no reading, other step,
guessed.

Since 2026-12-04 the file is a TUNING corpus (bbm_heldout_v2.md: the reader was tuned on its
failures; the held-out corpus was v3, and is v4 since v3 became tuning too). The test asserts the counts measured after that tuning
(see MEASURED), as a regression test: a reader change that reads fewer rows right, or
misreads more, fails here. The first measurement (reader of commit 9741e2e, merged with h29's
2efe21f), made while it was held out, is kept in the comment beside MEASURED.
Report: `.venv/bin/python -m tests.test_bbm_heldout_v2`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_as_measured, load, report

CORPUS = "bbm_heldout_v2.jsonl"

# 194 rows (133 trace, 61 step): agree / no reading / other step / guessed. First measurement
# 157 / 31 / 3 / 3 (80.9 %); after j29's changes (\boxed{}, "A:"/"Output:" markers, JSON
# error fields and flags, mark-only checklists, "until Thought k"; developed on
# tests/data/bbm_dev_v3.jsonl, measured here once) 163 / 25 / 3 / 3 (84.0 %). Since
# 2026-12-04 this is a tuning corpus (bbm_heldout_v2.md; the held-out one is v3): after the
# h29reader redesign, tuned on it and on bbm_dev_v4.jsonl, 194 / 0 / 0 / 0.
MEASURED = {"agree": 194, "no_reading": 0, "other_step": 0, "guessed": 0}
MEASURED_TRACE = {"agree": 133, "no_reading": 0, "other_step": 0, "guessed": 0}
MEASURED_STEP = {"agree": 61, "no_reading": 0, "other_step": 0, "guessed": 0}


def test_corpus_is_the_one_measured() -> None:
    rows = load(CORPUS)
    assert len(rows) == 194 and len({r["id"] for r in rows}) == len(rows)
    assert sum(r["mode"] == "trace" for r in rows) == 133


def test_heldout_v2_agreement_and_misreads_as_measured() -> None:
    assert_as_measured(load(CORPUS), MEASURED_TRACE, MEASURED_STEP, MEASURED)


if __name__ == "__main__":
    report(load(CORPUS))
