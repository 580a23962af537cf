"""Messages for the three mistake-finding methods from the versioned templates in
data/prompts/bbm/<method>.v<N>.txt (engine format and loader: core/engine/templates.py).

Each template has a `system` and a `user` section; placeholders {{input}}, {{trace}} (the
numbered Thoughts), {{step}} and {{n_steps}}. The template id (`bbm/direct_trace.v1`) is stored
with every run and is the one spelling `run bbm --template` accepts (it must name the run's
method); ids stored before the one-template format (`bbm/direct_trace_v1`) resolve to the same
files through the aliases it declares (declared.py, read by core.engine.templates.resolve_id).

`bbm/direct_trace_structured.v1` is NOT the paper's protocol: a direct_trace template whose
requests carry a JSON schema (`response_format`: the first wrong step or null), for small local
models whose free text cannot be read (core.engine.templates.is_structured).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.benchmarks.bbm import METHODS  # declared with the benchmark (re-exported)
from core.engine import templates
from core.engine.structured import one_key_format
from core.engine.templates import Template, TemplateError

BENCHMARK = "bbm"
METHOD_LABELS = {
    "direct_trace": "Direct (trace)",
    "direct_step": "Direct (step)",
    "cot_step": "CoT (step)",
}
DEFAULT_VERSION = 1  # a method without --template uses its v1 (what every run so far used)


def template_choices() -> list[str]:
    """Every BBM template id, by method then version: the `--template` choices."""
    return templates.template_ids(BENCHMARK)


def form_template_choices() -> list[str]:
    """The run form's template choices: '' (the method's own v1) first, then every id."""
    return ["", *template_choices()]


def form_template_label(template_id: str) -> str:
    """How the run form shows a template choice (structured ones say they are not the paper's
    protocol)."""
    return templates.label(template_id) if template_id else "the method's own (bbm/<method>.v1)"


def method_template_ids(method: str) -> list[str]:
    """The templates a run of `method` may use: its own and its structured variant."""
    return templates.ids_named(BENCHMARK, method) + templates.ids_named(
        BENCHMARK, f"{method}_structured"
    )


STRUCTURED_KEY = "first_wrong_step"
STEP_STRUCTURED_KEY = "step_correct"  # bbm/direct_step_structured.v1: is the asked step correct


def response_format(template: Template, n_steps: int) -> dict[str, Any] | None:
    """The OpenAI response_format a request with this template carries (None: free text): the
    first wrong step, 1..n_steps, or null for "no mistake"; for a step-level template, whether
    the asked step is correct."""
    if not templates.is_structured(template.id):
        return None
    if template.name.startswith(("direct_step", "cot_step")):
        return one_key_format("bbm_step_verdict", STEP_STRUCTURED_KEY, {"type": "boolean"})
    step = {"type": ["integer", "null"], "minimum": 1, "maximum": max(1, n_steps)}
    return one_key_format("bbm_first_mistake", STRUCTURED_KEY, step)


def default_template(method: str) -> str:
    """The id a run of `method` uses when none is chosen: 'bbm/<method>.v1'."""
    return templates.make_id(BENCHMARK, method, DEFAULT_VERSION)


def load_template(method: str, template_id: str | None = None) -> Template:
    """The template a run of `method` uses: `template_id`, a full id from template_choices()
    that names this method (None = default_template). Any other spelling, or another method's
    template, is a ValueError naming the valid ids."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    own = method_template_ids(method)
    try:
        chosen = templates.choose(
            template_id or default_template(method), own, f"{method} template"
        )
        return templates.load(chosen)
    except TemplateError as exc:
        raise ValueError(str(exc)) from None


def render_messages(template: Template, values: dict[str, str]) -> list[dict[str, str]]:
    """System (when the template has one) and the filled-in user message."""
    out = []
    if template.sections.get("system", "").strip():
        out.append({"role": "system", "content": template.render("system", **values).strip()})
    out.append({"role": "user", "content": template.render("user", **values).strip()})
    return out


def numbered_trace(steps: list[str], upto: int | None = None) -> str:
    """`Thought 1: …` lines (the paper's signposting), optionally only steps 1..upto."""
    shown = steps if upto is None else steps[:upto]
    return "\n".join(f"Thought {i}: {s}" for i, s in enumerate(shown, start=1))


def trace_values(question: str, steps: list[str]) -> dict[str, str]:
    return {"input": question, "trace": numbered_trace(steps), "n_steps": str(len(steps))}


def step_values(question: str, steps: list[str], step: int) -> dict[str, str]:
    return {
        "input": question,
        "trace": numbered_trace(steps, step),
        "step": str(step),
        "n_steps": str(len(steps)),
    }


def with_shots(
    template: Template, values: dict[str, str], shots: Sequence[tuple[dict[str, str], str]] = ()
) -> list[dict[str, str]]:
    """System, then each exemplar as a user turn with its answer as the assistant turn, then
    the question (few-shot as chat turns, like the paper's chat-format prompts)."""
    messages = render_messages(template, values)
    turns: list[dict[str, str]] = []
    for shot_values, answer in shots:
        user = render_messages(template, shot_values)[-1]
        turns += [user, {"role": "assistant", "content": answer}]
    return messages[:-1] + turns + messages[-1:]


def trace_messages(
    template: Template,
    question: str,
    steps: list[str],
    shots: Sequence[tuple[dict[str, str], str]] = (),
) -> list[dict[str, str]]:
    return with_shots(template, trace_values(question, steps), shots)


def step_messages(
    template: Template,
    question: str,
    steps: list[str],
    step: int,
    shots: Sequence[tuple[dict[str, str], str]] = (),
) -> list[dict[str, str]]:
    """Messages asking about 1-based `step`, showing Thoughts 1..step only."""
    return with_shots(template, step_values(question, steps, step), shots)
