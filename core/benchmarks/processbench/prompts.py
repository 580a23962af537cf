"""The critique request: the paper's template (data/prompts/processbench/critique.v1.txt) filled
with the problem and the steps tagged as run_eval.py's `prepare_input_boxed` tags them, sent as
one user message (the paper applies the model's chat template to exactly that)."""

from __future__ import annotations

from core.engine import templates
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
