"""The playground: one erroneous prompt, sent proactive (as is) and passive (with the explicit
error-handling instruction) side by side, streamed, then judged — saved as a playground run.

What researchers show colleagues (issue 5): a model answers a flawed question as if nothing were
wrong unless told to check it. One exchange = one run (`runs.kind = 'playground'`) with two
responses (variants `proactive` and `passive`) and their two verdicts, so it can be reopened and
exported like any run. The run's `item_set` is left empty and the item lives in `params.item`,
so a one-item demo never enters the F1 tables of real runs.

Who judges (`JUDGINGS`): a person ("human": the page shows the ground truth beside both answers
and saves the six labels as human labels of the exchange — the honest choice when the judge
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
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from core.benchmarks.misprompt import prompts
from core.benchmarks.misprompt.judge import judge_response
from core.benchmarks.misprompt.record import to_result
from core.benchmarks.misprompt.task import is_weak
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.engine.client import CURRENT_SINK, CallFailed, CallSink, ModelClient
from core.engine.endpoints import (
    LOCAL_NAME,
    LOCAL_URL_ENV_VAR,
    MODELS_ENV_VAR,
    Endpoint,
    EndpointError,
    redact_url,
)
from core.engine.results import Response, ResultBatch, write_batch
from core.store import Store

MODES = ("proactive", "passive")
KIND = "playground"
DEFAULT_MAX_TOKENS = 400
JUDGINGS = ("human", "llm", "later")  # who judges an exchange: a person, the LLM now, LLM later
TICK_S = 0.5  # how often a phase reports its elapsed time
OnToken = Callable[[str], Any]
OnTick = Callable[[str, float], Any]  # (phase, elapsed seconds)


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


def example_items(store: Store, item_set: str | None = None) -> pd.DataFrame:
    """Loaded Mis-prompt items to browse (all sets, or one), erroneous first."""
    where, params = ("AND i.item_set = ?", [item_set]) if item_set else ("", [])
    return store.df(
        f"""
        SELECT i.item_set, i.item_id, i.is_error,
               coalesce(i.primary_category, '(control)') AS primary_category,
               coalesce(i.secondary_category, '(control)') AS secondary_category,
               i.prompt, i.explanation, i.gold
        FROM items i WHERE i.benchmark = 'misprompt' {where}
        ORDER BY i.is_error DESC, i.primary_category, i.secondary_category, i.item_set, i.item_id
    """,
        params,
    )


def item_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
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
    """One mode of an exchange: what was sent, what came back, and the judge's verdict."""

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
    verdict: dict[str, Any] | None = None
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
    run_id: str
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
    judge_template: str = prompts.DEFAULT_JUDGE_TEMPLATE
    judging: str = "llm"

    @property
    def answered(self) -> bool:
        return any(s.status == "ok" for s in self.sides.values())

    @property
    def judged(self) -> bool:
        """The LLM judge has given a verdict on at least one side."""
        return any(s.verdict for s in self.sides.values())


def new_run_id() -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"playground-{stamp}-{secrets.token_hex(2)}"


def build_sides(item: Mapping[str, Any], setting: str) -> dict[str, Side]:
    """The proactive (prompt as is, under the setting) and passive (instruction added) messages."""
    return {
        mode: Side(mode, prompts.build_messages(item, setting, passive=(mode == "passive")))
        for mode in MODES
    }


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


async def _judge(
    client: ModelClient, item: Mapping[str, Any], side: Side, template: str | None = None
) -> None:
    sink = CallSink()
    token = CURRENT_SINK.set(sink)
    try:
        side.verdict = await judge_response(client, item, side.response, template=template)
    finally:
        CURRENT_SINK.reset(token)
    side.calls.extend(sink.calls)


async def _timed(awaitable: Any, phase: str, on_tick: OnTick | None) -> Any:
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
    bad = [
        s.verdict
        for s in sides
        if s.verdict
        and s.verdict.get("status") != "ok"
        and "judge call failed" in str(s.verdict.get("error") or "")
    ]
    if not bad:
        return None
    error = str(bad[0].get("error")).removeprefix("judge call failed: ")
    return EndpointProblem.from_failure("judge", judge, error)


