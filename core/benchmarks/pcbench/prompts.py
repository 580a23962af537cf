"""What the model and the judge are asked: the variants' templates and the paper's judge
(files under data/prompts/pcbench/, read by core.engine.templates; their sources are named in
them)."""

from __future__ import annotations

from typing import Any

from core.benchmarks.pcbench import VARIANTS
from core.engine import templates

ASK_TEMPLATES = {variant: f"pcbench/{variant}.v1" for variant in VARIANTS}
JUDGE_TEMPLATES = ("pcbench/judge.v2", "pcbench/judge.v1")
DEFAULT_JUDGE_TEMPLATE = JUDGE_TEMPLATES[0]


def judge_templates() -> list[str]:
    return list(JUDGE_TEMPLATES)


def judge_template_id(asked: str | None) -> str:
    """The stored id of a judge template (`run`/`rescore --judge-template`); None: the paper's."""
    return templates.choose(asked or DEFAULT_JUDGE_TEMPLATE, JUDGE_TEMPLATES, "judge template")


def template_id(variants: tuple[str, ...] | list[str]) -> str:
    """The run's stored template id: its variants' ask templates joined by '+'."""
    return "+".join(ASK_TEMPLATES[v] for v in variants)


def ask_messages(item: dict[str, Any], variant: str) -> list[dict[str, str]]:
    """One user message: the flawed problem, assisted with the paper's check instruction."""
    text = templates.load(ASK_TEMPLATES[variant]).render("user", ill_query=item["prompt"])
    return [{"role": "user", "content": text}]


def judge_messages(item: dict[str, Any], response: str, template: str) -> list[dict[str, str]]:
    """The paper's judge prompt: the flaw as its code states it (`gold`) and the response."""
    text = templates.load(template).render(
        "user", conflict_place=item.get("gold") or "", response=response
    )
    return [{"role": "user", "content": text}]
