"""The runner Task for ErrorBench: one work unit per passage × condition (variant = condition).

Each unit is one chat call (shared system prompt, the condition's user prompt, temperature 0,
max tokens 800); the response is scored at once (metrics.score_response) so responses.scores
carries the reported count, how it was found, the disagreement flag and every extracted edit
with where it was located and what it matched — exports and the page read it from there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from core.benchmarks.errorbench import NAME as BENCHMARK
from core.benchmarks.errorbench.metrics import score_response
from core.benchmarks.errorbench.prompts import (
    CONDITIONS,
    MAX_TOKENS,
    TEMPERATURE,
    TEMPLATE_ID,
    build_prompt,
    load,
    response_format,
)
from core.benchmarks.errorbench.record import to_result
from core.engine.client import CallFailed
from core.engine.results import Response, Result
from core.engine.task import UnitResult, WorkUnit


def item_payload(item: dict[str, Any]) -> dict[str, Any]:
    payload = item.get("payload")
    if isinstance(payload, str):
        return json.loads(payload)
    return dict(payload or {})


@dataclass
class ErrorBenchTask:
    """Runner Task (core.engine.runner.Task protocol)."""

    conditions: list[str] = field(default_factory=lambda: list(CONDITIONS))
    temperature: float = TEMPERATURE
    max_tokens: int = MAX_TOKENS
    benchmark: str = BENCHMARK
    needs_judge: bool = False
    template_id: str = TEMPLATE_ID

    def __post_init__(self) -> None:
        bad = [c for c in self.conditions if c not in CONDITIONS]
        if bad or not self.conditions:
            raise ValueError(
                f"unknown condition(s) {', '.join(bad) or '(none)'}; choose from "
                f"{', '.join(CONDITIONS)}"
            )
        self.template_id = load(self.template_id).id  # an old alias becomes today's id

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        # Condition-major within a passage: a partial run still covers whole passages.
        return [
            WorkUnit(item_id, condition)
            for item_id in items["item_id"]
            for condition in self.conditions
        ]

    def messages(self, unit: Any, item: dict[str, Any]) -> list[dict]:
        payload = item_payload(item)
        return build_prompt(
            unit.variant, item.get("prompt") or "", int(payload["n"]), self.template_id
        ).messages

    async def process(self, unit: Any, item: dict[str, Any], ctx: Any) -> UnitResult:
        payload = item_payload(item)
        messages = build_prompt(
            unit.variant, item.get("prompt") or "", int(payload["n"]), self.template_id
        ).messages
        fmt = response_format(self.template_id)  # structured template: a JSON schema
        try:
            result = await ctx.model.chat(
                messages,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                **({"response_format": fmt} if fmt else {}),
            )
        except CallFailed as exc:
            return UnitResult(
                Response.failed(
                    f"{type(exc).__name__}: {exc}", attempts=exc.attempts, messages=messages
                )
            )
        scores = score_response(
            result.text,
            payload,
            unit.variant,
            template_id=self.template_id,
            finish_reason=result.finish_reason,
        )
        scores["finish_reason"] = result.finish_reason
        return UnitResult(Response.answered(messages, result, scores=scores), to_result(scores))


def score_stored(item: dict[str, Any], response: dict[str, Any], run: dict[str, Any]) -> Result:
    """`rescore`: the record of a stored response under today's parser and scorer (no call),
    read with the run's own template (the free-description, quoted and structured formats
    differ); the stored finish reason tells a structured answer cut at max_tokens apart."""
    stored = response.get("scores")
    stored = json.loads(stored) if isinstance(stored, str) else dict(stored or {})
    finish = stored.get("finish_reason")
    scores = score_response(
        response.get("response"),
        item_payload(item),
        str(item["variant"]),
        template_id=run.get("template_id") or TEMPLATE_ID,
        finish_reason=finish,
    )
    if finish is not None:
        scores["finish_reason"] = finish
    return to_result(scores)
