"""ModelClient against the scripted server: retries, timeouts, streaming, cache, secrets."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from typing import Any

import pytest

from core.engine.client import (
    CURRENT_SINK,
    CallFailed,
    CallSink,
    ConnectionFailure,
    ModelClient,
    _Connection,
)
from core.engine.endpoints import Endpoint
from tests.fake_openai import FakeOpenAI

MSG = [{"role": "user", "content": "What is the capital of France?"}]


def endpoint(server: FakeOpenAI, **kw) -> Endpoint:
    kw.setdefault("timeout_s", 5.0)
    return Endpoint("fake", (server.url,), "fake-model", **kw)


def fast_client(ep: Endpoint, **kw) -> ModelClient:
    kw.setdefault("backoff_base_s", 0.01)
    kw.setdefault("backoff_max_s", 0.05)
    return ModelClient(ep, **kw)


def test_plain_chat_records_tokens_latency_cost():
    with FakeOpenAI() as server:
        client = fast_client(endpoint(server, price_in_per_mtok=1.0, price_out_per_mtok=2.0))
        result = client.chat_sync(MSG, temperature=0.0, max_tokens=64)
    assert result.text == "echo: What is the capital of France?"
    # the fake counts whitespace-separated words as tokens: 6 in, 7 out
    assert (result.prompt_tokens, result.completion_tokens) == (6, 7)
    assert result.cost_usd == pytest.approx((6 * 1.0 + 7 * 2.0) / 1e6)
    assert result.attempts == 1 and not result.cached and result.finish_reason == "stop"
    assert result.latency_ms > 0
    body = server.chat_requests[0]["body"]
    assert (body["model"], body["messages"], body["temperature"], body["max_tokens"]) == (
        "fake-model",
        MSG,
        0.0,
        64,
    )


def test_429_honours_retry_after():
    with FakeOpenAI(faults=[{"status": 429, "retry_after": 0.4}]) as server:
        result = fast_client(endpoint(server)).chat_sync(MSG)
        times = [r["time"] for r in server.chat_requests]
    assert result.attempts == 2
    # the backoff alone (≤0.05 s) would be much shorter than the server's Retry-After
    assert times[1] - times[0] >= 0.4


@pytest.mark.parametrize(
    "fault", [{"status": 500}, {"status": 503}, {"malformed": True}, {"drop": True}, {"delay": 6.0}]
)
def test_transient_faults_are_retried(fault):
    # a timeout only the slow reply reaches, even on a loaded machine (the good third reply
    # must fit in it; a dropped connection must not be read as a timeout)
    with FakeOpenAI(faults=[fault, fault]) as server:
        client = fast_client(endpoint(server, timeout_s=2.0 if "delay" in fault else 30.0))
        sink = CallSink()

        async def go():
            CURRENT_SINK.set(sink)
            return await client.chat(MSG)

        result = asyncio.run(go())
    assert result.attempts == 3
    assert result.text.startswith("echo:")
    assert [c["status"] for c in sink.calls] == ["error", "error", "ok"]
    assert [c["attempt"] for c in sink.calls] == [1, 2, 3]
    if "status" in fault:
        assert sink.calls[0]["http_status"] == fault["status"]
    if "delay" in fault:
        assert "timeout" in sink.calls[0]["error"]


def test_client_errors_are_not_retried_and_retries_are_bounded():
    with FakeOpenAI(faults=[{"status": 400, "message": "bad request"}]) as server:
        with pytest.raises(CallFailed) as info:
            fast_client(endpoint(server)).chat_sync(MSG)
        assert len(server.chat_requests) == 1
    assert info.value.http_status == 400 and info.value.attempts == 1
    assert "not retryable" in str(info.value)

    with FakeOpenAI(faults=[{"status": 500}] * 10) as server:
        with pytest.raises(CallFailed) as info:
            fast_client(endpoint(server), max_retries=2).chat_sync(MSG)
        assert len(server.chat_requests) == 3
    assert info.value.attempts == 3 and info.value.http_status == 500
    assert "gave up after 3 attempts" in str(info.value)


def test_backoff_grows_exponentially_with_jitter():
    client = ModelClient(
        Endpoint("e", ("http://x/v1",), "m"), backoff_base_s=1.0, backoff_max_s=8.0
    )
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 8.0)]:
        delays = [client._delay(attempt, None) for _ in range(200)]
        assert ceiling / 2 <= min(delays) and max(delays) <= ceiling
        assert len(set(delays)) > 100  # jittered, not a fixed schedule
    assert 3.0 <= client._delay(1, 3.0) <= 3.31  # Retry-After wins


def test_streaming_calls_on_token_and_returns_usage():
    pieces: list[str] = []
    with FakeOpenAI(responder=lambda body: "one two three four") as server:
        result = fast_client(endpoint(server)).chat_sync(MSG, on_token=pieces.append)
        body = server.chat_requests[0]["body"]
    assert body["stream"] is True
    assert len(pieces) >= 4 and "".join(pieces) == result.text == "one two three four"
    assert result.completion_tokens == 4 and result.prompt_tokens == 6


def test_json_schema_response_format_is_passed_through():
    schema = {
        "type": "object",
        "properties": {"detection": {"type": "boolean"}, "why": {"type": "string"}},
        "required": ["detection", "why"],
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema}}
    with FakeOpenAI() as server:
        result = fast_client(endpoint(server)).chat_sync(MSG, response_format=fmt)
        assert server.chat_requests[0]["body"]["response_format"] == fmt
    assert json.loads(result.text) == {"detection": True, "why": "ok"}


def test_concurrency_limit_is_shared_and_spread_over_replicas():
    with FakeOpenAI(latency=0.15) as a, FakeOpenAI(latency=0.15) as b:
        ep = Endpoint("pool", (a.url, b.url), "fake-model", max_concurrency=3, timeout_s=5)
        model, judge = fast_client(ep), fast_client(ep)  # two roles, one endpoint

        async def go():
            calls = [model.chat(MSG) for _ in range(6)] + [
                judge.chat(MSG, role="judge") for _ in range(6)
            ]
            results = await asyncio.gather(*calls)
            await model.aclose()
            return results

        started = time.perf_counter()
        results = asyncio.run(go())
        elapsed = time.perf_counter() - started
    assert len(results) == 12
    assert a.max_in_flight + b.max_in_flight <= 4  # 3 in flight in total (±1 per server)
    assert max(a.max_in_flight, b.max_in_flight) <= 3
    assert len(a.chat_requests) == 6 and len(b.chat_requests) == 6  # model 3+3, judge 3+3
    assert elapsed >= 4 * 0.15  # 12 calls / 3 slots = 4 rounds


def test_cache_answers_identical_requests(store):
    with FakeOpenAI() as server:
        ep = endpoint(server, price_in_per_mtok=1.0, price_out_per_mtok=1.0)
        first = fast_client(ep, store=store).chat_sync(MSG)
        again = fast_client(ep, store=store).chat_sync(MSG)
        other = fast_client(ep, store=store).chat_sync(MSG, temperature=0.7)
        fresh = fast_client(ep, store=store, use_cache=False).chat_sync(MSG)
        assert len(server.chat_requests) == 3  # again was answered from the cache
    assert again.cached and again.text == first.text and again.cost_usd == 0.0
    assert again.prompt_tokens == first.prompt_tokens
    assert not other.cached and not fresh.cached
    assert store.scalar("SELECT count(*) FROM call_cache") == 2
    calls = store.df("SELECT cached, status FROM calls ORDER BY created_at")
    assert calls["cached"].tolist().count(True) == 1 and len(calls) == 4


def test_bulk_cache_mode_uses_the_sink_and_reads_back_hits(store):
    with FakeOpenAI() as server:
        ep = endpoint(server)

        async def run_once(messages_list):
            client = fast_client(ep, store=store)
            client.enable_bulk_cache()
            sink = CallSink()
            CURRENT_SINK.set(sink)
            results = await asyncio.gather(*[client.chat(m) for m in messages_list])
            await client.aclose()
            return results, sink

        msgs = [[{"role": "user", "content": f"question {i}"}] for i in range(20)]
        results, sink = asyncio.run(run_once(msgs))
        assert (
            len(sink.cache_rows) == 20 and store.scalar("SELECT count(*) FROM call_cache") == 0
        )  # nothing written yet: the runner does it
        store.transaction(
            lambda con: con.executemany(
                "INSERT INTO call_cache (key, response) VALUES (?, ?)", sink.cache_rows
            )
        )
        again, sink2 = asyncio.run(run_once(msgs + [[{"role": "user", "content": "new"}]]))
        assert len(server.chat_requests) == 21
    assert [r.text for r in again[:20]] == [r.text for r in results]
    assert all(r.cached for r in again[:20]) and not again[20].cached
    assert len(sink2.cache_rows) == 1


def test_api_key_from_env_is_sent_but_scrubbed_from_errors(monkeypatch):
    secret = "sk-test-SECRET-4242"
    monkeypatch.setenv("EHW_FAKE_KEY", secret)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    with FakeOpenAI(faults=[{"status": 401, "message": f"Incorrect API key {secret}"}]) as s:
        ep = endpoint(s, api_key_env="EHW_FAKE_KEY")
        with pytest.raises(CallFailed) as info:
            fast_client(ep).chat_sync(MSG)
        assert s.chat_requests[0]["headers"]["authorization"] == f"Bearer {secret}"
        fast_client(endpoint(s)).chat_sync(MSG)  # no api_key_env: never $OPENAI_API_KEY
        assert s.chat_requests[1]["headers"]["authorization"] == "Bearer not-needed"
    assert secret not in str(info.value) and secret not in info.value.last_error
    assert "***" in info.value.last_error

    monkeypatch.delenv("EHW_FAKE_KEY")
    with pytest.raises(CallFailed, match="EHW_FAKE_KEY, which is not set"):
        fast_client(
            Endpoint("e", ("http://127.0.0.1:9/v1",), "m", api_key_env="EHW_FAKE_KEY")
        ).chat_sync(MSG)


def test_chat_sync_works_inside_a_running_loop():
    with FakeOpenAI() as server:
        client = fast_client(endpoint(server))

        async def inside():
            return client.chat_sync(MSG)

        assert asyncio.run(inside()).text.startswith("echo:")


def test_request_body_is_sent_as_built_and_extra_body_merged():
    """Requests go through the openai client's `post` with our body: every parameter, the
    JSON-schema response format and extra_body's keys at the top level, as create() sent."""
    schema = {"type": "json_schema", "json_schema": {"name": "v", "schema": {"type": "object"}}}
    with FakeOpenAI() as server:
        result = fast_client(endpoint(server)).chat_sync(
            MSG, max_tokens=7, response_format=schema, extra_body={"top_k": 3}
        )
        body = server.chat_requests[0]["body"]
    assert body == {
        "messages": MSG,
        "model": "fake-model",
        "temperature": 0.0,
        "max_tokens": 7,
        "response_format": schema,
        "top_k": 3,
    }
    assert result.finish_reason == "stop" and result.prompt_tokens is not None