async def run_exchange_async(
    item: Mapping[str, Any],
    setting: str,
    model: Endpoint,
    judge: Endpoint | None,
    *,
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
    prompts.check_setting(setting)
    if judging != "llm":
        judge = None
    elif judge is None:
        raise ValueError("judging='llm' needs a judge endpoint")
    judge_tid = prompts.judge_template_id(judge_template)
    sides = build_sides(item, setting)
    exchange = Exchange(
        run_id=new_run_id(),
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
        template_id=f"{prompts.template_id(setting)} | {prompts.template_id(setting, True)}"
        f" | judge {judge_tid}",
        judge_template=judge_tid.split("/", 1)[1],
    )
    callbacks = on_token or {}
    model_client = ModelClient(
        model,
        store=store,
        use_cache=use_cache,
        max_retries=max_retries,
        backoff_base_s=0.2,
        backoff_max_s=2.0,
    )
    clients = [(model_client, model, "model")]
    judge_client = None
    if judge is not None:
        judge_client = ModelClient(
            judge,
            store=store,
            use_cache=use_cache,
            max_retries=max_retries,
            backoff_base_s=0.2,
            backoff_max_s=2.0,
        )
        clients.append((judge_client, judge, "judge"))
    try:
        for client, ep, role in clients:
            try:
                client.check()
            except EndpointError as exc:
                exchange.problems.append(EndpointProblem.from_failure(role, ep, str(exc)))
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
                        _judge(judge_client, item, side, exchange.judge_template)
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
    return {
        "temperature": exchange.temperature,
        "max_tokens": exchange.max_tokens,
        "item": exchange.item,
        "model_endpoint": exchange.model_endpoint,
        "judge_endpoint": exchange.judge_endpoint,
        "judging": exchange.judging,
        "judge_template": f"misprompt/{exchange.judge_template}",
        "problems": [asdict(p) for p in exchange.problems],
    }


def _item_key(exchange: Exchange) -> str:
    return str(exchange.item.get("item_id") or "custom")


def _add_side(
    batch: ResultBatch,
    key: tuple[str, str, str],
    side: Side,
    item: Mapping[str, Any],
    *,
    response: bool = True,
    retried: bool = False,
) -> None:
    """A side's rows for the one writer (core/engine/results.py): its response (unless only judged
    now), its verdict (if judged) and its call records."""
    if response:
        batch.add_response(key, side.as_response())
    if side.verdict is not None:
        batch.add_result(key, to_result(side.verdict, item), retried=retried)
    for call in side.calls:
        batch.add_call(key, call)


def save_exchange(store: Store, exchange: Exchange) -> str:
    """Write the run, its two responses, verdicts (if judged) and call records in one
    transaction."""
    item_id = _item_key(exchange)
    status = "done" if all(s.status == "ok" for s in exchange.sides.values()) else "failed"
    model_ep, judge_ep = exchange.model_endpoint, exchange.judge_endpoint or {}

    batch = ResultBatch()
    for mode, side in exchange.sides.items():
        _add_side(batch, (exchange.run_id, item_id, mode), side, exchange.item)

    def write(con) -> None:
        con.execute(
            "INSERT INTO runs (run_id, benchmark, kind, item_set, model, endpoint, setting, mode, "
            "judge_model, judge_endpoint, template_id, params, weak_model, status, n_planned, "
            "created_at, updated_at) VALUES (?, 'misprompt', ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?, current_timestamp, current_timestamp)",
            [
                exchange.run_id,
                KIND,
                model_ep["model"],
                model_ep["name"],
                exchange.setting,
                "+".join(MODES),
                judge_ep.get("model"),
                judge_ep.get("name"),
                exchange.template_id,
                json.dumps(_params(exchange), default=str),
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

    Verdicts, their call records and the run's judge are written in one transaction; when the
    judge endpoint does not answer nothing is written and the Exchange carries the problem.
    """
    exchange = load_exchange(store, run_id)
    if exchange is None:
        return None
    client = ModelClient(
        judge, store=store, max_retries=max_retries, backoff_base_s=0.2, backoff_max_s=2.0
    )
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
                *(_judge(client, exchange.item, side, exchange.judge_template) for side in answered)
            ),
            "judging",
            on_tick,
        )
    finally:
        await client.aclose()
    problem = _judge_problem(judge, answered)
    if problem:
        for side in answered:
            side.verdict = None
        exchange.problems = [problem]
        return exchange
    exchange.judge_endpoint = judge.public_dict()
    exchange.weak = bool(exchange.weak or is_weak(judge))
    exchange.judging = "llm"
    item_id = _item_key(exchange)

    batch = ResultBatch()
    for side in answered:  # a verdict judged again replaces the old one
        _add_side(
            batch, (run_id, item_id, side.mode), side, exchange.item, response=False, retried=True
        )

    def write(con) -> None:
        write_batch(con, batch)
        con.execute(
            "UPDATE runs SET judge_model = ?, judge_endpoint = ?, weak_model = ?, "
            "params = ?, updated_at = current_timestamp WHERE run_id = ?",
            [
                judge.model,
                judge.name,
                exchange.weak,
                json.dumps(_params(exchange), default=str),
                run_id,
            ],
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
    """A person's six labels for each answered side of an exchange, as human labels of the
    playground run (variant = mode), all in one transaction; the LLM judge's value, if any, is
    kept beside each label as in the audit."""
    annotator = (annotator or "").strip()
    if not annotator:
        raise ValueError("type your name first: it is saved with the labels")
    exchange = load_exchange(store, run_id)
    if exchange is None:
        raise ValueError(f"no playground exchange {run_id!r}")
    item_id = _item_key(exchange)
    rows: list[list[Any]] = []
    for mode, values in labels.items():
        side = exchange.sides.get(mode)
        if side is None or side.status != "ok":
            raise ValueError(f"the {mode} side of {run_id} has no answer to label")
        missing = [l for l in JUDGE_LABELS if l not in values]
        if missing:
            raise ValueError(f"{mode}: missing label(s) {', '.join(missing)}")
        verdict = side.verdict or {}
        for label in JUDGE_LABELS:
            judged = verdict.get(label)
            rows.append(
                [
                    run_id,
                    item_id,
                    mode,
                    annotator,
                    label,
                    bool(values[label]),
                    None if judged is None else bool(judged),
                    (note or "").strip() or None,
                ]
            )
    stamp = datetime.now(UTC).replace(tzinfo=None)

    def write(con) -> int:
        for row in rows:
            con.execute(
                "INSERT OR REPLACE INTO human_labels (run_id, item_id, variant, "
                "annotator, label, value, judge_value, note, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [*row, stamp],
            )
        return len(rows)

    return store.transaction(write)


def human_labels(store: Store, run_id: str, annotator: str | None = None) -> pd.DataFrame:
    """Human labels of one exchange (all annotators, or one): variant, annotator, label, value."""
    where, params = ("AND annotator = ?", [run_id, annotator]) if annotator else ("", [run_id])
    return store.df(
        f"""SELECT variant, annotator, label, value, judge_value, note, created_at
                        FROM human_labels WHERE run_id = ? {where}
                        ORDER BY annotator, variant, label""",
        params,
    )


def list_exchanges(store: Store, limit: int = 200) -> pd.DataFrame:
    """Saved playground runs, newest first, with the prompt and both detection labels."""
    frame = store.df(f"""
        SELECT r.run_id, r.created_at, r.model, r.endpoint, r.setting, r.judge_model,
               coalesce(r.weak_model, false) AS weak_model, r.status,
               json_extract_string(r.params, '$.item.prompt') AS prompt,
               json_extract_string(r.params, '$.item.secondary_category') AS category,
               max(CASE WHEN v.variant = 'proactive' THEN v.detection END) AS proactive_detection,
               max(CASE WHEN v.variant = 'passive' THEN v.detection END) AS passive_detection,
               count(v.run_id) > 0 AS llm_judged
        FROM runs r LEFT JOIN misprompt_verdicts v ON v.run_id = r.run_id
        WHERE r.kind = '{KIND}'
        GROUP BY ALL ORDER BY r.created_at DESC, r.run_id DESC LIMIT {int(limit)}
    """)
    people = set(
        store.df(f"""SELECT DISTINCT h.run_id FROM human_labels h JOIN runs r
                               ON r.run_id = h.run_id WHERE r.kind = '{KIND}'""")["run_id"]
    )
    frame["judged_by"] = [
        " + ".join(w for w, on in (("LLM judge", bool(llm)), ("person", rid in people)) if on)
        or "not yet"
        for rid, llm in zip(frame["run_id"], frame["llm_judged"])
    ]
    return frame.drop(columns="llm_judged")


def load_exchange(store: Store, run_id: str) -> Exchange | None:
    """A saved exchange, as it was shown (responses, verdicts with rationales)."""
    runs = store.df("SELECT * FROM runs WHERE run_id = ? AND kind = ?", [run_id, KIND])
    if runs.empty:
        return None
    run = runs.iloc[0]
    params = json.loads(run["params"]) if isinstance(run["params"], str) else (run["params"] or {})
    responses = store.df("SELECT * FROM responses WHERE run_id = ?", [run_id])
    verdicts = store.df("SELECT * FROM misprompt_verdicts WHERE run_id = ?", [run_id])
    sides: dict[str, Side] = {}
    for mode in MODES:
        r = responses[responses["variant"] == mode]
        if r.empty:
            continue
        row = r.iloc[0]
        side = Side(
            mode,
            json.loads(row["messages"]) if row["messages"] else [],
            response=row["response"] or "",
            status=row["status"],
            error=row["error"],
            attempts=int(row["attempts"] or 0),
            prompt_tokens=_int_or_none(row["prompt_tokens"]),
            completion_tokens=_int_or_none(row["completion_tokens"]),
            latency_ms=_float_or_none(row["latency_ms"]),
            cost_usd=_float_or_none(row["cost_usd"]),
            cached=bool(row["cached"]),
        )
        v = verdicts[verdicts["variant"] == mode]
        if not v.empty:
            vrow = v.iloc[0].to_dict()
            verdict = {k: (None if _isna(val) else val) for k, val in vrow.items()}
            for label in JUDGE_LABELS:
                if verdict.get(label) is not None:
                    verdict[label] = bool(verdict[label])
            rationales = verdict.get("rationales")
            if isinstance(rationales, str):
                verdict["rationales"] = json.loads(rationales)
            side.verdict = verdict
        sides[mode] = side
    problems = [
        EndpointProblem(**{**p, "urls": tuple(p.get("urls") or ())})
        for p in params.get("problems") or []
    ]
    return Exchange(
        run_id=run_id,
        item=params.get("item") or {},
        setting=run["setting"],
        model_endpoint=params.get("model_endpoint")
        or {"name": run["endpoint"], "model": run["model"]},
        judge_endpoint=(
            params["judge_endpoint"]
            if "judge_endpoint" in params
            else {"name": run["judge_endpoint"], "model": run["judge_model"]}
        ),
        temperature=float(params.get("temperature", 0.0)),
        max_tokens=int(params.get("max_tokens", DEFAULT_MAX_TOKENS)),
        sides=sides,
        weak=bool(run["weak_model"]),
        problems=problems,
        created_at=str(run["created_at"]),
        template_id=run["template_id"] or "",
        saved=True,
        judging=params.get("judging") or ("llm" if not verdicts.empty else "later"),
        judge_template=str(params.get("judge_template") or "misprompt/judge.v1").split("/", 1)[-1],
    )


def _isna(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _int_or_none(value: Any) -> int | None:
    return None if _isna(value) else int(value)


def _float_or_none(value: Any) -> float | None:
    return None if _isna(value) else float(value)


def verdict_badges(verdict: Mapping[str, Any] | None) -> list[tuple[str, bool | None, str]]:
    """(label, value, rationale) for the six labels, in the SPEC's order."""
    if not verdict:
        return []
    rationales = verdict.get("rationales") or {}
    if isinstance(rationales, str):
        rationales = json.loads(rationales)
    return [
        (label, verdict.get(label), str(rationales.get(label, "") or "")) for label in JUDGE_LABELS
    ]


__all__ = [
    "MODES",
    "JUDGINGS",
    "Exchange",
    "Side",
    "EndpointProblem",
    "Collapsed",
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
    "collapse_text",
    "default_judging",
]
