"""The shipped local model server (SmolLM2 via xllamacpp): chat, streaming, JSON schema.

Marked slow: it starts the real server (a second or two) and asks the real model.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from core.engine.client import ModelClient
from core.engine.endpoints import LOCAL_MODEL, Endpoint
from core.engine.local_server import gguf_path, wait_healthy
from tests.browser import free_port

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]


@pytest.fixture(scope="module")
def local_url(tmp_path_factory):
    """serve-local on a free port; it records its URL (for CLIs in other terminals) in the
    file $EHW_LOCAL_RECORD names while it serves, and removes the record when it stops."""
    try:
        gguf_path()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"local model not installed: {exc}")
    port = free_port()
    record = tmp_path_factory.mktemp("local") / "serve-local.json"
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "core", "serve-local", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "EHW_LOCAL_RECORD": str(record)},
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_healthy(url, timeout=120)
        startup = time.monotonic() - started
        assert startup < 60, f"server took {startup:.1f} s to start"
        deadline = time.monotonic() + 10
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert json.loads(record.read_text()) == {"url": url, "pid": proc.pid}
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert not record.exists()


def client(url: str) -> ModelClient:
    return ModelClient(
        Endpoint("local", (url,), LOCAL_MODEL, weak=True, max_concurrency=2, timeout_s=120)
    )


def test_short_chat_is_answered_and_deterministic_at_temperature_0(local_url):
    first = client(local_url).chat_sync(QUESTION, temperature=0.0, max_tokens=16)
    second = client(local_url).chat_sync(QUESTION, temperature=0.0, max_tokens=16)
    assert "paris" in first.text.lower()
    assert first.text == second.text
    assert first.prompt_tokens is not None and first.completion_tokens is not None
    assert first.prompt_tokens > 5 and 0 < first.completion_tokens <= 16
    assert first.finish_reason in ("stop", "length")


def test_streaming_yields_pieces_that_add_up(local_url):
    pieces: list[str] = []
    streamed = client(local_url).chat_sync(
        QUESTION, temperature=0.0, max_tokens=16, on_token=pieces.append
    )
    plain = client(local_url).chat_sync(QUESTION, temperature=0.0, max_tokens=16)
    assert len(pieces) >= 2
    assert "".join(pieces) == streamed.text == plain.text
    assert streamed.completion_tokens == plain.completion_tokens


def test_json_schema_output_follows_the_schema(local_url):
    schema = {
        "type": "object",
        "properties": {"detection": {"type": "boolean"}, "rationale": {"type": "string"}},
        "required": ["detection", "rationale"],
        "additionalProperties": False,
    }
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "strict": True, "schema": schema},
    }
    messages = [
        {
            "role": "user",
            "content": "Does the question 'When did Einstein win the "
            "Nobel Prize in Chemistry?' contain an error? "
            "Reply in JSON.",
        }
    ]
    result = client(local_url).chat_sync(
        messages, temperature=0.0, max_tokens=80, response_format=fmt
    )
    jsonschema.validate(json.loads(result.text), schema)


def test_models_route_names_the_model(local_url):
    import urllib.request

    with urllib.request.urlopen(local_url + "/models", timeout=10) as resp:
        ids = [m["id"] for m in json.loads(resp.read())["data"]]
    assert LOCAL_MODEL in ids
