"""Versioned prompt templates for the three mistake-finding methods (data/prompts/bbm/*.txt).

A template file has `#` comment lines at the top, then a `[system]` and a `[user]` section. The
template id (`bbm/direct_trace_v1`) is stored with every run so a result can be traced to the
exact wording. Placeholders are substituted in one pass and only known names are touched, so
braces inside a Dyck-language trace are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from core.storage import PROJECT_ROOT

PROMPTS_DIR = PROJECT_ROOT / "data" / "prompts" / "bbm"
METHODS: tuple[str, ...] = ("direct_trace", "direct_step", "cot_step")
METHOD_LABELS = {"direct_trace": "Direct (trace)", "direct_step": "Direct (step)",
                 "cot_step": "CoT (step)"}
DEFAULT_VERSION = "v1"
_PLACEHOLDER = re.compile(r"\{(input|trace|step|n_steps)\}")


@dataclass(frozen=True)
class Template:
    template_id: str
    system: str
    user: str

    def messages(self, values: dict[str, str]) -> list[dict[str, str]]:
        def fill(text: str) -> str:
            return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)

        out = []
        if self.system.strip():
            out.append({"role": "system", "content": fill(self.system).strip()})
        out.append({"role": "user", "content": fill(self.user).strip()})
        return out


def template_path(method: str, version: str = DEFAULT_VERSION) -> Path:
    return PROMPTS_DIR / f"{method}_{version}.txt"


def parse_template(text: str, template_id: str) -> Template:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if current is None and (stripped.startswith("#") or not stripped):
            continue
        if stripped in ("[system]", "[user]"):
            current = stripped[1:-1]
            sections[current] = []
            continue
        if current is None:
            raise ValueError(f"{template_id}: text before the first [system]/[user] section")
        sections[current].append(line)
    if "user" not in sections:
        raise ValueError(f"{template_id}: no [user] section")
    return Template(template_id, "\n".join(sections.get("system", [])),
                    "\n".join(sections["user"]))


@lru_cache(maxsize=32)
def load_template(method: str, version: str = DEFAULT_VERSION) -> Template:
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    path = template_path(method, version)
    if not path.is_file():
        known = sorted(p.stem for p in PROMPTS_DIR.glob(f"{method}_*.txt"))
        raise ValueError(f"no template {path.name}; available: {', '.join(known) or 'none'}")
    return parse_template(path.read_text(encoding="utf-8"), f"bbm/{method}_{version}")


def numbered_trace(steps: list[str], upto: int | None = None) -> str:
    """`Thought 1: …` lines (the paper's signposting), optionally only steps 1..upto."""
    shown = steps if upto is None else steps[:upto]
    return "\n".join(f"Thought {i}: {s}" for i, s in enumerate(shown, start=1))


def trace_values(question: str, steps: list[str]) -> dict[str, str]:
    return {"input": question, "trace": numbered_trace(steps), "n_steps": str(len(steps))}


def step_values(question: str, steps: list[str], step: int) -> dict[str, str]:
    return {"input": question, "trace": numbered_trace(steps, step), "step": str(step),
            "n_steps": str(len(steps))}


def with_shots(template: Template, values: dict[str, str],
               shots: list[tuple[dict[str, str], str]] = ()) -> list[dict[str, str]]:
    """System, then each exemplar as a user turn with its answer as the assistant turn, then
    the question (few-shot as chat turns, like the paper's chat-format prompts)."""
    messages = template.messages(values)
    turns: list[dict[str, str]] = []
    for shot_values, answer in shots:
        user = template.messages(shot_values)[-1]
        turns += [user, {"role": "assistant", "content": answer}]
    return messages[:-1] + turns + messages[-1:]


def trace_messages(template: Template, question: str, steps: list[str],
                   shots: list[tuple[dict[str, str], str]] = ()) -> list[dict[str, str]]:
    return with_shots(template, trace_values(question, steps), shots)


def step_messages(template: Template, question: str, steps: list[str], step: int,
                  shots: list[tuple[dict[str, str], str]] = ()) -> list[dict[str, str]]:
    """Messages asking about 1-based `step`, showing Thoughts 1..step only."""
    return with_shots(template, step_values(question, steps, step), shots)
