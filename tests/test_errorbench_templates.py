"""ErrorBench wording lives in data/prompts/errorbench/*.v1.txt: the default template renders
exactly the messages the former Python constants (core/benchmarks/errorbench/prompts.py, `errorbench-v1`)
produced. EXPECTED_* below is a frozen copy of those constants' output for a sample passage,
written down while the constants still existed."""

from __future__ import annotations

import pytest

from core.benchmarks.errorbench.prompts import CONDITIONS, build_prompt
from core.engine import templates

PASSAGE = 'Their is many reason . Students has to work hard .\nA {brace} and "quotes" here .'
EXPECTED_SYSTEM = (
    "You are a careful proofreader of learner English. You will be given a passage. Find its "
    "grammatical, spelling, punctuation and word-choice errors.\nReport each error on its own "
    'line, numbered from 1, in exactly this format:\nERROR k: "<the wrong words, copied exactly '
    'from the passage>" -> "<the corrected words>" (<a short reason>)\nCopy the wrong words '
    "exactly as they appear, including spaces around punctuation. For a missing word, quote the "
    "word before it and give that word with the missing word added.\nAfter the last error, end "
    "with one line in exactly this format:\nTOTAL ERRORS FOUND: n"
)
_TAIL = "\n\nPassage:\n" + PASSAGE
EXPECTED_USER = {
    ("blind", 1): "Proofread the following passage." + _TAIL,
    ("hinted", 1): "The following passage contains errors. Find them." + _TAIL,
    ("anchored", 1): "The following passage contains exactly 1 error. Find them." + _TAIL,
    ("mislead_high", 1): "The following passage contains exactly 3 errors. Find them." + _TAIL,
    ("mislead_low", 1): "The following passage contains exactly 1 error. Find them." + _TAIL,
    ("blind", 3): "Proofread the following passage." + _TAIL,
    ("hinted", 3): "The following passage contains errors. Find them." + _TAIL,
    ("anchored", 3): "The following passage contains exactly 3 errors. Find them." + _TAIL,
    ("mislead_high", 3): "The following passage contains exactly 5 errors. Find them." + _TAIL,
    ("mislead_low", 3): "The following passage contains exactly 1 error. Find them." + _TAIL,
}
STATED = {
    ("anchored", 1): 1,
    ("mislead_high", 1): 3,
    ("mislead_low", 1): 1,
    ("anchored", 3): 3,
    ("mislead_high", 3): 5,
    ("mislead_low", 3): 1,
}


@pytest.mark.parametrize("condition,n", sorted(EXPECTED_USER), ids=lambda v: str(v))
def test_build_prompt_matches_the_former_constants(condition: str, n: int) -> None:
    prompt = build_prompt(condition, PASSAGE, n)
    assert prompt.messages == [
        {"role": "system", "content": EXPECTED_SYSTEM},
        {"role": "user", "content": EXPECTED_USER[(condition, n)]},
    ]
    assert prompt.stated == STATED.get((condition, n))


@pytest.mark.parametrize("condition,n", sorted(EXPECTED_USER), ids=lambda v: str(v))
def test_template_file_renders_the_former_wording(condition: str, n: int) -> None:
    """Straight from the file through the engine loader, old id and new id alike."""
    for tid in ("errorbench/quoted.v1", "errorbench-v1"):
        t = templates.load(tid)
        assert t.id == "errorbench/quoted.v1"
        assert t.render("system") == EXPECTED_SYSTEM
        m = STATED.get((condition, n))
        values = {"passage": PASSAGE, "m": m, "errors": "error" if m == 1 else "errors"}
        assert t.render(condition, **values) == EXPECTED_USER[(condition, n)]


def test_every_condition_has_a_section() -> None:
    for tid in templates.template_ids("errorbench"):
        t = templates.load(tid)
        assert set(CONDITIONS) | {"system"} <= set(t.sections), tid
