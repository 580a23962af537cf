"""Table-driven corpus of answer formats seen from real models, for the BBM parser
(core/benchmarks/bbm/parse.py) and the ErrorBench parser and extraction (core/benchmarks/errorbench/parsing.py,
extract.py). Each row is one answer and what a careful reader takes from it."""

from __future__ import annotations

import pandas as pd
import pytest

from core.benchmarks.bbm.parse import parse_step_answer, parse_trace_answer
from core.benchmarks.errorbench.extract import find_quotes
from core.benchmarks.errorbench.metrics import unparsed_by_run
from core.benchmarks.errorbench.parse import parse_response

U, OOR = "unparsable", "out_of_range"

# (id, answer, expected: a 1-based step, None for "no mistake", U or OOR); traces have 8 steps
TRACE = [
    ("bare", "3", 3),
    ("bare-parens", "(3)", 3),
    ("colon-step", "The first mistake is in step: 2", 2),
    ("hash-step", "Step #2", 2),
    ("bold-step", "**Step 2**", 2),
    ("bold-number", "**2**", 2),
    ("answer-thought", "Answer: Thought 3", 3),
    ("answer-number", "Answer: 3", 3),
    ("final-answer-after-reasoning", "Thought 2 looks fine.\nFinal answer: 5", 5),
    ("n-equals", "N = 3", 3),
    ("trailing-explanation", "3. Thought 3 wrongly sorts the list.", 3),
    ("step-is-incorrect", "Thought 4 is incorrect because it skips a word.", 4),
    ("mistake-in-thought", "The mistake is in Thought 2, where the model miscounts.", 2),
    ("mistake-then-text", "I think there is a mistake in Thought 7. The stack should be [ {.", 7),
    ("first-incorrect-is", "The first incorrect thought is Thought 2.", 2),
    ("label-colon", "First mistake: Thought 2", 2),
    ("list-dash", "- Thought 1: correct\n- Thought 2: correct\n- Thought 3: incorrect", 3),
    (
        "list-numbered",
        "1. Thought 1 is correct.\n2. Thought 2 is correct.\n3. Thought 3 is wrong.",
        3,
    ),
    ("words-number", "The first mistake is in step three.", 3),
    ("words-thought", "Thought five", 5),
    ("words-ordinal", "the second thought is wrong", 2),
    ("mistake-hash", "Mistake at thought #4", 4),
    ("no", "No", None),
    ("no-bold", "**No**", None),
    ("no-code", "`No`", None),
    ("no-answer", "Answer: No", None),
    ("no-mistake", "No mistake", None),
    ("no-mistakes-found", "No mistakes found.", None),
    ("none", "None", None),
    ("there-are-no", "There are no mistakes.", None),
    ("no-comma-explanation", "No, there is no mistake.", None),
    ("no-mistake-in-sequence", "There is no mistake in this sequence.", None),
    ("none-of-the-thoughts", "none of the thoughts contain a mistake", None),
    ("all-correct", "All steps are correct.", None),
    ("no-then-task-answer", "No. The answer is 0.", None),
    ("empty", "", U),
    # "N/A": no step applies, i.e. no mistake (was U until 2026-12-04; bbm_heldout_v4 reads it so)
    ("na", "N/A", None),
    ("cannot-tell", "I cannot determine.", "ambiguous"),
    ("zero", "0", OOR),
    ("thought-zero", "Thought 0", OOR),
    ("beyond-last", "12", OOR),
    ("beyond-last-words", "The mistake is in step twelve.", OOR),
]


@pytest.mark.parametrize(
    "text,expected", [(t, e) for _, t, e in TRACE], ids=[i for i, _, _ in TRACE]
)
def test_bbm_trace_answers(text: str, expected) -> None:
    got = parse_trace_answer(text, 8)
    if expected in (U, OOR, "ambiguous"):
        assert got.status == expected
        assert got.index is None or got.status == OOR
    else:
        assert got.status == "ok"
        assert got.step == expected


# (id, answer, reasoning (cot_step), expected 'yes' | 'no' | 'ambiguous' | 'unparsable')
STEP = [
    ("yes", "Yes", False, "yes"),
    ("no", "No", False, "no"),
    ("no-bold", "**No**", False, "no"),
    ("yes-explained", "Yes, the step correctly pops the bracket.", False, "yes"),
    ("no-explained", "No. The stack should be [ {.", False, "no"),
    ("answer-yes", "Answer: Yes", False, "yes"),
    ("no-mistake-means-yes", "There is no mistake in this step.", False, "yes"),
    ("step-is-correct", "Thought 3 is correct.", False, "yes"),
    ("step-is-incorrect", "Thought 3 is incorrect.", False, "no"),
    # issue 29: a hedge or claims that disagree are `ambiguous`, kept apart from unparsable
    ("both-words", "It could be yes or no.", False, "ambiguous"),
    ("garbage", "Hmm, hard to say.", False, "ambiguous"),
    ("cot-final-answer", "Checking the sum: 3 + 4 = 7, as stated.\nAnswer: Yes", True, "yes"),
    (
        "cot-paper-style",
        (
            "Comment 1: checking.\nComment 2: stack: < [ < is incorrect, so "
            "Thought 7 is incorrect. No"
        ),
        True,
        "no",
    ),
    ("cot-verdict", "Let me redo it. The count is off.\nVerdict: No", True, "no"),
    (
        "cot-echo-instruction",
        'Reply "Answer: Yes" if correct or "Answer: No" if not.',
        True,
        "unparsable",
    ),
    # after reasoning only an explicit verdict counts: "incorrect" appears in any reasoning
    (
        "cot-no-verdict",
        "The step recomputes the stack and it seems incorrect somewhere.",
        True,
        "ambiguous",
    ),
    ("cot-nothing", "Let me think about the brackets.", True, "unparsable"),
]


