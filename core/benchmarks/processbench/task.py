"""The runner Task for ProcessBench: one work unit per solution, one call, one sample.

The request is the paper's critique prompt (prompts.py); the answer is read with the paper's
`\\boxed{}` rule (parse.py) and scored right away (the run's `default` judging). `score_stored`
re-reads a stored answer for `rescore` without asking the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from core.benchmarks.processbench.parse import (
    TRUNCATED,
    UNPARSABLE,
    parse_answer,
    parse_structured,
)
from core.benchmarks.processbench.prompts import (
    VARIANT,
    load_template,
    messages,
    response_format,
)
from core.benchmarks.processbench.record import to_result
from core.engine.client import CallFailed
from core.engine.results import Response, Result
from core.engine.task import RunContext, UnitResult, WorkUnit
from core.engine.templates import Template, is_structured

BENCHMARK = "processbench"
# The paper allows 8,192 new tokens (32,768 for QwQ): critiques reason paragraph by paragraph
# before the box. Ours is lower by default so a local run ends; `--max-tokens` raises it.
DEFAULT_MAX_TOKENS = 2048


def item_payload(item: dict[str, Any]) -> dict[str, Any]:
    payload = item.get("payload")
    if isinstance(payload, str):
        payload = json.loads(payload)
    return payload or {}


def score(
    text: str | None,
    steps: list[str],
    label: int,
    finish_reason: str | None,
    structured: bool = False,
) -> dict:
    """The stored scores of one critique (pure; tested directly): what was read and whether it
    matches the label. An unparsable answer cut at max_tokens is `truncated`. `structured` (a
    structured-output template): read as JSON first (`json` ok), else by the box rule (`json`
    invalid, with `json_error`)."""
    extra: dict[str, Any] = {}
    found, why = parse_structured(text, len(steps)) if structured else (None, None)
    if found is not None:
        parsed, extra = found, {"json": "ok"}
    else:
        parsed = parse_answer(text, len(steps))
        if structured:
            extra = {"json": "invalid", "json_error": why}
    status = parsed.status
    if status == UNPARSABLE and finish_reason == "length":
        status = TRUNCATED
    return {
        "parse_status": status,
        "predicted_index": parsed.index,
        "boxed": parsed.boxed,
        "label": label,
        "n_steps": len(steps),
        "match": parsed.index is not None and parsed.index == label,
        "finish_reason": finish_reason,
        **extra,
    }


@dataclass
class ProcessBenchTask:
    """Runner Task (core.engine.task.Task protocol): the critique of each solution."""

    template: str | None = None  # full id 'processbench/critique.vN'; None = v1
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0  # the paper's greedy decoding
    loaded: Template = field(init=False, repr=False)
    benchmark: str = BENCHMARK
    needs_judge: bool = False

    def __post_init__(self) -> None:
        self.loaded = load_template(self.template)

    @property
    def template_id(self) -> str:
        return self.loaded.id

    @property
    def structured(self) -> bool:
        """A structured-output template (NOT the paper's protocol): JSON schema, JSON answers."""
        return is_structured(self.loaded.id)

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        return [WorkUnit(str(item_id), VARIANT) for item_id in items["item_id"]]

    async def process(
        self,
        unit: WorkUnit,  # noqa: ARG002 - the Task protocol; one unit per item here
        item: dict[str, Any],
        ctx: RunContext,
    ) -> UnitResult:
        payload = item_payload(item)
        steps = [str(s) for s in payload.get("steps") or []]
        asked = messages(self.loaded, str(item.get("prompt") or ""), steps)
        fmt = response_format(self.loaded, len(steps))
        try:
            answer = await ctx.model.chat(
                asked,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                response_format=fmt,
            )
        except CallFailed as exc:
            failed = Response.failed(
                f"{type(exc).__name__}: {exc}", attempts=exc.attempts, messages=asked
            )
            return UnitResult(failed)
        label = int(payload.get("label", -1))
        scores = score(answer.text, steps, label, answer.finish_reason, self.structured)
        return UnitResult(Response.answered(asked, answer, scores=scores), to_result(scores))


def score_stored(
    item: dict[str, Any],
    response: dict[str, Any],
    run: dict[str, Any],
) -> Result:
    """`rescore`: the record of a stored response, re-read with today's parser (no model call);
    a run of a structured-output template (its stored template_id) is read as JSON again."""
    stored = response.get("scores")
    stored = json.loads(stored) if isinstance(stored, str) else dict(stored or {})
    payload = item_payload(item)
    steps = [str(s) for s in payload.get("steps") or []]
    scores = score(
        response.get("response"),
        steps,
        int(payload.get("label", -1)),
        stored.get("finish_reason"),
        is_structured(run.get("template_id")),
    )
    return to_result(scores)
