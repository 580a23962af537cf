"""The optional LLM extraction step for BBM answers (issue 29, point 3).

Why: the rule-based reader (parse.py) reads claims and calls `ambiguous` what it cannot
resolve, never guessing; an extractor model can read some of those. It is NOT trusted blindly:
it runs through `rescore` as a judging of its own (kind `judge`, `judge_model` the extractor),
beside the parser's `default`, with every request, reply and token in the call log — so its
readings are compared, audited and re-done like any judge's, and a run's metrics say which
judging they come from.

The extractor sees only the answer (never the trace, never the gold): it reports the answer's
claim as JSON bounded by a response_format schema — the first wrong step (or null for "no
mistake") at the trace level, whether the asked step is correct at the step level — or that the
answer is ambiguous. Its JSON is then scored exactly like a parsed answer (task.trace_scores'
statuses: ok, out_of_range, ambiguous; `unparsable` when the extractor's own reply is not the
schema's JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.benchmarks.bbm.parse import TraceAnswer, first_no
from core.benchmarks.bbm.record import to_result
from core.benchmarks.bbm.task import item_payload
from core.engine import templates
from core.engine.client import CallFailed
from core.engine.results import Result

TEMPLATE = "bbm/extract.v1"
MAX_TOKENS = 200

_TRACE_SCHEMA = {
    "type": "object",
    "properties": {
        "first_wrong_step": {"type": ["integer", "null"]},
        "ambiguous": {"type": "boolean"},
    },
    "required": ["first_wrong_step", "ambiguous"],
    "additionalProperties": False,
}
_STEP_SCHEMA = {
    "type": "object",
    "properties": {"step_correct": {"type": ["boolean", "null"]}, "ambiguous": {"type": "boolean"}},
    "required": ["step_correct", "ambiguous"],
    "additionalProperties": False,
}


def _format(schema: dict[str, Any], name: str) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


def extraction_messages(answer: str, n_steps: int, step: int | None) -> list[dict[str, str]]:
    """The extractor's request for one answer (trace level when `step` is None)."""
    if step is None:
        question = (
            f"the number of the first Thought (1 to {n_steps}) that contains a logical "
            'mistake, or "No" if there is none'
        )
        hint = (
            '"first_wrong_step": the Thought number the answer names as the first mistake, '
            'or null if the answer says there is no mistake; "ambiguous": false.'
        )
    else:
        question = f"whether Thought {step} is correct (Yes) or contains a mistake (No)"
        hint = (
            '"step_correct": true if the answer says the Thought is correct, false if it says '
            'the Thought has a mistake; "ambiguous": false.'
        )
    tpl = templates.load(TEMPLATE)
    values = {"answer": answer, "n_steps": n_steps, "question": question, "schema_hint": hint}
    return [
        {"role": "system", "content": tpl.render("system")},
        {"role": "user", "content": tpl.render("user", **values)},
    ]


def read_trace_reply(text: str | None, n_steps: int) -> TraceAnswer:
    """The extractor's JSON as a trace answer (status ok / out_of_range / ambiguous, or
    unparsable when the reply is not the schema's JSON)."""
    try:
        data = json.loads(text or "")
    except ValueError:
        return TraceAnswer("unparsable", None, "extractor:invalid_json")
    if not isinstance(data, dict) or "first_wrong_step" not in data:
        return TraceAnswer("unparsable", None, "extractor:not_the_schema")
    if data.get("ambiguous") is True:
        return TraceAnswer("ambiguous", None, "extractor")
    step = data["first_wrong_step"]
    if step is None:
        return TraceAnswer("ok", None, "extractor")
    if isinstance(step, bool) or not isinstance(step, int):
        return TraceAnswer("unparsable", None, "extractor:not_the_schema")
    if not 1 <= step <= n_steps:
        return TraceAnswer("out_of_range", step, "extractor")
    return TraceAnswer("ok", step, "extractor")


def read_step_reply(text: str | None) -> str:
    """'yes' / 'no' / 'ambiguous' / 'unparsable' from the extractor's step-level JSON."""
    try:
        data = json.loads(text or "")
    except ValueError:
        return "unparsable"
    if not isinstance(data, dict) or "step_correct" not in data:
        return "unparsable"
    if data.get("ambiguous") is True or data["step_correct"] is None:
        return "ambiguous"
    value = data["step_correct"]
    return ("yes" if value else "no") if isinstance(value, bool) else "unparsable"


async def extract(
    client: Any,
    item: Mapping[str, Any],
    text: str,
    *,
    template: str | None = None,  # noqa: ARG001 - the registry's judge signature; one template
    max_tokens: int = MAX_TOKENS,
) -> Result:
    """`rescore`'s extraction of one stored BBM response (registry `extractor`): one request
    for a direct_trace answer, one per stored step answer for the step methods."""
    from core.benchmarks.bbm.metrics import location_correct

    payload = item_payload(dict(item))
    steps = list(payload.get("steps") or [])
    gold = payload.get("mistake_index")
    stored = item.get("response_scores")
    stored = json.loads(stored) if isinstance(stored, str) else dict(stored or {})
    method = str(item.get("variant") or stored.get("method") or "direct_trace")
    model = getattr(getattr(client, "endpoint", None), "model", None)
    answers = [text] if method == "direct_trace" else list(stored.get("raw_answers") or [])
    replies: list[str] = []
    tokens = [0, 0]
    try:
        for k, answer in enumerate(answers, start=1):
            step = None if method == "direct_trace" else k
            reply = await client.chat(
                extraction_messages(answer or "", len(steps), step),
                temperature=0.0,
                max_tokens=max_tokens,
                response_format=_format(
                    _TRACE_SCHEMA if step is None else _STEP_SCHEMA, "bbm_answer_claim"
                ),
                role="judge",
            )
            replies.append(reply.text or "")
            tokens[0] += int(reply.prompt_tokens or 0)
            tokens[1] += int(reply.completion_tokens or 0)
    except CallFailed as exc:
        return Result.failed(str(exc), judge_model=model)
    if method == "direct_trace":
        parsed = read_trace_reply(replies[0] if replies else None, len(steps))
        status = parsed.status
        scores: dict[str, Any] = {
            "method": method,
            "parse_status": status,
            "parse_rule": parsed.rule,
            "predicted_step": parsed.step,
            "predicted_index": parsed.index if status == "ok" else None,
            "step_answers": None,
            "n_unparsable_steps": None,
        }
    else:
        verdicts = [read_step_reply(r) for r in replies]
        bad = sum(v in ("unparsable", "ambiguous") for v in verdicts)
        pred = first_no(verdicts)
        if verdicts and bad == len(verdicts):
            status = "ambiguous" if "ambiguous" in verdicts else "unparsable"
            pred = None
        else:
            status = "partial" if bad else ("ok" if verdicts else "unparsable")
        scores = {
            "method": method,
            "parse_status": status,
            "parse_rule": "extractor:first_no",
            "predicted_step": None if pred is None else pred + 1,
            "predicted_index": pred,
            "step_answers": verdicts,
            "n_unparsable_steps": bad,
        }
    scores["gold_index"] = gold
    scores["location_correct"] = location_correct(
        gold, scores["predicted_index"], scores["parse_status"]
    )
    scores["extractor_replies"] = replies
    result = to_result(scores)
    result.judge_model = model
    result.raw = json.dumps(replies)
    result.prompt_tokens, result.completion_tokens = tokens
    return result
