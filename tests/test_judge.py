"""Judge: defensive parsing of malformed outputs, the one repair retry, schema fallback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from core.benchmarks.misprompt import judge
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.engine.client import ModelClient
from core.engine.endpoints import Endpoint
from tests.fake_openai import FakeOpenAI

ITEM = {
    "item_id": "x1",
    "prompt": "Why did Marie Curie invent the telephone?",
    "is_error": True,
    "primary_category": "Factual Errors",
    "secondary_category": "Relation Error",
    "explanation": "Bell invented the telephone.",
    "gold": "Curie did not; Bell did.",
}
CONTROL = {
    "item_id": "c1",
    "prompt": "What is the capital of Australia?",
    "is_error": False,
    "gold": "Canberra.",
}
VALUES = dict(zip(JUDGE_LABELS, [True, True, True, True, False, False]))


@pytest.fixture(autouse=True)
def _forget_schema_support():
    """Which response_format a server accepted is remembered per URL; ports get reused."""
    judge._ACCEPTED_RUNG.clear()
    yield
    judge._ACCEPTED_RUNG.clear()


def nested(values=VALUES) -> dict:
    return {k: {"rationale": f"why {k}", "value": v} for k, v in values.items()}


def test_plain_schema_json() -> None:
    parsed = judge.parse_verdict(json.dumps(nested()))
    assert parsed.labels == VALUES and parsed.note == "json"
    assert parsed.rationales["guidance"] == "why guidance"


@pytest.mark.parametrize(
    "text",
    [
        "```json\n" + json.dumps(nested()) + "\n```\nHope this helps!",
        "Here is my verdict: " + json.dumps(nested()) + " -- end",
        json.dumps({"verdict": nested()}),
        json.dumps({"result": {"labels": nested()}}),
        json.dumps(json.dumps(nested())),  # encoded twice
        json.dumps([{"label": k, "value": v, "reason": "r"} for k, v in VALUES.items()]),
        json.dumps(
            {k: ("yes" if v else "no") for k, v in VALUES.items()}
            | {f"{k}_rationale": "flat" for k in VALUES}
        ),
        json.dumps(
            {k: ("True." if v else "False") for k, v in VALUES.items()}
            | {"rationales": {k: "separate" for k in VALUES}}
        ),
        json.dumps(
            {
                "Error Detection": 1,
                "Attempt at Identification": 1,
                "Accurate Identification": 1,
                "Attempt at Correction": "Yes",
                "Accurate Correction": 0,
                "Error Guidance": "No",
            }
        ),
        "{'detection': True, 'identification_attempt': True, 'identification_accurate': True, "
        "'correction_attempt': True, 'correction_accurate': False, 'guidance': False,}",
        '{"detection": {"value": "yes, clearly", "reason": "x"}, "identification_attempt": true, '
        '"identification_accurate": true, "correction_attempt": true, '
        '"correction_accurate": false, "guidance": false,}',
    ],
)
def test_lenient_forms_give_the_same_labels(text: str) -> None:
    parsed = judge.parse_verdict(text)
    assert parsed.labels == VALUES


@pytest.mark.parametrize(
    "text",
    [
        "",
        "The response detects the error.",
        '{"detection": true}',
        json.dumps({k: "maybe" for k in VALUES}),
        '```json\n{"detection": tru\n```',
    ],
)
def test_unparseable_outputs_raise(text: str) -> None:
    with pytest.raises(judge.VerdictParseError):
        judge.parse_verdict(text)


def test_inconsistent_flag() -> None:
    assert judge.inconsistent(VALUES) is False
    bad = dict(VALUES, identification_attempt=False)
    assert judge.inconsistent(bad) is True
    assert judge.inconsistent(dict(VALUES, correction_attempt=False, correction_accurate=True))
    assert not judge.inconsistent(dict(VALUES, correction_attempt=False, correction_accurate=False))


def _judge(client: ModelClient, item: dict, text: str, **kwargs: Any) -> dict:
    """One verdict from a blocking caller: the runner's async judge, on a loop of its own,
    the client closed after (as `ModelClient.chat_sync` does for one call)."""

    async def run() -> dict:
        try:
            return await judge.judge_response(client, item, text, **kwargs)
        finally:
            await client.aclose()

    return asyncio.run(run())


def _client(server: FakeOpenAI) -> ModelClient:
    return ModelClient(
        Endpoint("fake", (server.url,), "judge-model"), max_retries=2, backoff_base_s=0.01
    )


def test_schema_request_and_inconsistent_kept_as_said() -> None:
    said = nested(dict(VALUES, identification_attempt=False))
    with FakeOpenAI(responder=lambda body: json.dumps(said)) as server:
        verdict = _judge(_client(server), ITEM, "Bell invented it, not Curie.")
        body = server.chat_requests[0]["body"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == list(JUDGE_LABELS)
    assert body["temperature"] == 0
    user = body["messages"][1]["content"]
    for part in (
        ITEM["prompt"],
        "Relation Error",
        ITEM["explanation"],
        ITEM["gold"],
        "Bell invented it, not Curie.",
    ):
        assert part in user
    assert verdict["status"] == "ok" and verdict["parse_note"] == "schema"
    assert verdict["identification_attempt"] is False and verdict["identification_accurate"] is True
    assert verdict["inconsistent"] is True  # counted, not fixed
    assert verdict["raw"] == json.dumps(said) and verdict["judge_model"] == "judge-model"
    assert verdict["rationales"]["detection"] == "why detection"
    assert len(server.chat_requests) == 1


def test_control_item_uses_control_wording() -> None:
    with FakeOpenAI() as server:  # default responder satisfies the schema: all true
        verdict = _judge(_client(server), CONTROL, "Canberra.")
        user = server.chat_requests[0]["body"]["messages"][1]["content"]
    assert "contains NO error" in user and "Canberra." in user
    assert verdict["status"] == "ok" and all(verdict[k] is True for k in JUDGE_LABELS)


def test_repair_retry_once_then_ok() -> None:
    def responder(body: dict) -> str:
        if any("could not be read" in m["content"] for m in body["messages"]):
            return "```json\n" + json.dumps(nested()) + "\n```"
        return "Sure! detection: yes, the response is great"

    with FakeOpenAI(responder=responder) as server:
        verdict = asyncio.run(judge.judge_response(_client(server), ITEM, "resp"))
        requests = server.chat_requests
    assert len(requests) == 2
    second = requests[1]["body"]["messages"]
    assert second[-2] == {
        "role": "assistant",
        "content": "Sure! detection: yes, the response is great",
    }
    assert second[-1]["role"] == "user"
    assert verdict["status"] == "ok" and verdict["parse_note"] == "schema+repaired"
    assert {k: verdict[k] for k in JUDGE_LABELS} == VALUES
    assert "attempt 1" in verdict["raw"] and "Sure! detection" in verdict["raw"]
    assert verdict["completion_tokens"] > 0


def test_only_one_repair_then_failed_with_raw_kept() -> None:
    with FakeOpenAI(responder=lambda body: "not json at all") as server:
        verdict = _judge(_client(server), ITEM, "resp")
        n = len(server.chat_requests)
    assert n == 2
    assert verdict["status"] == "failed" and verdict["detection"] is None
    assert "after one repair retry" in verdict["error"]
    assert verdict["raw"].count("not json at all") == 2


def test_schema_ladder_bounded_then_plain_then_none_and_remembered() -> None:
    refusal = {
        "status": 400,
        "message": "Invalid schema for response_format: 'maxLength' is not permitted",
    }
    with FakeOpenAI(responder=lambda body: json.dumps(nested()), faults=[refusal]) as server:
        client = _client(server)
        verdict = _judge(client, ITEM, "resp")
        _judge(client, ITEM, "resp again")  # goes straight to the accepted rung
        bodies = [r["body"] for r in server.chat_requests]
    rationale = lambda b: b["response_format"]["json_schema"]["schema"]["properties"][  # noqa: E731
        "detection"
    ]["properties"]["rationale"]
    assert len(bodies) == 3
    assert rationale(bodies[0])["maxLength"] == judge.RATIONALE_MAX_CHARS
    assert "maxLength" not in rationale(bodies[1]) and "maxLength" not in rationale(bodies[2])
    assert verdict["status"] == "ok" and verdict["parse_note"] == "schema"

    def refuse_schemas(body: dict) -> dict | None:
        if body.get("response_format"):
            return {"status": 400, "message": "response_format json_schema is not supported"}
        return None

    with FakeOpenAI(responder=lambda body: json.dumps(nested()), fault_fn=refuse_schemas) as server:
        verdict = _judge(_client(server), ITEM, "resp")
        bodies = [r["body"] for r in server.chat_requests]
    assert len(bodies) == 3 and "response_format" not in bodies[2]
    assert verdict["status"] == "ok" and verdict["parse_note"] == "no-schema+plain"


def test_judge_call_failure_is_a_failed_verdict_not_an_exception() -> None:
    faults = [{"status": 500}] * 3
    with FakeOpenAI(faults=faults) as server:
        verdict = _judge(_client(server), ITEM, "resp")
    assert verdict["status"] == "failed" and "HTTP 500" in verdict["error"]


def test_too_long_for_the_context_retries_with_a_truncated_response() -> None:
    faults = [
        {
            "status": 400,
            "message": "request (1112 tokens) exceeds the available context "
            "size (1024 tokens), try increasing it",
        }
    ]
    long_response = "word " * 1000
    with FakeOpenAI(responder=lambda body: json.dumps(nested()), faults=faults) as server:
        verdict = _judge(_client(server), ITEM, long_response)
        users = [r["body"]["messages"][1]["content"] for r in server.chat_requests]
    assert len(users) == 2 and long_response in users[0]
    assert long_response not in users[1] and "[… truncated: 3500 more characters]" in users[1]
    assert verdict["status"] == "ok" and verdict["parse_note"] == "response-truncated+schema"
    # a short response is not truncated: the context error is reported as the failure
    with FakeOpenAI(faults=list(faults)) as server:
        verdict = _judge(_client(server), ITEM, "short")
        assert len(server.chat_requests) == 1
    assert verdict["status"] == "failed" and "context size" in verdict["error"]


def test_repair_request_echoes_at_most_a_slice_of_the_bad_output() -> None:
    bad = "x" * 5000
    with FakeOpenAI(responder=lambda body: bad) as server:
        verdict = _judge(_client(server), ITEM, "resp")
        echoed = server.chat_requests[1]["body"]["messages"][-2]["content"]
    assert echoed.startswith("x" * judge.REPAIR_ECHO_CHARS) and len(echoed) < 900
    assert verdict["raw"].count(bad) == 2  # the raw output is kept whole
