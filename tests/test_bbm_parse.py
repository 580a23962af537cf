"""Reading step numbers / "No" / Yes-No from model answers, including awkward phrasings."""

from __future__ import annotations

import pytest

from core.benchmarks.bbm.parse import first_no, parse_step_answer, parse_trace_answer
from core.benchmarks.bbm.task import trace_scores


@pytest.mark.parametrize(
    "text, step",
    [
        ("3", 3),
        ("3.", 3),
        ("(3)", 3),
        ("Thought 3", 3),
        ("**Step 4**", 4),
        ("step #2", 2),
        ("The first mistake is in step three.", 3),
        ("Mistake: Thought 6", 6),
        ("Step 2 is incorrect because 4 + 3 is not 8.", 2),
        ("Thought 1 is correct. Thought 2 is correct. Thought 3 is wrong.", 3),
        ("No, the mistake is in Thought 2.", 2),
        ("Let me check. Thought 1 is fine. Thought 2 ok.\nAnswer: 5", 5),
        ("The error occurs at thought 4; the rest follows from it.", 4),
        ("`2`", 2),
        # seen from SmolLM2-135M on the sample
        ("The first Thought contains a logical mistake. The correct answer is (C).", 1),
        ("Answer: 9\nActually thought 2 is wrong", 2),
    ],
)
def test_trace_answer_step(text, step):
    parsed = parse_trace_answer(text, n_steps=6)
    assert parsed.status == "ok" and parsed.step == step and parsed.index == step - 1


@pytest.mark.parametrize(
    "text",
    [
        "No",
        "no.",
        "NO",
        "**No**",
        "None",
        "No mistakes.",
        "There are no mistakes in the trace.",
        "All steps are correct.",
        "The answer is No",
        "Answer: No",
        "I checked every Thought.\nThere is no error in these steps.",
        # seen from SmolLM2-135M: a bare "No" first, then the task's own answer restated
        "No\n\nThe answer is 0.",
        "No\n\nThe answer is (A)",
        "No.\n\nThe answer is 3",
    ],
)
def test_trace_answer_no(text):
    parsed = parse_trace_answer(text, n_steps=6)
    assert parsed.status == "ok" and parsed.step is None and parsed.index is None


@pytest.mark.parametrize(
    "text, status",
    [
        ("7", "out_of_range"),
        ("0", "out_of_range"),
        ("Step 12", "out_of_range"),
        ("banana", "unparsable"),
        ("", "unparsable"),
        (None, "unparsable"),
        ("I am not sure.", "ambiguous"),
        # issue 29: a claim that names no wrong step is ambiguous (read, not resolvable)
        ("(A)\n\nThe answer is (A) because the first Thought is correct.", "ambiguous"),
    ],
)
def test_trace_answer_unreadable(text, status):
    parsed = parse_trace_answer(text, n_steps=6)
    assert parsed.status == status


@pytest.mark.parametrize(
    "text, reasoning, verdict",
    [
        ("Yes", False, "yes"),
        ("No", False, "no"),
        ("no.", False, "no"),
        ("**Yes**", False, "yes"),
        ("Yes, this step follows.", False, "yes"),
        ("No - 7*3 is 21, not 24.", False, "no"),
        ("The step is correct.", False, "yes"),
        ("This is incorrect.", False, "no"),
        ("There is no mistake in this step.", False, "yes"),
        ("No mistake.", False, "yes"),
        ("Answer: Yes.", False, "yes"),
        ("maybe", False, "ambiguous"),
        ("", False, "unparsable"),
        # reasoning first: the conclusion counts, not an early "no"/"yes" in the reasoning
        ("No wait, let me redo it: 6 - -6 = 12, but the step says 0.\nAnswer: No", True, "no"),
        ("Is 12 - 2 = 10? Yes. Is 10 + 0 right? No, B is wrong.\nAnswer: No", True, "no"),
        ("At first I thought no, but 3*4 = 12 indeed.\nAnswer: Yes", True, "yes"),
        ("Recomputing gives the same list, so the answer is yes", True, "yes"),
        ("Checking... Thought 3 is not correct", True, "no"),
        ("Checking the arithmetic: 7 - 10 = -3, there are no errors here.", True, "yes"),
        # SmolLM2 parroting the instruction is not an answer
        (
            'Check Thought 2. Then finish with one last line, exactly "Answer: Yes" if Thought 2 is '
            'correct or "Answer: No" if it contains a mistake.',
            True,
            "unparsable",
        ),
        (
            '... exactly "Answer: Yes" if Thought 2 is correct or "Answer: No" if not.\nAnswer: Yes',
            True,
            "yes",
        ),
    ],
)
def test_step_answer(text, reasoning, verdict):
    assert parse_step_answer(text, reasoning=reasoning) == verdict


