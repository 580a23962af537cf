"""A scripted OpenAI-compatible HTTP server for tests, browser tests and benchmarks.

Why a real server and not a patched client: the runner's retries, timeouts, streaming and
concurrency live in the HTTP layer (openai on httpx2, which respx cannot intercept), so tests
must exercise real sockets. This server is stdlib only (ThreadingHTTPServer in a daemon thread).

In-process use::

    with FakeOpenAI(faults=[{"status": 429, "retry_after": 0.1}], latency=0.01) as server:
        client = ModelClient(Endpoint("fake", (server.url,), "fake-model"))
        ...
        assert server.requests[0]["body"]["model"] == "fake-model"

As a subprocess (for `streamlit run` in browser tests, or to keep its CPU off the client's GIL)::

    python tests/fake_openai.py --port 0 --script '{"latency": 0.05, "rules": [...]}'

prints ``LISTENING http://127.0.0.1:PORT/v1`` on stdout once it accepts connections.

Replies: ``responder(request_json) -> str`` decides the content. The default echoes the last
user message (``echo: <text>``), and when the request asks for a JSON-schema response format it
returns a JSON object that satisfies the schema (booleans true, strings "ok", numbers 0), so a
judge step works without configuration.

Faults (one per request, consumed in order from ``faults``; or computed by ``fault_fn(body)``):

- ``{"status": 429, "retry_after": 1.5}``  HTTP error (any status) with optional Retry-After;
  ``retry_after`` is sent as given, so an HTTP date (``"Wed, 21 Oct 2015 07:28:00 GMT"``) or
  garbage (``"soon"``) can be scripted too
- ``{"status": 500}``
- ``{"delay": 5}``       sleep before replying normally (to trigger client timeouts)
- ``{"malformed": true}`` 200 with a body that is not JSON
- ``{"drop": true}``      close the connection without a response
- ``{"hang": true}``      accept the request and never answer (until the server stops): a
  server that takes connections and then hangs
- ``{"reset_mid_body": true}`` 200 headers and half the body, then a TCP reset (RST)
- ``{"cut_stream_after": 2}`` a streamed reply cut (connection closed, no terminating chunk,
  no ``[DONE]``) after that many content chunks; a non-streamed request is reset mid-body
- ``{"echo_key": true}``  reply normally, but with the request's bearer token and path (with
  its query string) in the content (in a JSON reply's strings) — a server leaking the key
- ``{"content": "..."}``  reply with this content instead of the responder's
- ``{"finish_reason": "length"}`` reply normally but with this finish_reason (an answer cut
  at max_tokens); combine with ``content`` to script the cut text
- ``None``               no fault for this request
"""

from __future__ import annotations

import argparse
import collections
import json
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict], str]
Fault = dict[str, Any] | None


def _last_user_text(body: dict) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def example_for_schema(schema: dict) -> Any:
    """A value satisfying a (simple) JSON schema: objects, arrays, booleans, strings, numbers."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {name: example_for_schema(sub) for name, sub in props.items()}
    if kind == "array":
        return [example_for_schema(schema.get("items") or {})] * int(schema.get("minItems", 0) or 0)
    if kind == "boolean":
        return True
    if kind == "string":
        return "ok"
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return None


def default_responder(body: dict) -> str:
    """Echo the last user message; for a JSON-schema request, a schema-conforming JSON object."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema") or {}
        return json.dumps(example_for_schema(schema))
    if fmt.get("type") == "json_object":
        return "{}"
    return "echo: " + _last_user_text(body)


def rules_responder(rules: list[dict], fallback: Responder = default_responder) -> Responder:
    """First rule whose `match` substring occurs in any message wins; else `fallback`.

    Used from the command line (`--script`), where a Python callable cannot be passed.
    A rule may also require `"json": true` (only requests with a response_format).
    """

    def respond(body: dict) -> str:
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
        for rule in rules:
            if rule.get("json") and not body.get("response_format"):
                continue
            if rule.get("json") is False and body.get("response_format"):
                continue
            if rule.get("match", "") in text:
                return rule["reply"]
        return fallback(body)

    return respond


def _leak_into(content: str, leak: str) -> str:
    """Append `leak` to the reply; inside a JSON object's strings, so a judge's reply still
    parses (the leak must reach the stored verdict, not break it)."""
    try:
        data = json.loads(content)
    except ValueError:
        return f"{content} {leak}"
    if not isinstance(data, dict):
        return f"{content} {leak}"
    return json.dumps({k: f"{v} {leak}" if isinstance(v, str) else v for k, v in data.items()})


