"""Development corpus v4 for the BBM answer reader (issue 29, point 3, round of 2026-12-04).

tests/data/bbm_dev_v4.jsonl holds phrasings written on branch h29reader for the reader of
claims, by the conventions of tests/data/bbm_heldout_v2.md: negation and contrast ("It isn't
Thought 3 — …; the real slip is in Thought 5", "… rather than in Thought 4"), checklists and
tables (a "— OK" / "— INCORRECT" list, an "Error?" column, all-✅ → No), number words and
ordinals ("Thought number two", "the 2nd thought", "step eleven" → out of range), "no errors to
report" / "Mistakes found: none" / "Zero issues", self-corrections (the final claim counts),
numbers in the text that are not step numbers, the conclusion of a chain of thought, JSON
fields named by the model, step answers direct and reasoned, and answers that must stay
`ambiguous` (a hedge, two candidates, a contradiction, a refusal, a trailing question, a cut-off
chain of thought). It is a tuning corpus: the reader was developed on it. v2 and v3 are tuning
since 2026-12-04 (bbm_heldout_v2.md, bbm_heldout_v3.md); the held-out corpus is v4.
Report: `.venv/bin/python -m tests.test_bbm_dev_v4`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_read_as_written, check_well_formed, load, report

CORPUS = "bbm_dev_v4.jsonl"
# rows the reader does not read yet; each is a "no reading" (safe), none a misread. Empty since
# h29r: "… but adds wrongly" now takes its sentence's subject (t-possessive-ref).
KNOWN_NO_READING: frozenset[str] = frozenset()


def test_dev_v4_is_well_formed() -> None:
    check_well_formed(load(CORPUS), min_rows=90)


def test_dev_v4_is_read_as_written() -> None:
    assert_read_as_written(load(CORPUS), KNOWN_NO_READING)


if __name__ == "__main__":
    report(load(CORPUS))
