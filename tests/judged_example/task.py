"""The runner Task of the judged example: ask the model each question, then the judge (the
run's `default` judging; `rescore` repeats the judging later with any judge)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.engine.client import CallFailed
from core.engine.results import Response
from core.engine.task import RunContext, UnitResult, WorkUnit

from . import prompts, record


@dataclass
class JudgedTask:
    variant: str = "plain"
    judge_template: str = prompts.DEFAULT_JUDGE_TEMPLATE
    benchmark: str = "judged"
    needs_judge: bool = True
    template_id: str = prompts.ASK_TEMPLATE

    def params(self) -> dict[str, Any]:
        return {"judge_template": prompts.judge_template_id(self.judge_template)}

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        return [WorkUnit(str(i), self.variant) for i in items["item_id"]]

    async def process(
        self,
        unit: WorkUnit,  # noqa: ARG002 - the Task protocol; one unit per item here
        item: dict,
        ctx: RunContext,
    ) -> UnitResult:
        messages = prompts.ask_messages(item)
        try:
            answer = await ctx.model.chat(messages, max_tokens=128)
        except CallFailed as exc:
            return UnitResult(Response.failed(str(exc), attempts=exc.attempts, messages=messages))
        response = Response.answered(messages, answer)
        verdict = await record.judge(
            ctx.judge or ctx.model, item, answer.text, template=self.judge_template
        )
        return UnitResult(response, verdict)
