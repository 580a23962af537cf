"""What a unit of work produces: the model's `Response` and a judging's `Verdict`.

One dataclass each, used by the runner, every task, `rescore` and the playground, so a field
means the same everywhere and the table rows are made in one place (`row()`); the writer is
`write_results` below (the runner's batches, rescore's batches and the playground's exchanges
all go through it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from core.storage import JUDGE_LABELS


@dataclass
class Response:
    """One unit's answer from the model under test (a row of `responses`).

    `text` is the model's reply (column `response`); `scores` holds what the task recorded
    while generating (exemplars used, finish reason, per-step answers...) and, for benchmarks
    scored by code, the run's own scores.
    """

    status: str = "ok"
    messages: list[dict[str, Any]] | None = None
    text: str | None = None
    error: str | None = None
    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    cached: bool = False
    scores: dict[str, Any] | None = None

    @classmethod
    def answered(
        cls,
        messages: list[dict[str, Any]] | None,
        result: Any,
        scores: dict[str, Any] | None = None,
    ) -> Response:
        """From a client ChatResult (or anything with its fields)."""
        return cls(
            status="ok",
            messages=messages,
            text=result.text,
            attempts=int(result.attempts or 0),
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            latency_ms=result.latency_ms,
            cost_usd=result.cost_usd,
            cached=bool(result.cached),
            scores=scores,
        )

    @classmethod
    def failed(
        cls,
        error: str,
        *,
        attempts: int = 0,
        messages: list[dict[str, Any]] | None = None,
        scores: dict[str, Any] | None = None,
    ) -> Response:
        return cls(
            status="failed",
            messages=messages,
            error=error,
            attempts=int(attempts or 0),
            scores=scores,
        )

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def row(self) -> dict[str, Any]:
        """Columns of the responses table (JSON columns still as Python values)."""
        return {
            "status": self.status,
            "messages": self.messages,
            "response": self.text,
            "error": self.error,
            "attempts": self.attempts,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_ms": self.latency_ms,
            "cost_usd": self.cost_usd,
            "cached": self.cached,
            "scores": self.scores,
        }


@dataclass
class Verdict:
    """One judging of one response (a row of `verdicts`): an LLM judge's six labels with
    rationales and raw output (Mis-prompt), or a scorer's `scores` (ErrorBench, BBM)."""

    status: str = "ok"
    judge_model: str | None = None
    labels: dict[str, bool | None] = field(default_factory=dict)
    rationales: dict[str, str] | None = None
    raw: str | None = None
    parse_note: str | None = None
    inconsistent: bool | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    scores: dict[str, Any] | None = None

    @classmethod
    def failed(cls, error: str, judge_model: str | None = None) -> Verdict:
        return cls(status="failed", error=error, judge_model=judge_model)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Verdict:
        """From verdicts-table columns (what the judge protocol builds)."""
        names = {f.name for f in fields(cls)} - {"labels"}
        kwargs = {k: row[k] for k in names if k in row}
        kwargs["labels"] = {label: row.get(label) for label in JUDGE_LABELS if label in row}
        return cls(**kwargs)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def row(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name != "labels"
        }
        out.update({label: self.labels.get(label) for label in JUDGE_LABELS})
        return out


def as_json(value: Any) -> str | None:
    """A JSON column's text (None stays NULL; text is assumed to be JSON already)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
