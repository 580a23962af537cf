"""The runner Task of PCBench: ask the model each flawed problem in each of the run's variants
(proactive: as is; assisted: with the paper's check-the-premises instruction), then the judge
(the run's `default` judging; `rescore` repeats the judging later with any judge).

One unit per (problem, variant), problem-major, so a run with both variants holds the same
problems both ways (the paired comparison of the Proactive vs passive page).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.benchmarks.pcbench import MODES, NAME, VARIANTS, prompts, record
from core.engine.records import fields_of
from core.engine.results import Response
from core.engine.task import RunContext, UnitResult, WorkUnit, ask

DEFAULT_MAX_TOKENS = 512  # as Mis-prompt; the paper let its models write up to 32768


def check_variants(variants: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The variants in canonical order; an unknown or empty choice is a ValueError."""
    bad = [v for v in variants if v not in VARIANTS]
    if bad or not variants:
        raise ValueError(f"variants must be among {', '.join(VARIANTS)} (got {list(variants)})")
    return tuple(v for v in VARIANTS if v in variants)


def run_mode(variants: tuple[str, ...]) -> str:
    """runs.mode: proactive, passive (assisted only) or proactive+passive (both)."""
    return "+".join(dict.fromkeys(MODES[v] for v in variants))


@dataclass
class PcbenchTask:
    variants: tuple[str, ...] = VARIANTS
    judge_template: str = prompts.DEFAULT_JUDGE_TEMPLATE
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    judge_max_tokens: int = record.JUDGE_MAX_TOKENS
    benchmark: str = NAME
    needs_judge: bool = True

    def __post_init__(self) -> None:
        self.variants = check_variants(self.variants)
        self.judge_template = prompts.judge_template_id(self.judge_template)

    @property
    def template_id(self) -> str:
        return prompts.template_id(self.variants)

    @property
    def mode(self) -> str:
        return run_mode(self.variants)

    def params(self) -> dict[str, Any]:
        asked = fields_of(self, "temperature", "max_tokens", "judge_max_tokens", "judge_template")
        return asked | {"variants": list(self.variants)}

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        return [WorkUnit(str(i), v) for i in items["item_id"] for v in self.variants]

    async def process(self, unit: WorkUnit, item: dict, ctx: RunContext) -> UnitResult:
        messages = prompts.ask_messages(item, unit.variant)
        answer = await ask(ctx, messages, temperature=self.temperature, max_tokens=self.max_tokens)
        if isinstance(answer, UnitResult):  # the call failed
            return answer
        response = Response.answered(
            messages, answer, scores={"finish_reason": answer.finish_reason}
        )
        verdict = await record.judge(
            ctx.judge or ctx.model,
            item,
            answer.text,
            template=self.judge_template,
            max_tokens=self.judge_max_tokens,
        )
        return UnitResult(response, verdict)