def _count_tokens(text: str) -> int:
    return len(text.split())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512  # bursts of hundreds of connections must not be reset

    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up before its reply was written (a test's cut stream, a run
        stopped mid-call) is its own choice, not a server fault: say nothing. socketserver's
        default prints a traceback to sys.stderr from the handler's thread, which may still be
        running while a later test in this process captures stderr (in-process CLI runs) and
        finds a "Traceback" that is not its own. Any other error is still printed."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client reuses connections
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    # -- helpers ------------------------------------------------------------------------
    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._send_bytes(status, data, "application/json", headers)

    def _send_bytes(
        self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    # -- routes -------------------------------------------------------------------------
    def do_GET(self) -> None:
        fake = self.server.fake
        route = self.path.split("?")[0].rstrip("/")  # a query (?api-version=…) is not the route
        if route.endswith("/models"):
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": fake.model, "object": "model", "created": 0, "owned_by": "fake"}
                    ],
                },
            )
            return
        if route.endswith("/health"):
            self._send_json(200, {"status": "ok"})
            return
        self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        raw = self._read_body()
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        fake._record(self.path, dict(self.headers.items()), body)
        if not self.path.split("?")[0].rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return

        fake._enter()
        try:
            self._complete(fake, body)
        finally:
            fake._leave()

    def _complete(self, fake: FakeOpenAI, body: dict) -> None:
        fault = fake._next_fault(body) or {}
        if fake.latency:
            time.sleep(fake.latency)
        if "delay" in fault:
            time.sleep(float(fault["delay"]))
        if fault.get("hang"):
            fake._stopping.wait()
            self.close_connection = True
            return
        if fault.get("drop"):
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if "status" in fault and int(fault["status"]) != 200:
            headers = {}
            if fault.get("retry_after") is not None:
                headers["Retry-After"] = str(fault["retry_after"])
            self._send_json(
                int(fault["status"]),
                {
                    "error": {
                        "message": fault.get("message", f"scripted error {fault['status']}"),
                        "type": "scripted",
                        "code": fault["status"],
                    }
                },
                headers,
            )
            return
        if fault.get("malformed"):
            self._send_bytes(200, b'{"id": "broken", "choices": [', "application/json")
            return
        if fault.get("reset_mid_body") or ("cut_stream_after" in fault and not body.get("stream")):
            data = json.dumps(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": "x" * 200},
                        }
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self._reset()
            return

        content = fault["content"] if "content" in fault else fake.responder(body)
        if fault.get("echo_key"):
            content = _leak_into(
                content, f"(you sent {self.headers.get('Authorization', '')} to {self.path})"
            )
        prompt_tokens = sum(
            _count_tokens(str(m.get("content", ""))) for m in body.get("messages") or []
        )
        completion_tokens = _count_tokens(content)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        model = body.get("model", fake.model)
        created = int(time.time())
        if body.get("stream"):
            self._stream(
                content,
                model,
                created,
                usage,
                bool((body.get("stream_options") or {}).get("include_usage")),
                fault.get("cut_stream_after"),
                str(fault.get("finish_reason") or "stop"),
            )
            return
        self._send_json(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": str(fault.get("finish_reason") or "stop"),
                        "message": {"role": "assistant", "content": content},
                    }
                ],
                "usage": usage,
            },
        )

    def _reset(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0), as a crashed proxy would."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    def _stream(
        self,
        content: str,
        model: str,
        created: int,
        usage: dict,
        include_usage: bool,
        cut_after: int | None = None,
        finish_reason: str = "stop",
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def event(payload: Any) -> None:
            data = (
                b"data: "
                + (payload if isinstance(payload, bytes) else json.dumps(payload).encode())
                + b"\n\n"
            )
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        base = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }
        event(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "finish_reason": None,
                    }
                ],
            }
        )
        pieces = [w + " " for w in content.split(" ")]
        if pieces:
            pieces[-1] = pieces[-1][:-1]
        token_delay = float(getattr(self.server.fake, "token_delay", 0.0) or 0.0)
        sent = 0
        for piece in pieces:
            if piece:
                if cut_after is not None and sent >= int(cut_after):
                    self._reset()  # mid-stream: no finish_reason, no [DONE], no last chunk
                    return
                sent += 1
                if token_delay:  # paced streaming, so a UI can be seen filling in
                    time.sleep(token_delay)
                event(
                    {
                        **base,
                        "choices": [
                            {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                        ],
                    }
                )
        event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]})
        if include_usage:
            event({**base, "choices": [], "usage": usage})
        event(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class FakeOpenAI:
    """The scripted server. Start with `with FakeOpenAI(...) as s:` or `.start()`/`.stop()`."""

    def __init__(
        self,
        responder: Responder | None = None,
        faults: Iterable[Fault] = (),
        latency: float = 0.0,
        port: int = 0,
        model: str = "fake-model",
        fault_fn: Callable[[dict], Fault] | None = None,
        record: bool = True,
        tls: tuple[str, str] | None = None,
    ) -> None:
        """`tls`: (certificate, key) PEM files: the server speaks https with them."""
        self.responder: Responder = responder or default_responder
        self.tls = tls
        self.token_delay = 0.0  # seconds between streamed chunks (script key "token_delay")
        self.faults: collections.deque[Fault] = collections.deque(faults)
        self.fault_fn = fault_fn
        self.latency = latency
        self.model = model
        self.record = record
        self.requests: list[dict] = []
        self.n_requests = 0
        self.in_flight = 0
        self.max_in_flight = 0  # peak concurrent chat requests (to check client limits)
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # releases requests held by a "hang" fault
        self._port = port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------------------
    def add_faults(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def _next_fault(self, body: dict) -> Fault:
        if self.fault_fn is not None:
            fault = self.fault_fn(body)
            if fault:
                return fault
        with self._lock:
            return self.faults.popleft() if self.faults else None

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _record(self, path: str, headers: dict, body: dict) -> None:
        with self._lock:
            self.n_requests += 1
            if self.record:
                self.requests.append(
                    {"path": path, "headers": headers, "body": body, "time": time.monotonic()}
                )

    @property
    def chat_requests(self) -> list[dict]:
        return [
            r
            for r in self.requests
            if r["path"].split("?")[0].rstrip("/").endswith("/chat/completions")
        ]

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """Base URL for the openai client (ends in /v1)."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        self._stopping.clear()
        self._httpd = _Server(("127.0.0.1", self._port), _Handler)
        self._httpd.fake = self
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def from_script(script: dict, port: int = 0) -> FakeOpenAI:
    """Build a server from a JSON-able script (the subprocess form).

    Keys: latency (s), model, faults (list, consumed in order), rules (see rules_responder),
    reply (fixed content for every request without a matching rule), token_delay (s between
    streamed chunks).
    """
    fallback: Responder = default_responder
    if "reply" in script:
        fixed = str(script["reply"])
        fallback = lambda body: fixed  # noqa: E731
    responder = rules_responder(script.get("rules") or [], fallback)
    server = FakeOpenAI(
        responder=responder,
        faults=script.get("faults") or [],
        latency=float(script.get("latency", 0.0)),
        model=script.get("model", "fake-model"),
        port=port,
        record=bool(script.get("record", False)),
    )
    server.token_delay = float(script.get("token_delay", 0.0))
    return server


class FakeProcess:
    """The server in a child process: `with FakeProcess({"latency": 0.05}) as fp: fp.url`.

    For browser tests (a `streamlit run` process must reach it) and benchmarks (its CPU stays
    off the measuring process's GIL).
    """

    def __init__(self, script: dict | None = None, port: int = 0) -> None:
        self.script = script or {}
        self.port = port
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, timeout: float = 20.0) -> FakeProcess:
        import subprocess

        self.proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--port",
                str(self.port),
                "--script",
                json.dumps(self.script),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("LISTENING "):
                self.url = line.split()[1]
                return self
            if not line and self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError("fake OpenAI server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
            self.proc = None

    def __enter__(self) -> FakeProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--script", default="{}", help="JSON text, or @PATH of a JSON file (see from_script)"
    )
    args = parser.parse_args(argv)
    text = args.script
    if text.startswith("@"):
        with open(text[1:], encoding="utf-8") as handle:
            text = handle.read()
    server = from_script(json.loads(text), port=args.port).start()
    print(f"LISTENING {server.url}", flush=True)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
