"""How a PCBench judge verdict becomes the generic result record (core.engine.results.Result),
the judge itself, and the views and table its SQL reads.

One named label, `critique`: the paper's `if_find_contradiction` — the response questions the
flawed premise and states what is wrong with it. `answer` is `C` (critiqued) or `∅`; `correct`
is the label itself (every PCBench problem has a flaw); `explanation` is the judge's `basis`.
A reply that is not the asked JSON is `unparsable` (done, not retried), a failed call `failed`
(asked again on resume).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from core.benchmarks.pcbench import prompts
from core.engine.client import CallFailed
from core.engine.results import Result

LABEL_LETTERS: dict[str, str] = {"critique": "C"}
LABEL_HELP: dict[str, str] = {
    "critique": "The response questions the problem's premises and states the specific flaw "
    "(the contradiction or the wrong step named as the item's flaw); solving the problem, or "
    "calling it 'flawed' without saying where, is not a critique (the paper's judge criteria)."
}
JUDGE_MAX_TOKENS = 512  # the paper's judge (o3-mini) had no limit; lighteval's port uses 512
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "pcbench_verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "if_find_contradiction": {"type": "string", "enum": ["True", "False"]},
                "basis": {"type": "string"},
            },
            "required": ["if_find_contradiction", "basis"],
            "additionalProperties": False,
        },
    },
}
_JSON_BLOCK = re.compile(r"```json\s*([\s\S]*?)\s*```")


def parse_verdict(raw: str) -> tuple[bool, str]:
    """(critique, basis) of a judge reply: the JSON object itself or the paper's ```json block;
    a ValueError when neither holds a True/False `if_find_contradiction`."""
    match = _JSON_BLOCK.search(raw)
    obj = json.loads(match.group(1) if match else raw)
    if not isinstance(obj, dict):
        raise ValueError("the reply is not a JSON object")
    value = obj.get("if_find_contradiction")
    if isinstance(value, bool):
        return value, str(obj.get("basis") or "")
    word = str(value).strip().lower()
    if word not in ("true", "false"):
        raise ValueError(f"if_find_contradiction is {value!r}, not True/False")
    return word == "true", str(obj.get("basis") or "")


def to_result(raw: str, judge_model: str | None = None) -> Result:
    """The record of one judge reply (unparsable when it is not the asked JSON)."""
    try:
        critique, basis = parse_verdict(raw)
    except (ValueError, TypeError) as exc:
        return Result(
            status="unparsable", judge_model=judge_model, raw=raw, parse_note=str(exc)[:200]
        )
    return Result(
        status="ok",
        judge_model=judge_model,
        answer="C" if critique else "∅",
        correct=critique,
        labels={"critique": critique},
        explanation=basis or None,
        metadata={"rationales": {"critique": basis or None}},
        raw=raw,
    )


async def judge(
    client: Any,
    item: Mapping[str, Any],
    text: str,
    *,
    template: str | None = None,
    max_tokens: int = JUDGE_MAX_TOKENS,
) -> Result:
    """The LLM judging stage: the run's default judging and `rescore` (registry `judge`)."""
    template_id = prompts.judge_template_id(template)
    model = getattr(getattr(client, "endpoint", None), "model", None)
    try:
        reply = await client.chat(
            prompts.judge_messages(dict(item), text, template_id),
            temperature=0.0,
            max_tokens=max_tokens,
            response_format=RESPONSE_FORMAT,
            role="judge",
        )
    except CallFailed as exc:
        return Result.failed(str(exc), judge_model=model)
    result = to_result(reply.text, model)
    result.prompt_tokens, result.completion_tokens = reply.prompt_tokens, reply.completion_tokens
    result.latency_ms, result.cost_usd = reply.latency_ms, reply.cost_usd
    return result


def _verdicts_view(name: str, source: str) -> str:
    return (
        f"CREATE OR REPLACE VIEW {name} AS SELECT run_id, judging, item_id, variant, "
        "judge_model, status, correct, TRY_CAST(labels->>'critique' AS BOOLEAN) AS critique, "
        "epoch "
        f"FROM {source};"
    )


VIEWS: str = "\n".join(
    [
        _verdicts_view("pcbench_verdicts", "results"),
        _verdicts_view("pcbench_current_verdicts", "current_results"),
    ]
)
