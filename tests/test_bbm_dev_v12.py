"""Development corpus v12 for the BBM answer reader (issue 29, point 3, branch h29r8, 2026-12-04).

tests/data/bbm_dev_v12.jsonl holds 48 phrasings written on branch h29r8 for the rule families
added while v10 (bbm_heldout_v10.jsonl, held out until measured on h29r6 and h29r7, tuning
since) was read. They are new phrasings, not copies of v10's rows, by the conventions of
tests/data/bbm_heldout_v3.md, in both directions (`guard-` ids: the neighbour that must keep
its reading):
- a denied origin ("does not stem from / come from / trace back to Thought 4", "is not caused
  by Thought 5") calls that step no mistake; "traces back to Thought 3" places the mistake;
  a denied origin alone is `ambiguous`;
- a lone "N." answer line and why (its arithmetic set right: "= 5, not 4", "should be 12",
  "instead of 8", or a part called wrong) is N; not when the reason says "correct", hedges or
  names another step, nor in a numbered walk;
- headings "**Verdict**", "## Result", "### Final verdict", "## Conclusion" mark the answer
  under them (and conflict with a step called wrong or right above them);
- the reason after "The mistake is in Thought 3: …" may call a part fine ("…, which is
  correct, but …"); "Thought 2 does X correctly, but the total is off" calls the step wrong;
  "the first product … the second is not" is the second product, not Thought 2;
- a sentence against a JSON object's step, and a step answer against a trailing bare "No",
  are `ambiguous`; a later step "also" wrong beside the object is no other answer;
- "It is tempting to blame Thought 5, …" claims nothing;
- Japanese "ステップ4に誤りがあります" / "思考6には間違いがあります" (a mistake in the step);
- step answers of only ✅ and ❌; French "Oui" / a closing "Non" line.
Measured once when written, on the reader before the changes (commit eb7ddc3): 25 / 11 / 8 /
4 (52.1 %) — agree / no reading / other step / guessed. A tuning corpus: every row must be
read as written.
Report: `.venv/bin/python -m tests.test_bbm_dev_v12`.
"""

from __future__ import annotations

from tests.bbm_corpus import assert_read_as_written, check_well_formed, load, report

CORPUS = "bbm_dev_v12.jsonl"


def test_dev_v12_is_well_formed() -> None:
    check_well_formed(load(CORPUS), min_rows=48, prefix="12")


def test_dev_v12_is_read_as_written() -> None:
    assert_read_as_written(load(CORPUS))


if __name__ == "__main__":
    report(load(CORPUS))
