"""A fast scripted OpenAI-compatible server for throughput benches (asyncio, one thread).

    python bench/scripted_server.py --latency 0.05     # prints LISTENING http://127.0.0.1:PORT/v1

Why not tests/fake_openai.py: that server (stdlib ThreadingHTTPServer, a thread per
connection) spends about as much CPU per request as the client it serves, so on a 2-core
machine it takes the CPU a client's overhead would show up in. This one answers the same
replies (tests.fake_openai.default_responder: "echo: <last user message>", or a JSON object
satisfying a request's JSON schema) in the same chat.completion shape, each after `latency`
seconds (a timer, not a sleeping thread), at a small fraction of the CPU. No faults, no
streaming: it measures clients, it does not test them.

`GET /v1/stats` returns the chat requests answered since the last `GET /v1/stats?reset=1`, and
the wall-clock times (time.time()) of the first request's arrival and the last reply's
departure: the call phase of whichever client ran in between, measured the same way for all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fake_openai import default_responder  # noqa: E402


class Stats:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.first: float | None = None
        self.last: float | None = None
        self.in_flight = 0
        self.max_in_flight = 0


STATS = Stats()


def _reply(body: dict, model: str) -> bytes:
    content = default_responder(body)
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [])
    completion_tokens = len(content.split())
    return json.dumps(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", model),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    ).encode()


def _response(status: int, data: bytes) -> bytes:
    reason = {200: "OK", 404: "Not Found", 400: "Bad Request"}.get(status, "OK")
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


class _Protocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive: requests are parsed from the byte stream as they complete."""

    def __init__(self, latency: float, model: str) -> None:
        self.latency = latency
        self.model = model
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002 - asyncio API
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            self._handle(head.split(" ", 2), body)

    def _handle(self, request_line: list[str], body: bytes) -> None:
        method, path = request_line[0], request_line[1]
        route, _, query = path.partition("?")
        if method == "GET" and route.endswith("/stats"):
            payload = {
                "requests": STATS.requests,
                "first": STATS.first,
                "last": STATS.last,
                "max_in_flight": STATS.max_in_flight,
            }
            if "reset=1" in query:
                STATS.reset()
            self._send(_response(200, json.dumps(payload).encode()))
            return
        if method != "POST" or not route.rstrip("/").endswith("/chat/completions"):
            self._send(_response(404, b'{"error": {"message": "no route"}}'))
            return
        try:
            parsed = json.loads(body or b"{}")
        except ValueError:
            self._send(_response(400, b'{"error": {"message": "request body is not JSON"}}'))
            return
        now = time.time()
        if STATS.first is None:
            STATS.first = now
        STATS.requests += 1
        STATS.in_flight += 1
        STATS.max_in_flight = max(STATS.max_in_flight, STATS.in_flight)
        data = _response(200, _reply(parsed, self.model))
        self.loop.call_later(self.latency, self._answer, data)

    def _answer(self, data: bytes) -> None:
        STATS.in_flight -= 1
        STATS.last = time.time()
        self._send(data)

    def _send(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)


async def serve(port: int, latency: float, model: str) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Protocol(latency, model), "127.0.0.1", port, backlog=1024
    )
    bound = server.sockets[0].getsockname()[1]
    print(f"LISTENING http://127.0.0.1:{bound}/v1", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--model", default="fake-model")
    args = parser.parse_args(argv)
    if not 0 <= args.latency <= 60:
        parser.error("--latency must be within 0..60 s")
    asyncio.run(serve(args.port, args.latency, args.model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
