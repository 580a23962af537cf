"""Optional ERRANT re-scoring: edit application, and multi-reference F0.5 on hand-made cases."""

from __future__ import annotations

from core.benchmarks.errorbench.errant_scoring import apply_edits
from core.benchmarks.errorbench.metrics import score_response

PAYLOAD = {
    "n": 2,
    "sentences": [
        {
            "tokens": [
                "People",
                "get",
                "certain",
                "disease",
                "because",
                "of",
                "genetic",
                "changes",
                ".",
            ],
            "annotators": [0, 1],
        },
        {"tokens": ["He", "go", "to", "school", "every", "day", "."], "annotators": [0, 1]},
        {"tokens": ["It", "is", "fine", "."], "annotators": []},
    ],
    "gold": {
        "0": [[0, 3, 4, "diseases", "Nn"], [1, 1, 2, "goes", "SVA"]],
        "1": [[0, 3, 4, "diseases", "Nn"], [1, 1, 2, "went", "Vt"]],
    },
}


def test_apply_edits_right_to_left_and_skips_clashes():
    tokens = ["in", "house", "we", "eat"]
    assert apply_edits(tokens, [(1, 1, "the"), (1, 2, "houses"), (0, 1, "At")]) == [
        "At",
        "the",
        "houses",
        "we",
        "eat",
    ]
    # the second edit overlaps the first and is skipped; deletion removes the token
    assert apply_edits(tokens, [(0, 2, "inside"), (1, 2, "home"), (3, 4, "")]) == ["inside", "we"]
    # two insertions at one point: the first wins
    assert apply_edits(tokens, [(2, 2, "a"), (2, 2, "b")]) == ["in", "house", "a", "we", "eat"]


def needs_errant(fn):  # errant + spaCy model are test dependencies: fail loudly without them
    return fn


def _scores(text: str) -> dict:
    return score_response(text, PAYLOAD, "anchored")


@needs_errant
def test_gold_edits_as_hypothesis_score_perfectly():
    from core.benchmarks.errorbench.errant_scoring import errant_counts

    s = _scores('ERROR 1: "disease" -> "diseases"\nERROR 2: "go" -> "goes"\nTOTAL ERRORS FOUND: 2')
    out = errant_counts([(PAYLOAD, s)])
    assert (out["errant_tp"], out["errant_fp"], out["errant_fn"]) == (2, 0, 0)
    assert out["errant_f05"] == 1.0


@needs_errant
def test_multi_reference_picks_the_better_annotator_per_sentence():
    from core.benchmarks.errorbench.errant_scoring import errant_counts

    # "went" is annotator 1's correction: matched via annotator 1 for that sentence
    s = _scores('ERROR 1: "disease" -> "diseases"\nERROR 2: "go" -> "went"')
    out = errant_counts([(PAYLOAD, s)])
    assert (out["errant_tp"], out["errant_fp"], out["errant_fn"]) == (2, 0, 0)
    # against annotator 0 alone it is one hit, one wrong correction, one miss
    only0 = errant_counts([(PAYLOAD, s)], references=(0,))
    assert (only0["errant_tp"], only0["errant_fp"], only0["errant_fn"]) == (1, 1, 1)


@needs_errant
def test_wrong_edit_and_unlocated_lines():
    from core.benchmarks.errorbench.errant_scoring import errant_counts

    s = _scores('ERROR 1: "certain" -> "some"\nERROR 2: Missing word somewhere')
    out = errant_counts([(PAYLOAD, s)])
    # sentence 0: FP 1 (certain→some), FN 1 (disease); sentence 1: FN 1 (go); the unlocated
    # line has no text to correct, so ERRANT cannot see it
    assert (out["errant_tp"], out["errant_fp"], out["errant_fn"]) == (0, 1, 2)
    assert out["errant_f05"] == 0.0