def test_first_no_ignores_later_steps_and_unparsable():
    assert first_no(["yes", "yes", "no", "no"]) == 2
    assert first_no(["yes", "unparsable", "yes"]) is None
    assert first_no(["unparsable", "no"]) == 1
    assert first_no([]) is None


def test_trace_scores_direct_trace():
    s = trace_scores("direct_trace", ["a", "b", "c"], 1, ["Thought 2"])
    assert s["predicted_index"] == 1 and s["parse_status"] == "ok" and s["location_correct"]
    s = trace_scores("direct_trace", ["a", "b", "c"], None, ["No"])
    assert s["predicted_index"] is None and s["location_correct"]
    s = trace_scores("direct_trace", ["a", "b", "c"], None, ["who knows"])
    assert s["parse_status"] == "unparsable" and not s["location_correct"]
    s = trace_scores("direct_trace", ["a", "b", "c"], 2, ["9"])
    assert s["parse_status"] == "out_of_range" and s["predicted_index"] is None
    assert s["predicted_step"] == 9 and not s["location_correct"]


def test_trace_scores_step_methods():
    s = trace_scores("direct_step", list("abcd"), 2, ["Yes", "Yes", "No"])
    assert s["step_answers"] == ["yes", "yes", "no"] and s["predicted_index"] == 2
    assert s["parse_status"] == "ok" and s["location_correct"]
    s = trace_scores("direct_step", list("abcd"), None, ["Yes", "hmm", "Yes", "Yes"])
    assert s["parse_status"] == "partial" and s["n_unparsable_steps"] == 1
    assert s["predicted_index"] is None and s["location_correct"]
    s = trace_scores("direct_step", list("ab"), None, ["hmm", "eh"])
    assert s["parse_status"] == "unparsable" and not s["location_correct"]
    s = trace_scores("cot_step", list("abc"), 0, ["3+4 is 8? no.\nAnswer: No"])
    assert s["predicted_index"] == 0 and s["location_correct"]


# -- issue 20: negation, the sentence that names the mistake, "no mistake" phrasings ----------


@pytest.mark.parametrize(
    "text", ["Not correct.", "not correct", "This is not right.", "Not valid."]
)
def test_step_answer_reads_negation_as_no(text):
    assert parse_step_answer(text) == "no"
    said = text.lower().removeprefix("this is ").rstrip(".")
    assert parse_step_answer(f"Recomputing the list.\nThought 2 is {said}.", True) == "no"


@pytest.mark.parametrize(
    "text, step",
    [
        ("Thought 3 is correct, but Thought 4 contains an error", 4),
        ("Thought 2 and Thought 3 are fine; Thought 7 has the mistake", 7),
        ("The mistake is in the fourth thought.", 4),
        ("Step 5 is not correct.", 5),
    ],
)
def test_trace_answer_names_the_mistaken_thought(text, step):
    parsed = parse_trace_answer(text, n_steps=8)
    assert (parsed.status, parsed.step) == ("ok", step)


@pytest.mark.parametrize(
    "text", ["The sequence is correct.", "Everything is correct.", "I don't see any errors."]
)
def test_trace_answer_no_mistake_phrasings(text):
    parsed = parse_trace_answer(text, n_steps=8)
    assert (parsed.status, parsed.step) == ("ok", None)


