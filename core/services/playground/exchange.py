"""One exchange: the prompt sent proactive and passive, streamed, then judged; an unreachable
endpoint comes back as an `EndpointProblem`, not an exception."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from core.engine.client import CURRENT_SINK, CallFailed, CallSink, ModelClient
from core.engine.endpoints import (
    LOCAL_NAME,
    LOCAL_URL_ENV_VAR,
    MODELS_ENV_VAR,
    Endpoint,
    EndpointError,
    is_weak,
    redact_url,
)
from core.engine.results import Response, Result
from core.services.playground.roles import (
    DEFAULT_MAX_TOKENS,
    JUDGINGS,
    MODES,
    TICK_S,
    OnTick,
    OnToken,
    PlaygroundRole,
    playground_benchmark,
    role_of,
)
from core.store import Store

# ---------------------------------------------------------------------------------------------
# Errors the page shows instead of an exception
# ---------------------------------------------------------------------------------------------


def configure_help(endpoint: Endpoint | None = None) -> str:
    """How to configure an endpoint (Markdown), for the page and the CLI."""
    key_line = ""
    if endpoint is not None and endpoint.api_key_env:
        key_line = (
            f"- This endpoint reads its API key from the environment variable "
            f"`{endpoint.api_key_env}`: `export {endpoint.api_key_env}=…` before starting "
            f'the app, or put `{endpoint.api_key_env} = "…"` in `.streamlit/secrets.toml` '
            "(never in `data/models.toml`).\n"
        )
    local = ""
    if endpoint is None or endpoint.name == LOCAL_NAME:
        local = (
            "- The local model: start it with `python -m core serve-local` (`./start.sh` "
            "does this), or point `" + LOCAL_URL_ENV_VAR + "` at a running "
            "OpenAI-compatible server.\n"
        )
    return (
        local + "- Another server: add an `[endpoints.NAME]` table with `base_url` and `model` to "
        f"`data/models.toml` (or to the file named by `{MODELS_ENV_VAR}`), then reload the page.\n"
        + key_line
        + "- API keys: set the variable named by the endpoint's `api_key_env` in the environment, "
        "or as a top-level entry in `.streamlit/secrets.toml`."
    )


@dataclass
class EndpointProblem:
    """An endpoint that did not answer: which one, where, what went wrong, how to fix it."""

    role: str  # model | judge
    endpoint: str
    model: str
    urls: tuple[str, ...]
    error: str
    help: str

    @classmethod
    def from_failure(cls, role: str, endpoint: Endpoint, error: str) -> EndpointProblem:
        return cls(
            role=role,
            endpoint=endpoint.name,
            model=endpoint.model,
            urls=tuple(redact_url(u) for u in endpoint.base_urls),
            error=error,
            help=configure_help(endpoint),
        )

    @property
    def title(self) -> str:
        where = ", ".join(self.urls)
        return (
            f"The {self.role} endpoint '{self.endpoint}' ({self.model} at {where}) "
            f"did not answer: {self.error}"
        )


# ---------------------------------------------------------------------------------------------
# One exchange
# ---------------------------------------------------------------------------------------------


@dataclass
class Side:
    """One mode of an exchange: what was sent, what came back, and the judge's result."""

    mode: str
    messages: list[dict[str, str]]
    response: str = ""
    status: str = "pending"  # ok | failed
    error: str | None = None
    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    cached: bool = False
    result: Result | None = None
    judge_failure: str | None = None  # the judge endpoint's last request failed (not stored)
    calls: list[dict] = field(default_factory=list)

    def as_response(self) -> Response:
        """What is stored for this side (the one Response type every writer uses)."""
        return Response(
            status="ok" if self.status == "ok" else "failed",
            messages=self.messages,
            text=self.response,
            error=self.error,
            attempts=self.attempts,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            latency_ms=self.latency_ms,
            cost_usd=self.cost_usd,
            cached=self.cached,
        )


