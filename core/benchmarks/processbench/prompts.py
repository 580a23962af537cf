"""The critique request: the paper's template (data/prompts/processbench/critique.v1.txt) filled
with the problem and the steps tagged as run_eval.py's `prepare_input_boxed` tags them, sent as
one user message (the paper applies the model's chat template to exactly that).

processbench/critique_structured.v1 is NOT the paper's protocol: its requests carry a JSON
schema (`response_format`) bounding the answer to an index, for small local models."""

from __future__ import annotations

from typing import Any

from core.engine import templates
from core.engine.structured import one_key_format
from core.engine.templates import Template, TemplateError

BENCHMARK = "processbench"
VARIANT = "critique"  # one protocol: the paper's critique prompt (runs.setting)
DEFAULT_TEMPLATE = templates.make_id(BENCHMARK, VARIANT, 1)


def template_choices() -> list[str]:
    """Every ProcessBench template id: the `--template` choices."""
    return templates.template_ids(BENCHMARK)


def load_template(template_id: str | None = None) -> Template:
    """The template a run uses (default processbench/critique.v1); a ValueError names the
    valid ids for any other spelling."""
    try:
        chosen = templates.choose(template_id or DEFAULT_TEMPLATE, template_choices())
        return templates.load(chosen)
    except TemplateError as exc:
        raise ValueError(str(exc)) from None


def tagged_response(steps: list[str]) -> str:
    """`<paragraph_i>\\nSTEP\\n</paragraph_i>` for each step (0-based), blank-line separated."""
    return "\n\n".join(
        f"<paragraph_{i}>\n{step}\n</paragraph_{i}>" for i, step in enumerate(steps)
    ).strip()


def messages(template: Template, problem: str, steps: list[str]) -> list[dict[str, str]]:
    """The one user message (a `system` section, should a later version have one, first)."""
    values = {"problem": problem, "tagged_response": tagged_response(steps)}
    out = []
    if template.sections.get("system", "").strip():
        out.append({"role": "system", "content": template.render("system", **values).strip()})
    out.append({"role": "user", "content": template.render("user", **values).strip()})
    return out


def response_format(template: Template, n_steps: int) -> dict[str, Any] | None:
    """The OpenAI response_format of a structured template's request (None: free text): the
    earliest wrong paragraph's index, -1 .. n_steps - 1."""
    from core.benchmarks.processbench.parse import STRUCTURED_KEY

    if not templates.is_structured(template.id):
        return None
    index = {"type": "integer", "minimum": -1, "maximum": max(0, n_steps - 1)}
    return one_key_format("processbench_earliest_error", STRUCTURED_KEY, index)
