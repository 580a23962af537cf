"""Mis-prompt's playground role (core/services/playground/ runs the exchange).

The prompt as is (proactive) and wrapped in the error-handling instruction (passive) under a
setting, judged by the six-label LLM judge with a chosen judge template; the rationales and the
inconsistency flag are read from the Result's metadata (record.py writes them there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.benchmarks.misprompt import prompts
from core.benchmarks.misprompt.record import judge
from core.benchmarks.misprompt.taxonomy import LABEL_HELP
from core.engine.results import Result
from core.services.playground import PlaygroundRole


def messages(item: Mapping[str, Any], setting: str, passive: bool) -> list[dict[str, str]]:
    """The setting's messages, with the error-handling instruction when passive."""
    return prompts.build_messages(item, setting, passive=passive)


def judge_template_id(template: str | None) -> str:
    """'judge.v1' -> 'misprompt/judge.v1' (None: the default template)."""
    return prompts.judge_template_id(template)


def template_id(setting: str, passive: bool) -> str:
    return prompts.template_id(setting, passive)


def rationale(result: Result, label: str) -> str:
    """The judge's reason for one label, from the record's metadata."""
    rationales = (result.metadata or {}).get("rationales") or {}
    return str(rationales.get(label, "") or "") if isinstance(rationales, Mapping) else ""


def warning(result: Result) -> str | None:
    if (result.metadata or {}).get("inconsistent"):
        return (
            "⚠️ Inconsistent verdict: an 'accurate' label is true while its 'attempt' is "
            "false (kept as the judge said it)."
        )
    return None


ROLE: PlaygroundRole = PlaygroundRole(
    settings=prompts.SETTINGS,
    default_setting="zero-shot",
    messages=messages,
    judge=judge,
    judge_templates=prompts.judge_templates,
    default_judge_template=prompts.DEFAULT_JUDGE_TEMPLATE,
    judge_template_id=judge_template_id,
    template_id=template_id,
    rationale=rationale,
    warning=warning,
    label_help=LABEL_HELP,
    setting_label="Setting",
    judge_template_help="misprompt/judge.v2 (default): the paper's C.1 definitions (accurate "
    "identification = right category AND location; guidance = how to avoid similar errors), "
    "both 'accurate' labels read alike on control questions. misprompt/judge.v1: the earlier "
    "wording (see docs/benchmarks.md, Mis-prompt runs).",
    legacy_judge_template="misprompt/judge.v1",
)