@dataclass
class Exchange:
    """One prompt sent in both modes, as shown and as stored (a playground run)."""

    run_id: str
    benchmark: str
    item: dict[str, Any]
    setting: str
    model_endpoint: dict[str, Any]
    judge_endpoint: dict[str, Any]
    temperature: float
    max_tokens: int
    sides: dict[str, Side]
    weak: bool = False
    problems: list[EndpointProblem] = field(default_factory=list)
    created_at: str = ""
    template_id: str = ""
    saved: bool = False
    judge_template: str = ""  # the judge template's id ("<benchmark>/judge.v2")
    judging: str = "llm"

    @property
    def answered(self) -> bool:
        return any(s.status == "ok" for s in self.sides.values())

    @property
    def judged(self) -> bool:
        """The LLM judge has given a result on at least one side."""
        return any(s.result for s in self.sides.values())


def new_run_id() -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"playground-{stamp}-{secrets.token_hex(2)}"


def build_sides(
    item: Mapping[str, Any], setting: str, benchmark: str | None = None
) -> dict[str, Side]:
    """The proactive (prompt as is, under the setting) and passive (instruction added) messages."""
    role = role_of(playground_benchmark(benchmark))
    return {mode: Side(mode, role.messages(item, setting, mode == "passive")) for mode in MODES}


async def _answer(
    client: ModelClient, side: Side, temperature: float, max_tokens: int, on_token: OnToken | None
) -> None:
    sink = CallSink()
    token = CURRENT_SINK.set(sink)
    try:
        result = await client.chat(
            side.messages,
            temperature=temperature,
            max_tokens=max_tokens,
            on_token=on_token or (lambda _piece: None),
            role="model",
        )
    except CallFailed as exc:
        side.status, side.error, side.attempts = "failed", str(exc.last_error or exc), exc.attempts
    else:
        side.status, side.response, side.attempts = "ok", result.text, result.attempts
        side.prompt_tokens, side.completion_tokens = result.prompt_tokens, result.completion_tokens
        side.latency_ms, side.cost_usd, side.cached = (
            result.latency_ms,
            result.cost_usd,
            result.cached,
        )
    finally:
        CURRENT_SINK.reset(token)
    side.calls.extend(sink.calls)


class _WatchedClient:
    """The judge's client for one side, remembering whether its last request failed: an
    unreachable judge endpoint is a problem to show, a verdict it gave but could not be read
    is not (the benchmark's judge turns both into a failed Result)."""

    def __init__(self, client: ModelClient) -> None:
        self._client = client
        self.failure: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def chat(self, *args: Any, **kwargs: Any) -> Any:
        try:
            answer = await self._client.chat(*args, **kwargs)
        except CallFailed as exc:
            self.failure = str(exc.last_error or exc)
            raise
        self.failure = None
        return answer


async def _judge(
    role: PlaygroundRole,
    client: ModelClient,
    item: Mapping[str, Any],
    side: Side,
    template: str | None = None,
) -> None:
    sink = CallSink()
    token = CURRENT_SINK.set(sink)
    watched = _WatchedClient(client)
    try:
        side.result = await role.judge(watched, item, side.response, template=template)
    finally:
        CURRENT_SINK.reset(token)
    side.judge_failure = watched.failure
    side.calls.extend(sink.calls)


async def _timed(awaitable: Awaitable[Any], phase: str, on_tick: OnTick | None) -> Any:
    """Await, calling on_tick(phase, elapsed seconds) every TICK_S (a visible timer)."""
    if on_tick is None:
        return await awaitable
    start = time.monotonic()
    task = asyncio.ensure_future(awaitable)
    while not task.done():
        on_tick(phase, time.monotonic() - start)
        await asyncio.wait({task}, timeout=TICK_S)
    on_tick(phase, time.monotonic() - start)
    return task.result()


def _judge_problem(judge: Endpoint, sides: list[Side]) -> EndpointProblem | None:
    failures = [s.judge_failure for s in sides if s.judge_failure]
    return EndpointProblem.from_failure("judge", judge, failures[0]) if failures else None


