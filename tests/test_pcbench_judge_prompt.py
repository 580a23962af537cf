"""PCBench's judge prompt is the authors' template byte for byte (issue 29, point 6).

tests/data/pcbench_authors_judge_prompt.txt holds the string literal of `evaluate_answer_to_ill`
(evaluation/eval.py of github.com/MLGroupJLU/Premise_Critique, its source and commit noted in
its header); the test evaluates it as Python does (escapes, `{{`) and formats it with the
authors' `str.format`, then compares with what our template renders for the same values."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core.benchmarks.pcbench import prompts
from core.engine import templates

FIXTURE = Path(__file__).resolve().parent / "data" / "pcbench_authors_judge_prompt.txt"


def authors_template() -> str:
    literal = FIXTURE.read_text(encoding="utf-8").split("--- literal ---\n", 1)[1]
    value = ast.literal_eval(literal)
    assert isinstance(value, str)
    return value


@pytest.mark.parametrize(
    "conflict_place, response",
    [
        ("The premise says 7 apples but later 9.", "The answer is 42."),
        ("a {brace} and {{two}}", "Line 1\n\nLine 3 {response}\n"),
    ],
)
def test_default_judge_prompt_is_the_authors_bytes(conflict_place: str, response: str) -> None:
    expected = authors_template().format(conflict_place=conflict_place, response=response)
    item = {"gold": conflict_place}
    got = prompts.judge_messages(item, response, prompts.DEFAULT_JUDGE_TEMPLATE)
    assert len(got) == 1 and got[0]["role"] == "user"
    assert got[0]["content"].encode("utf-8") == expected.encode("utf-8")
    assert expected.startswith("\n") and expected.endswith("```\n")


def test_released_v1_is_kept_as_it_was() -> None:
    """judge.v1 stays selectable and renders as before (equal to the authors' after strip)."""
    assert "pcbench/judge.v1" in prompts.judge_templates()
    v1 = templates.load("pcbench/judge.v1").render("user", conflict_place="X", response="Y")
    expected = authors_template().format(conflict_place="X", response="Y")
    assert v1 != expected and v1 == expected.strip("\n")
