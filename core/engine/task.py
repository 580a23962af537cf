"""The task contract: what a benchmark gives the runner (units to ask, how to ask one) and
what it gets back (a Response and, when judged or scored right away, a Result)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pandas as pd

from core.engine.client import CallFailed, ChatResult, ModelClient
from core.engine.results import Response, Result

if TYPE_CHECKING:  # the spec is only named in annotations (runner.spec imports this module)
    from core.engine.runner.spec import RunSpec


# -- the contract ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkUnit:
    """One thing to ask: an item under a variant (setting, condition or method); `epoch` says
    which of the run's K answers to it this is (`run --epochs K`; tasks make epoch 1, the
    runner repeats each unit for the others)."""

    item_id: str
    variant: str
    epoch: int = 1


@dataclass
class UnitResult:
    """A unit's Response and, when judged or scored right after it, the default judging's
    Result (the generic record)."""

    response: Response
    result: Result | None = None


@dataclass
class RunContext:
    model: ModelClient
    judge: ModelClient | None
    params: dict
    run_id: str = ""
    spec: RunSpec | None = None


class Task(Protocol):
    """A task may also define `after_run(store, run_id) -> None`: the runner calls it once the
    run has its final status (errors ignored: the run's outcome stands), e.g. to keep what its
    results page would otherwise compute on the first visit."""

    benchmark: str
    needs_judge: bool

    def units(self, items: pd.DataFrame) -> list[WorkUnit]: ...

    async def process(self, unit: WorkUnit, item: dict, ctx: RunContext) -> UnitResult: ...


async def ask(
    ctx: RunContext, messages: list[dict], *, temperature: float, max_tokens: int
) -> ChatResult | UnitResult:
    """The model's answer to `messages`; when the call failed after its retries, the failed
    UnitResult a task returns as is (a resume asks that unit again)."""
    try:
        return await ctx.model.chat(messages, temperature=temperature, max_tokens=max_tokens)
    except CallFailed as exc:
        return UnitResult(Response.failed(str(exc), attempts=exc.attempts, messages=messages))
