"""The shared system prompt and the five user-prompt conditions (SPEC §2), from versioned template
files data/prompts/errorbench/<name>.v<N>.txt (engine format and loader: core/engine/templates.py).

A template has a `system` section and one section per condition; the conditions differ only in
the one sentence about errors, so any change in behaviour comes from that sentence. The paper's
exact wording (its Figures 7–8) is not in the text we have; ours are:
  errorbench/quoted.v1 (default) — ERROR lines as a quoted pair "wrong" -> "corrected"; runs
      before the one-template format stored it as `errorbench-v1`;
  errorbench/free.v1 — ERROR lines as free descriptions, the paper's format (SPEC §2 extraction
      then finds fewer locatable edits).
  errorbench/structured.v1 — NOT the paper's protocol: JSON output bounded by a response_format
      schema (response_format below), for small local models whose free text cannot be read.
`hinted` ("contains errors", no number) is this project's choice for the paper's fifth condition.
Change wording only by adding a new version file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.benchmarks.errorbench import CONDITIONS  # declared with the benchmark (re-exported)
from core.engine import templates
from core.engine.templates import Template, TemplateError

BENCHMARK = "errorbench"
DEFAULT_TEMPLATE = "errorbench/quoted.v1"
TEMPLATE_ID = DEFAULT_TEMPLATE  # the default, kept under its former name for callers
TEMPERATURE = 0.0
MAX_TOKENS = 800

CONDITION_NOTES = {
    "blind": "no count, no claim that errors exist",
    "hinted": "says the passage has errors, no number (this project's choice for the fifth "
    "condition, whose wording the paper does not give)",
    "anchored": "states the true count N",
    "mislead_high": "states M = N + 2",
    "mislead_low": "states M = max(1, N − 2)",
}
TEMPLATE_NOTES = {
    "quoted": 'ERROR lines as a quoted pair "wrong" -> "corrected" (default; locatable)',
    "free": "ERROR lines as free descriptions (the paper's format)",
    "structured": "JSON bounded by a response_format schema, for small local models — "
    "NOT the paper's protocol",
}
# The structured template's bounds. Without them SmolLM2 rambles past max_tokens and the JSON
# is cut; 12 items leave room for the largest stated count of the sample (mislead_high: N + 2 =
# 9) and a little more, 40 characters hold a few words of a passage.
STRUCTURED_MAX_ITEMS = 12
STRUCTURED_QUOTE_CHARS = 40


def is_structured(template_id: str | None) -> bool:
    return templates.is_structured(template_id or DEFAULT_TEMPLATE)


def answer_schema(
    max_items: int = STRUCTURED_MAX_ITEMS, quote_chars: int = STRUCTURED_QUOTE_CHARS
) -> dict[str, Any]:
    """The structured answer: the errors as quoted pairs (bounded list, bounded quotes), then
    the total the model reports (n̂)."""
    quote = {"type": "string", "maxLength": quote_chars}
    return {
        "type": "object",
        "properties": {
            "errors": {
                "type": "array",
                "maxItems": max_items,
                "items": {
                    "type": "object",
                    "properties": {"wrong": quote, "correct": quote},
                    "required": ["wrong", "correct"],
                    "additionalProperties": False,
                },
            },
            "total": {"type": "integer", "minimum": 0},
        },
        "required": ["errors", "total"],
        "additionalProperties": False,
    }


def response_format(template_id: str | None) -> dict[str, Any] | None:
    """The OpenAI response_format a request with this template carries (None: free text)."""
    if not is_structured(template_id):
        return None
    return {
        "type": "json_schema",
        "json_schema": {"name": "errorbench_errors", "strict": True, "schema": answer_schema()},
    }


def template_choices() -> list[str]:
    """Every ErrorBench template id, the default first."""
    ids = templates.template_ids(BENCHMARK)
    return [DEFAULT_TEMPLATE] + [t for t in ids if t != DEFAULT_TEMPLATE]


def load(template_id: str | None = None) -> Template:
    """An ErrorBench template by stored id (an old `errorbench-v1` too, normalised on read; the
    `--template` flag and the form accept only template_choices()); ValueError names the
    known ones."""
    tid = template_id or DEFAULT_TEMPLATE
    try:
        t = templates.load(tid)
    except TemplateError as exc:
        raise ValueError(f"{exc}; ErrorBench templates: {', '.join(template_choices())}") from None
    if t.benchmark != BENCHMARK:
        raise ValueError(
            f"{tid} is not an ErrorBench template; choose from {', '.join(template_choices())}"
        )
    missing = [s for s in ("system", *CONDITIONS) if s not in t.sections]
    if missing:
        raise ValueError(f"template {t.id} lacks section(s) {', '.join(missing)}")
    return t


def stated_count(condition: str, n: int) -> int | None:
    """The number the prompt states (None for blind/hinted)."""
    if condition == "anchored":
        return n
    if condition == "mislead_high":
        return n + 2
    if condition == "mislead_low":
        return max(1, n - 2)
    if condition in ("blind", "hinted"):
        return None
    raise ValueError(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")


def system_prompt(template_id: str | None = None) -> str:
    return load(template_id).render("system")


def user_prompt(condition: str, passage: str, n: int, template_id: str | None = None) -> str:
    m = stated_count(condition, n)
    return load(template_id).render(
        condition, passage=passage, m=m, errors="error" if m == 1 else "errors"
    )


@dataclass(frozen=True)
class Prompt:
    condition: str
    stated: int | None
    messages: list[dict]


def build_prompt(condition: str, passage: str, n: int, template_id: str | None = None) -> Prompt:
    return Prompt(
        condition,
        stated_count(condition, n),
        [
            {"role": "system", "content": system_prompt(template_id)},
            {"role": "user", "content": user_prompt(condition, passage, n, template_id)},
        ],
    )


def parse_conditions(value: str | None) -> list[str]:
    """'blind,anchored' -> ['blind', 'anchored'] in canonical order; errors name the bad one."""
    if not value:
        return list(CONDITIONS)
    wanted = [c.strip() for c in value.split(",") if c.strip()]
    bad = [c for c in wanted if c not in CONDITIONS]
    if bad:
        raise ValueError(
            f"unknown condition(s) {', '.join(bad)}; choose from {', '.join(CONDITIONS)}"
        )
    return [c for c in CONDITIONS if c in wanted]
