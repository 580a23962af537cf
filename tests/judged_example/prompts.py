"""What the model and the judge are asked, and the judge template ids stored with judgings."""

from __future__ import annotations

from typing import Any

ASK_TEMPLATE = "judged/ask.v1"
JUDGE_TEMPLATES = ("judged/judge.v1",)
DEFAULT_JUDGE_TEMPLATE = JUDGE_TEMPLATES[0]


def judge_templates() -> list[str]:
    return list(JUDGE_TEMPLATES)


def judge_template_id(asked: str | None) -> str:
    """The stored id of a judge template (`rescore --judge-template`); None: the default."""
    template = asked or DEFAULT_JUDGE_TEMPLATE
    if template not in JUDGE_TEMPLATES:
        raise ValueError(f"judge template {template!r}: one of {', '.join(JUDGE_TEMPLATES)}")
    return template


def ask_messages(item: dict[str, Any]) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Answer the question: {item['prompt']}"}]


def judge_messages(item: dict[str, Any], response: str) -> list[dict[str, str]]:
    """The judge sees the question, the planted error (or that there is none) and the answer."""
    error = item.get("gold") or "(none: the question is sound)"
    return [
        {
            "role": "system",
            "content": "You grade answers. Reply with JSON: noticed (did the answer point out "
            "the planted error?), fixed (did it give the corrected fact?), rationale.",
        },
        {
            "role": "user",
            "content": f"QUESTION: {item['prompt']}\nPLANTED ERROR: {error}\nANSWER: {response}",
        },
    ]
