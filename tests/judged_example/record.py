"""How a judge verdict of the judged example becomes the generic result record
(core.engine.results.Result), the judge itself, and the view its metrics read.

`labels` holds the two named labels (`noticed`, `fixed`); `answer` is the true ones as letters
(`N F`, `∅` for none); `correct` is "noticed on an item with an error, not noticed on a
control"; `explanation` is the judge's rationale. A reply that is not the asked JSON is
`unparsable` (done, not retried), a failed call `failed` (asked again on resume).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.engine.client import CallFailed
from core.engine.results import Result

from . import prompts

LABEL_LETTERS: dict[str, str] = {"noticed": "N", "fixed": "F"}
JUDGE_MAX_TOKENS = 200
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "judged_example_verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "rationale": {"type": "string"},
                "noticed": {"type": "boolean"},
                "fixed": {"type": "boolean"},
            },
            "required": ["rationale", "noticed", "fixed"],
            "additionalProperties": False,
        },
    },
}


def answer_of(labels: Mapping[str, Any]) -> str:
    return " ".join(LABEL_LETTERS[lb] for lb in LABEL_LETTERS if labels.get(lb)) or "∅"


def to_result(raw: str, item: Mapping[str, Any], judge_model: str | None = None) -> Result:
    """The record of one judge reply on `item` (unparsable when it is not the asked JSON)."""
    try:
        obj = json.loads(raw)
        labels = {lb: obj[lb] for lb in LABEL_LETTERS}
        if not all(isinstance(v, bool) for v in labels.values()):
            raise TypeError("labels must be booleans")
    except (ValueError, TypeError, KeyError) as exc:
        return Result(
            status="unparsable", judge_model=judge_model, raw=raw, parse_note=str(exc)[:200]
        )
    return Result(
        status="ok",
        judge_model=judge_model,
        answer=answer_of(labels),
        correct=labels["noticed"] == bool(item.get("is_error")),
        labels=labels,
        explanation=str(obj.get("rationale") or "") or None,
        metadata={"rationales": {"noticed": obj.get("rationale")}},
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
    prompts.judge_template_id(template)  # an unknown template is an error, not a guess
    model = getattr(getattr(client, "endpoint", None), "model", None)
    try:
        reply = await client.chat(
            prompts.judge_messages(dict(item), text),
            temperature=0.0,
            max_tokens=max_tokens,
            response_format=RESPONSE_FORMAT,
            role="judge",
        )
    except CallFailed as exc:
        return Result.failed(str(exc), judge_model=model)
    result = to_result(reply.text, item, model)
    result.prompt_tokens, result.completion_tokens = reply.prompt_tokens, reply.completion_tokens
    result.latency_ms, result.cost_usd = reply.latency_ms, reply.cost_usd
    return result


def _verdicts_view(name: str, source: str) -> str:
    columns = ", ".join(f"TRY_CAST(labels->>'{lb}' AS BOOLEAN) AS {lb}" for lb in LABEL_LETTERS)
    return (
        f"CREATE OR REPLACE VIEW {name} AS SELECT run_id, judging, item_id, variant, "
        f"judge_model, status, correct, {columns} FROM {source};"
    )


# The label columns the metrics read, over the generic tables (created by the store).
VIEWS = "\n".join(
    [
        _verdicts_view("judged_verdicts", "results"),
        _verdicts_view("judged_current_verdicts", "current_results"),
    ]
)