def test_trace_answer_out_of_range_stays_apart_from_unparsable():
    assert parse_trace_answer("The mistake is in the ninth thought.", 8).status == "out_of_range"
    assert parse_trace_answer("Thought 3 is correct.", 8).status == "ambiguous"
    assert parse_trace_answer("banana", 8).status == "unparsable"


# -- issue 29: a reader of claims; what it cannot resolve is `ambiguous`, never a guess --------


@pytest.mark.parametrize(
    "text, step",
    [
        # the examples, read as a careful person reads them
        ("The mistake is not in Thought 2; it is in Thought 4.", 4),
        ("- Thought 1: ✅ fine\n- Thought 2: ✅\n- Thought 3: ❌ miscounts", 3),
        ("Thought 1 is fine, but Thought 2 is where it goes wrong.", 2),
        ("| Thought | Verdict |\n|---|---|\n| 1 | correct |\n| 2 | incorrect |", 2),
        ('{"first_wrong_step": 3}', 3),
        ("The error is in Thought 5, not Thought 4.", 5),
        ("Thought 2 doesn't contain an error, Thought 3 does.", 3),
        ("The last thought is wrong.", 8),
    ],
)
def test_trace_reader_resolves_claims(text, step):
    parsed = parse_trace_answer(text, n_steps=8)
    assert (parsed.status, parsed.step) == ("ok", step)


@pytest.mark.parametrize(
    "text",
    [
        "I found zero mistakes.",
        "Nothing is wrong here.",
        "I checked every step and have no error to report.",
        '{"first_wrong_step": null}',
        "None of the thoughts contain a mistake.",
    ],
)
def test_trace_reader_reads_no_mistake(text):
    parsed = parse_trace_answer(text, n_steps=8)
    assert (parsed.status, parsed.step) == ("ok", None)


@pytest.mark.parametrize(
    "text",
    [
        "It could be thought 2 or thought 5, hard to say.",
        "Thought 3 is correct.",
        "Thought 3 is wrong. Thought 3 is correct.",
        "There is a mistake somewhere, but I cannot say where.",
        "There are no mistakes. Thought 4 is wrong.",
        "Thought 2 or Thought 6.",
    ],
)
def test_trace_reader_calls_unresolvable_claims_ambiguous(text):
    parsed = parse_trace_answer(text, n_steps=8)
    assert parsed.status == "ambiguous" and parsed.step is None and parsed.index is None


@pytest.mark.parametrize(
    "text, reasoning, verdict",
    [
        ("The step is fine.", False, "yes"),
        ("Nothing wrong with it.", False, "yes"),
        ("✅", False, "yes"),
        ("❌ the sum is 9", False, "no"),
        ('{"correct": false}', False, "no"),
        ("Yes, it is wrong.", False, "ambiguous"),
        ("It might be correct, or it might not.", False, "ambiguous"),
        ("Maybe.", False, "ambiguous"),
    ],
)
def test_step_reader_claims(text, reasoning, verdict):
    assert parse_step_answer(text, reasoning=reasoning) == verdict


def test_step_structured_template_carries_a_json_schema_and_its_answers_are_read():
    """Issue 29: a structured-output template for the step level, as for the trace level and
    ErrorBench: a JSON schema with one boolean, its answers read as JSON."""
    from core.benchmarks.bbm import prompts
    from core.engine import templates

    assert "bbm/direct_step_structured.v1" in prompts.method_template_ids("direct_step")
    tpl = templates.load("bbm/direct_step_structured.v1")
    fmt = prompts.response_format(tpl, 4)
    assert fmt is not None
    schema = fmt["json_schema"]["schema"]
    assert schema["properties"] == {"step_correct": {"type": "boolean"}}
    assert schema["required"] == ["step_correct"]
    s = trace_scores(
        "direct_step", list("abc"), 1, ['{"step_correct": true}', '{"step_correct": false}']
    )
    assert s["step_answers"] == ["yes", "no"] and s["predicted_index"] == 1
