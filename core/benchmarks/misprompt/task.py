"""The runner Task for Mis-prompt: ask a model every item of a set under a setting, then judge.

One unit per item (variant = the setting). process() sends the setting's messages (passive
mode: wrapped in the error-handling instruction), then `judge()` — the run's default judging,
the same step `python -m core rescore` repeats later with any judge — asks for the six labels;
the response and its verdict are returned together so the runner writes them in one
transaction. A failed judge call leaves the unit unfinished: re-running the
run name processes that item again (model and judge, asked afresh by the runner).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from core.benchmarks.misprompt import judge as judge_mod
from core.benchmarks.misprompt import prompts
from core.benchmarks.misprompt.record import to_result
from core.engine.results import Response, Result
from core.engine.task import RunContext, UnitResult, WorkUnit, ask
from core.store import Store

BENCHMARK = "misprompt"
DEFAULT_MAX_TOKENS = 512


@dataclass
class MispromptTask:
    """Model call + judge call per item; see the module docstring."""

    setting: str = "zero-shot"
    passive: bool = False
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    judge_max_tokens: int = judge_mod.JUDGE_MAX_TOKENS
    benchmark: str = BENCHMARK
    needs_judge: bool = True
    judge_template: str = prompts.DEFAULT_JUDGE_TEMPLATE
    _exemplar_pool: tuple = field(default=(), repr=False)

    def __post_init__(self) -> None:
        prompts.check_setting(self.setting)
        prompts.judge_template_id(self.judge_template)  # a bad id fails before the run
        self._exemplar_pool = prompts.exemplar_pool()

    @property
    def mode(self) -> str:
        return "passive" if self.passive else "proactive"

    @property
    def template_id(self) -> str:
        return prompts.template_id(self.setting, self.passive)

    def params(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "judge_max_tokens": self.judge_max_tokens,
            "judge_template": prompts.judge_template_id(self.judge_template),
            "n_exemplars": prompts.N_EXEMPLARS[self.setting],
        }

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        return [WorkUnit(str(i), self.setting) for i in items["item_id"]]

    def messages(self, item: dict) -> tuple[list[dict[str, str]], list[str]]:
        exemplars = prompts.pick_exemplars(
            item, prompts.N_EXEMPLARS[self.setting], self._exemplar_pool
        )
        return (
            prompts.build_messages(item, self.setting, self.passive, exemplars),
            [e.item_id for e in exemplars],
        )

    async def process(
        self,
        unit: WorkUnit,  # noqa: ARG002 - the Task protocol; one unit per item (the setting)
        item: dict,
        ctx: RunContext,
    ) -> UnitResult:
        messages, exemplar_ids = self.messages(item)
        answer = await ask(ctx, messages, temperature=self.temperature, max_tokens=self.max_tokens)
        if isinstance(answer, UnitResult):  # the call failed
            return answer
        # item fields (category, is_error) live in items; scores keep what the run added
        response = Response.answered(
            messages,
            answer,
            scores={"exemplars": exemplar_ids, "finish_reason": answer.finish_reason},
        )
        return UnitResult(response, await self.judge(item, response, ctx))

    def after_run(self, store: Store, run_id: str) -> None:
        """Keep the run's page intervals (its cells' bootstrap) beside its counts: the first
        visit of the results page reads them instead of drawing every new run."""
        from core.benchmarks.misprompt.queries import keep_page_intervals

        keep_page_intervals(store, run_id)

    def warnings(self, items: pd.DataFrame) -> list[str]:
        """Said on stderr before the first request (the runner asks, after its checks)."""
        from core.engine.sampling import n_controls

        return [NO_CONTROLS] if len(items) and n_controls(items) == 0 else []

    async def judge(self, item: dict, response: Response, ctx: RunContext) -> Result:
        """The default judging of one response, right after it (`rescore` does the same later
        with any judge and template, over stored responses)."""
        verdict = await judge_mod.judge_response(
            ctx.judge or ctx.model,
            item,
            response.text or "",
            max_tokens=self.judge_max_tokens,
            template=self.judge_template,
        )
        return to_result(verdict, item)


NO_CONTROLS = (
    "this run has no control (error-free) items, so its false positives and precision "
    "are unknown: its numbers are recall, not F1, and are labelled so"
)


def inconsistent_count(store: Store, run_id: str) -> int:
    return int(
        store.scalar(
            "SELECT count(*) FROM misprompt_verdicts WHERE run_id = ? AND inconsistent", [run_id]
        )
        or 0
    )
