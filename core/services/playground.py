"""The playground: one prompt, sent proactive (as is) and passive (with the explicit
error-handling instruction) side by side, streamed, then judged — saved as a playground run.

What researchers show colleagues (issue 5): a model answers a flawed question as if nothing were
wrong unless told to check it. One exchange = one run (`runs.kind = 'playground'`) with two
responses (variants `proactive` and `passive`) and their two results, so it can be reopened and
exported like any run. The run's `item_set` is left empty and the item lives in `params.item`,
so a one-item demo never enters the F1 tables of real runs.

Generic through the registry (issue 16): a benchmark offers a playground by naming a
`PlaygroundRole` in its descriptor (`Benchmark.playground`, "module:ROLE"): how its prompts are
built in both modes, its LLM judge (returning the generic `Result`), its judge templates, and
how its labels read to people. This module knows no benchmark; `playground_benchmark` picks the
one asked for, or the first registered one that offers a playground.

Who judges (`JUDGINGS`): a person ("human": the page shows the ground truth beside both answers
and saves the labels as human labels of the exchange — the honest choice when the judge
endpoint is the shipped SmolLM2, which marks everything true), the LLM judge right away ("llm",
with elapsed-time ticks for a timer), or the LLM judge later ("later": saved unjudged;
`judge_exchange` judges a saved exchange).

When an endpoint cannot be reached, `run_exchange` returns an `EndpointProblem` naming it and
saying how to configure one, instead of raising. `collapse_text` shortens long or repetitive
answers for display (a tiny model may repeat one line thirty times).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import duckdb
import pandas as pd

from core import registry
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
from core.engine.results import DEFAULT_JUDGING, Response, Result, ResultBatch, write_batch
from core.store import HUMAN_LABEL_COLUMNS, HUMAN_LABEL_KEYS, Store, upsert_rows

MODES = ("proactive", "passive")
KIND = "playground"
DEFAULT_MAX_TOKENS = 400
JUDGINGS = ("human", "llm", "later")  # who judges an exchange: a person, the LLM now, LLM later
TICK_S = 0.5  # how often a phase reports its elapsed time
OnToken = Callable[[str], Any]
OnTick = Callable[[str, float], Any]  # (phase, elapsed seconds)


# ---------------------------------------------------------------------------------------------
# The benchmark's part
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlaygroundRole:
    """What a benchmark tells the playground (registered as `Benchmark.playground`).

    messages(item, setting, passive): the chat messages of one mode under a setting.
    judge(client, item, response_text, *, template): async, one answer's `Result` (the same
    contract as `Benchmark.judge`); `labels` of the Result are the benchmark's named labels.
    judge_template_id(name or None): the stored id ("bench/judge.v2"; None = the default).
    template_id(setting, passive): the stored id of the prompt template of one mode.
    rationale(result, label): the judge's reason for one label ("" if none).
    warning(result): a note on a verdict worth reading (e.g. inconsistent labels), or None.
    label_help: one line per label for a person labelling by hand.
    """

    settings: tuple[str, ...]
    default_setting: str
    messages: Callable[[Mapping[str, Any], str, bool], list[dict[str, str]]]
    judge: Callable[..., Awaitable[Result]]
    judge_templates: Callable[[], list[str]]
    default_judge_template: str
    judge_template_id: Callable[[str | None], str]
    template_id: Callable[[str, bool], str]
    rationale: Callable[[Result, str], str]
    warning: Callable[[Result], str | None] = lambda _result: None
    label_help: Mapping[str, str] = field(default_factory=dict)
    setting_label: str = "Setting"
    judge_template_help: str = ""
    # the judge template of exchanges saved before the template was recorded with them
    legacy_judge_template: str | None = None


def playground_benchmarks() -> list[registry.Benchmark]:
    """The registered benchmarks that offer a playground, in registry order."""
    return [b for b in registry.BENCHMARKS.values() if b.playground]


def playground_benchmark(name: str | None = None) -> registry.Benchmark:
    """The benchmark named (if it offers a playground), else the first that does."""
    offered = playground_benchmarks()
    if not offered:
        raise LookupError("no registered benchmark offers a playground")
    return next((b for b in offered if b.name == name), offered[0])


def role_of(bench: registry.Benchmark) -> PlaygroundRole:
    """A benchmark's playground role, resolved from its descriptor."""
    if not bench.playground:
        raise LookupError(f"{bench.label} offers no playground")
    role = bench.playground()
    if not isinstance(role, PlaygroundRole):
        raise TypeError(f"{bench.label}'s playground is not a PlaygroundRole")
    return role