def _client(endpoint: Endpoint, store: Store | None, max_retries: int, **kw: Any) -> ModelClient:
    return ModelClient(
        endpoint,
        store=store,
        max_retries=max_retries,
        backoff_base_s=0.2,
        backoff_max_s=2.0,
        **kw,
    )


async def run_exchange_async(
    item: Mapping[str, Any],
    setting: str,
    model: Endpoint,
    judge: Endpoint | None,
    *,
    benchmark: str | None = None,
    temperature: float = 0.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    on_token: Mapping[str, OnToken] | None = None,
    on_phase: Callable[[str], Any] | None = None,
    on_tick: OnTick | None = None,
    store: Store | None = None,
    use_cache: bool = False,
    max_retries: int = 1,
    judging: str = "llm",
    judge_template: str | None = None,
) -> Exchange:
    """Stream both modes concurrently, then (judging='llm') judge both concurrently, ticking
    on_tick('judging', seconds) meanwhile. With judging 'human' or 'later' the judge endpoint is
    neither checked nor called. Never raises for an unreachable endpoint: the Exchange carries
    EndpointProblems instead."""
    if judging not in JUDGINGS:
        raise ValueError(f"judging must be one of {JUDGINGS}, got {judging!r}")
    bench = playground_benchmark(benchmark)
    role = role_of(bench)
    if setting not in role.settings:
        raise ValueError(f"unknown setting {setting!r}; choose one of {', '.join(role.settings)}")
    if judging != "llm":
        judge = None
    elif judge is None:
        raise ValueError("judging='llm' needs a judge endpoint")
    judge_tid = role.judge_template_id(judge_template)
    sides = build_sides(item, setting, bench.name)
    exchange = Exchange(
        run_id=new_run_id(),
        benchmark=bench.name,
        item=dict(item),
        setting=setting,
        model_endpoint=model.public_dict(),
        judge_endpoint=judge.public_dict() if judge is not None else {},
        temperature=float(temperature),
        max_tokens=int(max_tokens),
        sides=sides,
        weak=bool(is_weak(model) or is_weak(judge)),
        judging=judging,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        template_id=f"{role.template_id(setting, False)} | {role.template_id(setting, True)}"
        f" | judge {judge_tid}",
        judge_template=judge_tid,
    )
    callbacks = on_token or {}
    model_client = _client(model, store, max_retries, use_cache=use_cache)
    clients = [(model_client, model, "model")]
    judge_client = None
    if judge is not None:
        judge_client = _client(judge, store, max_retries, use_cache=use_cache)
        clients.append((judge_client, judge, "judge"))
    try:
        for client, ep, role_name in clients:
            try:
                client.check()
            except EndpointError as exc:
                exchange.problems.append(EndpointProblem.from_failure(role_name, ep, str(exc)))
        if exchange.problems:
            for side in sides.values():
                side.status, side.error = "failed", exchange.problems[0].error
            return exchange
        if on_phase:
            on_phase("answering")
        await asyncio.gather(
            *(
                _answer(model_client, side, temperature, max_tokens, callbacks.get(mode))
                for mode, side in sides.items()
            )
        )
        failed = [s for s in sides.values() if s.status != "ok"]
        if failed:
            exchange.problems.append(
                EndpointProblem.from_failure("model", model, failed[0].error or "no answer")
            )
        answered = [s for s in sides.values() if s.status == "ok"]
        if answered and judge_client is not None and judge is not None:
            if on_phase:
                on_phase("judging")
            await _timed(
                asyncio.gather(
                    *(
                        _judge(role, judge_client, item, side, exchange.judge_template)
                        for side in answered
                    )
                ),
                "judging",
                on_tick,
            )
            problem = _judge_problem(judge, answered)
            if problem:
                exchange.problems.append(problem)
    finally:
        await model_client.aclose()  # closes every pooled client of this loop, the judge's too
    return exchange


def run_exchange(
    item: Mapping[str, Any], setting: str, model: Endpoint, judge: Endpoint | None, **kwargs: Any
) -> Exchange:
    """Blocking wrapper (its own event loop); callbacks run in the calling thread."""
    return asyncio.run(run_exchange_async(item, setting, model, judge, **kwargs))