@pytest.mark.parametrize(
    "text,reasoning,expected", [(t, r, e) for _, t, r, e in STEP], ids=[i for i, _, _, _ in STEP]
)
def test_bbm_step_answers(text: str, reasoning: bool, expected: str) -> None:
    assert parse_step_answer(text, reasoning=reasoning) == expected


# (id, response, reported n̂, how, number of ERROR lines, unparsed)
EB = [
    ("plain", "ERROR 1: a\nERROR 2: b\nTOTAL ERRORS FOUND: 2", 2, "total", 2, False),
    ("bold", "**ERROR 1:** a\n**TOTAL ERRORS FOUND:** 1", 1, "total", 1, False),
    ("heading", "### ERROR 1: a\nTOTAL ERRORS FOUND: **1**", 1, "total", 1, False),
    ("dash-list-no-total", "- ERROR 1: a\n- ERROR 2: b", 2, "error_lines", 2, False),
    ("numbered-list", "1. ERROR 1: a\n2. ERROR 2: b\nTOTAL ERRORS FOUND: 2", 2, "total", 2, False),
    ("hash-and-equals", "Error #1: a\nTotal errors found = 1", 1, "total", 1, False),
    ("paren-and-words", "ERROR 1) a\nTOTAL ERRORS FOUND: three", 3, "total", 1, False),
    (
        "dashes",
        "ERROR 1 - a\nERROR 2 – b\nTOTAL ERRORS FOUND: 2 (two errors)",
        2,
        "total",
        2,
        False,
    ),
    (
        "trailing-chat",
        "ERROR 1: a\nTOTAL ERRORS FOUND: 1\n\nLet me know if you need more help!",
        1,
        "total",
        1,
        False,
    ),
    ("miscount", "ERROR 1: a\nERROR 2: b\nERROR 3: c\nTOTAL ERRORS FOUND: 2", 2, "total", 3, False),
    ("total-zero", "TOTAL ERRORS FOUND: 0", 0, "total", 0, False),
    ("no-errors-found", "No errors found.", 0, "no_errors", 0, False),
    ("has-no-errors", "The passage has no grammatical errors.", 0, "no_errors", 0, False),
    ("there-are-no", "There are no errors in this passage.", 0, "no_errors", 0, False),
    ("fine", "The passage is fine", 0, "error_lines", 0, True),
    ("empty", "", 0, "error_lines", 0, True),
    ("list-without-keyword", "Errors:\n1. a\n2. b\nTotal: 2", 0, "error_lines", 0, True),
]


@pytest.mark.parametrize(
    "text,reported,how,lines,unparsed", [r[1:] for r in EB], ids=[r[0] for r in EB]
)
def test_errorbench_responses(text, reported, how, lines, unparsed) -> None:
    r = parse_response(text)
    assert (r.reported, r.how, r.n_error_lines, r.unparsed) == (reported, how, lines, unparsed)


# (id, description, (src, corr, pattern))
QUOTES = [
    ("arrow", '"their" -> "there" (spelling)', ("their", "there", "pair")),
    ("curly-unicode-arrow", "“their” → “there”", ("their", "there", "pair")),
    ("single-should-be", "'their' should be 'there'", ("their", "there", "pair")),
    ("changed-to", '"their" should be changed to "there"', ("their", "there", "pair")),
    ("bold-quotes", '**"their"** -> **"there"**', ("their", "there", "pair")),
    ("replace-with", 'Replace "their" with "there"', ("their", "there", "pair")),
    ("change-to", 'Change "their" to "there"', ("their", "there", "pair")),
    ("free-quoted-fragment", 'Subject-verb agreement in "they is".', ("they is", None, "src_only")),
    ("free-unquoted", "is -> are (subject-verb agreement)", (None, None, "none")),
]


@pytest.mark.parametrize(
    "text,expected", [(t, e) for _, t, e in QUOTES], ids=[i for i, _, _ in QUOTES]
)
def test_errorbench_quotes(text: str, expected: tuple) -> None:
    assert find_quotes(text) == expected


def test_unparsed_share_per_run_hand_case() -> None:
    flat = pd.DataFrame(
        [
            {"run_id": "a", "model": "m", "ok": True, "unparsed": True},
            {"run_id": "a", "model": "m", "ok": True, "unparsed": False},
            {"run_id": "a", "model": "m", "ok": False, "unparsed": None},  # failed: not counted
            {"run_id": "b", "model": "s", "ok": True, "unparsed": False},
            {"run_id": "b", "model": "s", "ok": True, "unparsed": False},
            {"run_id": "b", "model": "s", "ok": True, "unparsed": False},
            {"run_id": "b", "model": "s", "ok": True, "unparsed": False},
            {"run_id": "b", "model": "s", "ok": True, "unparsed": True},  # 1 of 5 = 20%: warns
            {"run_id": "c", "model": "t", "ok": True, "unparsed": False},
        ]
    )
    out = unparsed_by_run(flat).set_index("run_id")
    assert (out["responses"]["a"], out["unparsed"]["a"]) == (2, 1) and out.loc["a", "warn"]
    assert out.loc["b", "share"] == pytest.approx(0.2) and out.loc["b", "warn"]
    assert not out.loc["c", "warn"]