def label_names(bench: registry.Benchmark) -> tuple[str, ...]:
    """The benchmark's judge labels, in the order its tables show them."""
    return tuple(bench.label_letters())


def default_judging(judge: Endpoint | None) -> str:
    """A person judges when the judge endpoint is weak (SmolLM2 marks every label true)."""
    return "human" if is_weak(judge) else "llm"


# ---------------------------------------------------------------------------------------------
# Display of long or repetitive answers
# ---------------------------------------------------------------------------------------------

PREVIEW_CHARS = 600


@dataclass(frozen=True)
class Collapsed:
    """A shortened answer for display: `preview` (runs of a repeated line folded into one line
    with a "line repeated ×N" note, then cut at PREVIEW_CHARS) and whether anything was hidden."""

    preview: str
    hidden: bool
    repeats: tuple[tuple[str, int], ...] = ()


def collapse_text(text: str, limit: int = PREVIEW_CHARS) -> Collapsed:
    """Fold consecutive repeats of a line (blank lines between them ignored), then cut to
    `limit` characters at a line or word boundary. The full text stays for an expander."""
    text = text or ""
    lines = text.splitlines()
    out: list[str] = []
    repeats: list[tuple[str, int]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        j, count = i + 1, 1
        if line.strip():
            while j < len(lines):
                k = j
                while k < len(lines) and not lines[k].strip():
                    k += 1
                if k < len(lines) and lines[k].strip() == line.strip():
                    count, j = count + 1, k + 1
                else:
                    break
        if count > 1:
            out.append(f"{line}\n[line repeated ×{count}]")
            repeats.append((line.strip(), count))
        else:
            out.append(line)
        i = j if count > 1 else i + 1
    folded = "\n".join(out)
    cut = len(folded) > limit
    if cut:
        head = folded[:limit]
        stop = max(head.rfind("\n"), head.rfind(" "))
        folded = (
            head[:stop] if stop > limit // 2 else head
        ).rstrip() + f" … [{len(text) - len(head):,} more characters]"
    return Collapsed(folded, hidden=cut or bool(repeats), repeats=tuple(repeats))


# ---------------------------------------------------------------------------------------------
# Items
# ---------------------------------------------------------------------------------------------


def custom_item(
    prompt: str,
    gold: str | None = None,
    is_error: bool = True,
    primary_category: str | None = None,
    secondary_category: str | None = None,
    explanation: str | None = None,
) -> dict[str, Any]:
    """An item typed by the user; its id is derived from the text (same text, same id)."""
    prompt = (prompt or "").strip()
    if not prompt:
        raise ValueError("type a prompt first")
    digest = hashlib.sha1(prompt.encode("utf-8")).hexdigest()[:10]
    return {
        "item_set": None,
        "item_id": f"custom-{digest}",
        "prompt": prompt,
        "is_error": bool(is_error),
        "primary_category": primary_category or None,
        "secondary_category": secondary_category or None,
        "explanation": (explanation or "").strip() or None,
        "gold": (gold or "").strip() or None,
    }


def example_items(
    store: Store, benchmark: str | None = None, item_set: str | None = None
) -> pd.DataFrame:
    """Loaded items of the playground's benchmark to browse (all sets, or one), erroneous
    first."""
    name = playground_benchmark(benchmark).name
    where, params = ("AND i.item_set = ?", [name, item_set]) if item_set else ("", [name])
    return store.df(
        f"""
        SELECT i.item_set, i.item_id, i.is_error,
               coalesce(i.primary_category, '(control)') AS primary_category,
               coalesce(i.secondary_category, '(control)') AS secondary_category,
               i.prompt, i.explanation, i.gold
        FROM items i WHERE i.benchmark = ? {where}
        ORDER BY i.is_error DESC, i.primary_category, i.secondary_category, i.item_set, i.item_id
    """,
        params,
    )


def item_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """An item of `example_items` as the exchange keeps it (no NaN, controls uncategorised)."""
    keys = (
        "item_set",
        "item_id",
        "prompt",
        "is_error",
        "primary_category",
        "secondary_category",
        "explanation",
        "gold",
    )
    item = {
        k: (None if pd.isna(row.get(k)) else row.get(k))
        if not isinstance(row.get(k), str)
        else row.get(k)
        for k in keys
    }
    for k in ("primary_category", "secondary_category"):
        if item.get(k) == "(control)":
            item[k] = None
    item["is_error"] = bool(item.get("is_error", True))
    return item


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
    judge_template: str = ""  # the judge template's id ("misprompt/judge.v2")
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


# ---------------------------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------------------------


def _params(exchange: Exchange) -> dict[str, Any]:
    role = role_of(registry.get(exchange.benchmark))
    return {
        "temperature": exchange.temperature,
        "max_tokens": exchange.max_tokens,
        "item": exchange.item,
        "model_endpoint": exchange.model_endpoint,
        "judge_endpoint": exchange.judge_endpoint,
        "judging": exchange.judging,
        "judge_template": role.judge_template_id(exchange.judge_template),
        "problems": [asdict(p) for p in exchange.problems],
    }


def _item_key(exchange: Exchange) -> str:
    return str(exchange.item.get("item_id") or "custom")


def _add_side(
    batch: ResultBatch,
    key: tuple[str, str, str],
    side: Side,
    *,
    response: bool = True,
    retried: bool = False,
) -> None:
    """A side's rows for the one writer (core/engine/results.py): its response (unless only judged
    now), its result (if judged) and its call records."""
    if response:
        batch.add_response(key, side.as_response())
    if side.result is not None:
        batch.add_result(key, side.result, retried=retried)
    for call in side.calls:
        batch.add_call(key, call)


def save_exchange(store: Store, exchange: Exchange) -> str:
    """Write the run, its two responses, results (if judged) and call records in one
    transaction."""
    item_id = _item_key(exchange)
    status = "done" if all(s.status == "ok" for s in exchange.sides.values()) else "failed"
    model_ep, judge_ep = exchange.model_endpoint, exchange.judge_endpoint or {}
    params = json.dumps(_params(exchange), default=str)

    batch = ResultBatch()
    for mode, side in exchange.sides.items():
        _add_side(batch, (exchange.run_id, item_id, mode), side)

    def write(con: duckdb.DuckDBPyConnection) -> None:
        con.execute(
            "INSERT INTO runs (run_id, benchmark, kind, item_set, model, endpoint, setting, mode, "
            "judge_model, judge_endpoint, template_id, params, weak_model, status, n_planned, "
            "created_at, updated_at) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, current_timestamp, current_timestamp)",
            [
                exchange.run_id,
                exchange.benchmark,
                KIND,
                model_ep["model"],
                model_ep["name"],
                exchange.setting,
                "+".join(MODES),
                judge_ep.get("model"),
                judge_ep.get("name"),
                exchange.template_id,
                params,
                exchange.weak,
                status,
                len(MODES),
            ],
        )
        write_batch(con, batch)

    store.transaction(write)
    exchange.saved = True
    return exchange.run_id


async def judge_exchange_async(
    store: Store, run_id: str, judge: Endpoint, on_tick: OnTick | None = None, max_retries: int = 1
) -> Exchange | None:
    """Judge a saved exchange's answers now ("judge later"), ticking on_tick('judging', s).

    Results, their call records and the run's judge are written in one transaction; when the
    judge endpoint does not answer nothing is written and the Exchange carries the problem.
    """
    exchange = load_exchange(store, run_id)
    if exchange is None:
        return None
    role = role_of(registry.get(exchange.benchmark))
    client = _client(judge, store, max_retries)
    try:
        try:
            client.check()
        except EndpointError as exc:
            exchange.problems = [EndpointProblem.from_failure("judge", judge, str(exc))]
            return exchange
        answered = [s for s in exchange.sides.values() if s.status == "ok"]
        for side in answered:
            side.calls = []
        await _timed(
            asyncio.gather(
                *(
                    _judge(role, client, exchange.item, side, exchange.judge_template)
                    for side in answered
                )
            ),
            "judging",
            on_tick,
        )
    finally:
        await client.aclose()
    problem = _judge_problem(judge, answered)
    if problem:
        for side in answered:
            side.result = None
        exchange.problems = [problem]
        return exchange
    exchange.judge_endpoint = judge.public_dict()
    exchange.weak = bool(exchange.weak or is_weak(judge))
    exchange.judging = "llm"
    item_id = _item_key(exchange)
    params = json.dumps(_params(exchange), default=str)

    batch = ResultBatch()
    for side in answered:  # a result judged again replaces the old one
        _add_side(batch, (run_id, item_id, side.mode), side, response=False, retried=True)

    def write(con: duckdb.DuckDBPyConnection) -> None:
        write_batch(con, batch)
        con.execute(
            "UPDATE runs SET judge_model = ?, judge_endpoint = ?, weak_model = ?, "
            "params = ?, updated_at = current_timestamp WHERE run_id = ?",
            [judge.model, judge.name, exchange.weak, params, run_id],
        )

    store.transaction(write)
    return exchange


def judge_exchange(store: Store, run_id: str, judge: Endpoint, **kwargs: Any) -> Exchange | None:
    """Blocking wrapper of judge_exchange_async (its own event loop)."""
    return asyncio.run(judge_exchange_async(store, run_id, judge, **kwargs))


def save_human_labels(
    store: Store,
    run_id: str,
    annotator: str,
    labels: Mapping[str, Mapping[str, bool]],
    note: str | None = None,
) -> int:
    """A person's labels (all of the benchmark's) for each answered side of an exchange, as
    human labels of the playground run (variant = mode), all in one transaction; the LLM
    judge's value, if any, is kept beside each label as in the audit."""
    annotator = (annotator or "").strip()
    if not annotator:
        raise ValueError("type your name first: it is saved with the labels")
    exchange = load_exchange(store, run_id)
    if exchange is None:
        raise ValueError(f"no playground exchange {run_id!r}")
    names = label_names(registry.get(exchange.benchmark))
    item_id = _item_key(exchange)
    rows: list[list[Any]] = []
    for mode, values in labels.items():
        side = exchange.sides.get(mode)
        if side is None or side.status != "ok":
            raise ValueError(f"the {mode} side of {run_id} has no answer to label")
        missing = [name for name in names if name not in values]
        if missing:
            raise ValueError(f"{mode}: missing label(s) {', '.join(missing)}")
        judged_labels = (side.result.labels if side.result else None) or {}
        for name in names:
            judged = judged_labels.get(name)
            rows.append(
                [
                    run_id,
                    item_id,
                    mode,
                    annotator,
                    name,
                    bool(values[name]),
                    None if judged is None else bool(judged),
                    (note or "").strip() or None,
                ]
            )
    stamp = datetime.now(UTC).replace(tzinfo=None)

    def write(con: duckdb.DuckDBPyConnection) -> int:
        upsert_rows(
            con, "human_labels", HUMAN_LABEL_COLUMNS, HUMAN_LABEL_KEYS, [[*r, stamp] for r in rows]
        )
        return len(rows)

    return int(store.transaction(write))


def human_labels(store: Store, run_id: str, annotator: str | None = None) -> pd.DataFrame:
    """Human labels of one exchange (all annotators, or one): variant, annotator, label, value."""
    where, params = ("AND annotator = ?", [run_id, annotator]) if annotator else ("", [run_id])
    return store.df(
        f"""SELECT variant, annotator, label, value, judge_value, note, created_at
                        FROM human_labels WHERE run_id = ? {where}
                        ORDER BY annotator, variant, label""",
        params,
    )


def list_exchanges(store: Store, benchmark: str | None = None, limit: int = 200) -> pd.DataFrame:
    """Saved playground runs of the benchmark, newest first, with the prompt and, per mode, its
    first label as the judge gave it (Mis-prompt's `proactive_detection`, `passive_detection`)."""
    bench = playground_benchmark(benchmark)
    first = next(iter(label_names(bench)), None)
    per_mode = "".join(
        f"max(CASE WHEN v.variant = '{mode}' THEN TRY_CAST(v.labels->>$label AS BOOLEAN) END) "
        f'AS "{mode}_{first}",\n'
        for mode in MODES
        if first
    )
    frame = store.df(
        f"""
        SELECT r.run_id, r.created_at, r.model, r.endpoint, r.setting, r.judge_model,
               coalesce(r.weak_model, false) AS weak_model, r.status,
               json_extract_string(r.params, '$.item.prompt') AS prompt,
               json_extract_string(r.params, '$.item.secondary_category') AS category,
               {per_mode}
               count(v.run_id) > 0 AS llm_judged
        FROM runs r LEFT JOIN results v ON v.run_id = r.run_id AND v.judging = $judging
        WHERE r.kind = $kind AND r.benchmark = $bench
        GROUP BY ALL ORDER BY r.created_at DESC, r.run_id DESC LIMIT {int(limit)}
    """,
        {"label": first or "", "judging": DEFAULT_JUDGING, "kind": KIND, "bench": bench.name},
    )
    people = {
        row[0]
        for row in store.rows(
            """SELECT DISTINCT h.run_id FROM human_labels h JOIN runs r
               ON r.run_id = h.run_id WHERE r.kind = ?""",
            [KIND],
        )
    }
    frame["judged_by"] = [
        " + ".join(w for w, on in (("LLM judge", bool(llm)), ("person", rid in people)) if on)
        or "not yet"
        for rid, llm in zip(frame["run_id"], frame["llm_judged"])
    ]
    return frame.drop(columns="llm_judged")


_RESULT_FIELDS = [f.name for f in fields(Result)]
_RESPONSE_COLUMNS = (
    "variant, messages, response, status, error, attempts, prompt_tokens, completion_tokens, "
    "latency_ms, cost_usd, cached"
)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _results(store: Store, run_id: str) -> dict[str, Result]:
    """The run's stored results (its own judging) by variant, as the judge gave them."""
    rows = store.rows(
        f"SELECT variant, {', '.join(_RESULT_FIELDS)} FROM results "
        "WHERE run_id = ? AND judging = ?",
        [run_id, DEFAULT_JUDGING],
    )
    found = {}
    for variant, *values in rows:
        record = dict(zip(_RESULT_FIELDS, values))
        record["labels"], record["metadata"] = _json(record["labels"]), _json(record["metadata"])
        found[variant] = Result(**record)
    return found


def load_exchange(store: Store, run_id: str) -> Exchange | None:
    """A saved exchange, as it was shown (responses, results with rationales)."""
    runs = store.rows(
        "SELECT benchmark, params, setting, endpoint, model, judge_endpoint, judge_model, "
        "weak_model, created_at, template_id FROM runs WHERE run_id = ? AND kind = ?",
        [run_id, KIND],
    )
    if not runs:
        return None
    bench_name, raw_params, setting, endpoint, model, judge_endpoint, judge_model = runs[0][:7]
    weak, created_at, template_id = runs[0][7:]
    role = role_of(registry.get(bench_name))
    params = _json(raw_params) or {}
    results = _results(store, run_id)
    sides: dict[str, Side] = {}
    for mode, messages, response, status, error, attempts, *usage in store.rows(
        f"SELECT {_RESPONSE_COLUMNS} FROM responses WHERE run_id = ?", [run_id]
    ):
        if mode not in MODES:
            continue
        prompt_tokens, completion_tokens, latency_ms, cost_usd, cached = usage
        sides[mode] = Side(
            mode,
            _json(messages) or [],
            response=response or "",
            status=status,
            error=error,
            attempts=int(attempts or 0),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_ms=latency_ms,
            cost_usd=cost_usd,
            cached=bool(cached),
            result=results.get(mode),
        )
    problems = [
        EndpointProblem(**{**p, "urls": tuple(p.get("urls") or ())})
        for p in params.get("problems") or []
    ]
    return Exchange(
        run_id=run_id,
        benchmark=bench_name,
        item=params.get("item") or {},
        setting=setting,
        model_endpoint=params.get("model_endpoint") or {"name": endpoint, "model": model},
        judge_endpoint=params.get("judge_endpoint", {"name": judge_endpoint, "model": judge_model}),
        temperature=float(params.get("temperature", 0.0)),
        max_tokens=int(params.get("max_tokens", DEFAULT_MAX_TOKENS)),
        sides={mode: sides[mode] for mode in MODES if mode in sides},
        weak=bool(weak),
        problems=problems,
        created_at=str(created_at),
        template_id=template_id or "",
        saved=True,
        judging=params.get("judging") or ("llm" if results else "later"),
        judge_template=str(params.get("judge_template") or role.legacy_judge_template or ""),
    )


def verdict_badges(exchange: Exchange, result: Result | None) -> list[tuple[str, bool | None, str]]:
    """(label, value, rationale) for each of the benchmark's labels, in its tables' order."""
    if result is None or not result.labels:
        return []
    bench = registry.get(exchange.benchmark)
    role = role_of(bench)
    return [
        (name, result.labels.get(name), role.rationale(result, name) or "")
        for name in label_names(bench)
    ]


def judge_is_weak(exchange: Exchange) -> bool:
    """The exchange's LLM judge is a weak model (the shipped SmolLM2): its verdicts are shown
    with the warning on them, not as confident chips."""
    judge = exchange.judge_endpoint or {}
    return is_weak(SimpleNamespace(model=judge.get("model") or "", weak=bool(judge.get("weak"))))


def verdict_warning(exchange: Exchange, result: Result | None) -> str | None:
    """The benchmark's note on a result worth reading (e.g. inconsistent labels), if any."""
    if result is None:
        return None
    return role_of(registry.get(exchange.benchmark)).warning(result)


__all__ = [
    "MODES",
    "JUDGINGS",
    "PlaygroundRole",
    "Exchange",
    "Side",
    "EndpointProblem",
    "Collapsed",
    "playground_benchmark",
    "playground_benchmarks",
    "role_of",
    "label_names",
    "custom_item",
    "example_items",
    "item_from_row",
    "run_exchange",
    "run_exchange_async",
    "save_exchange",
    "judge_exchange",
    "judge_exchange_async",
    "save_human_labels",
    "human_labels",
    "list_exchanges",
    "load_exchange",
    "configure_help",
    "verdict_badges",
    "verdict_warning",
    "judge_is_weak",
    "collapse_text",
    "default_judging",
]
