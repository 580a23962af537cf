"""Development corpus v3 for the BBM answer reader (issue 29, point 3, this round).

tests/data/bbm_dev_v3.jsonl holds phrasings written for this round's reader changes — answer
markers LaTeX's \\boxed{…}, "A:" and "Output:"; JSON fields a model names for the first error
(first_error, error_step, …: null = "No") and whole-trace flags ({"has_error": false}); a
checklist whose items are only a verdict mark (the k-th item is thought k); "no errors until
Thought 5" (the step after `until` is the first wrong one). It is the corpus the changes were
developed on, kept apart from the held-out corpus tests/data/bbm_heldout_v2.jsonl (which they
were only measured on, tests/test_bbm_heldout_v2.py). Each row fails on the reader before
these changes except the ones that check it does not guess.

Two values were changed on 2026-12-04 to the conventions of bbm_heldout_v2.md and issue 29
(they disagreed): a JSON number is the N of "Thought N" whatever its field is called
({"mistake_index": 2} → 2, not `ambiguous`), and an all-✅ checklist says there is no mistake
("* ✅" three times → null, not `ambiguous`).
"""

from __future__ import annotations

from tests.bbm_corpus import kind, load, reading


def test_the_dev_corpus_is_read_as_written() -> None:
    rows = load("bbm_dev_v3.jsonl")
    assert len(rows) == 18
    wrong = [(r["id"], r["expected"], reading(r)) for r in rows]
    wrong = [w for w in wrong if kind(w[2], w[1]) != "agree"]
    assert not wrong, wrong