def test_reply_fields_read_plain_json_and_refuse_replies_without_a_choice():
    from core.engine.client import _reply_fields

    reply = {
        "choices": [{"message": {"content": "hi"}, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    assert _reply_fields(reply) == ("hi", 3, 1, "length")
    # no usage, null content, a non-numeric count: text "" and unknown counts
    assert _reply_fields({"choices": [{"message": {"content": None}}]}) == ("", None, None, None)
    assert _reply_fields(
        {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": "3"}}
    ) == ("x", None, None, None)
    bads: tuple[Any, ...] = ({}, {"choices": []}, {"choices": ["x"]}, "not json", None, [])
    for bad in bads:
        with pytest.raises(json.JSONDecodeError):
            _reply_fields(bad)


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A certificate for 127.0.0.1 that no CA signed, and its key (made by openssl)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
            "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


def _post_once(url: str) -> tuple[object, _Connection]:
    """One request through a fresh connection (as a run's client sends it), and the connection."""

    async def go() -> tuple[object, _Connection]:
        conn = _Connection(url, "sk-test", 5.0)
        try:
            return await conn.post_json({"model": "fake-model", "messages": MSG}), conn
        finally:
            await conn.http.aclose()

    return asyncio.run(go())


def test_an_http_endpoint_sets_up_no_tls_and_an_https_one_is_verified(self_signed, monkeypatch):
    """http:// requests go to a pool without TLS set-up (httpx2 built a verifying SSL context
    for every client, 25-50 ms of CPU per run's process: _TLSOnDemand); https:// ones are
    verified as before: a certificate no trusted CA signed is refused, the same certificate
    trusted through SSL_CERT_FILE is accepted."""
    with FakeOpenAI() as server:
        reply, conn = _post_once(server.url)
    assert isinstance(reply, dict) and reply["choices"][0]["message"]["content"].startswith("echo")
    assert conn.transport._tls is None  # no verifying context was ever built
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with FakeOpenAI(tls=self_signed) as server:
        assert server.url.startswith("https://")
        with pytest.raises(ConnectionFailure) as refused:
            _post_once(server.url)
        assert "CERTIFICATE_VERIFY_FAILED" in repr(refused.value.__cause__), refused.value
        # through the client a run uses: one line, the cause named, nothing asked twice
        client = fast_client(endpoint(server), max_retries=0)
        with pytest.raises(CallFailed, match="certificate verify failed"):
            client.chat_sync(MSG)
        assert server.chat_requests == []  # no request got past the handshake
        monkeypatch.setenv("SSL_CERT_FILE", self_signed[0])  # the user trusts it
        reply, conn = _post_once(server.url)
    assert isinstance(reply, dict) and reply["choices"][0]["message"]["content"].startswith("echo")
    assert conn.transport._tls is not None
