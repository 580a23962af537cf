"""An async chat client for one endpoint: bounded, retrying, cached, accounted.

Why not just `openai.AsyncOpenAI(max_retries=...)`: a run needs (1) one concurrency limit per
endpoint shared by the model and judge roles and spread over replica URLs, (2) backoff that
honours Retry-After and also covers timeouts and malformed bodies, (3) every attempt recorded
with tokens, latency and cost, (4) identical requests answered from the database cache, and
(5) the API key kept out of everything that is stored or printed.

Inside a run, call records and new cache entries are not written per call (a DuckDB write
costs ~20 ms because nobody holds the file open): they go to the unit's `CallSink` (set by the
runner through a context variable) and land in the same transaction as the unit's response.
Outside a run (the playground) they are written straight away.

The HTTP layer: a plain request goes through `httpx2` (what the openai package itself sends
with) with openai's headers, bearer key, default query, limits and error texts; the openai
package (~0.5 s of CPU to import, a third of a shard process's start-up, and ~1 ms of CPU per
call in its request-options and response layers) is imported only for a streamed reply (the
playground's on_token), where its SSE parsing is worth having. tests/test_startup_imports.py
keeps it off the run path.
"""

from __future__ import annotations

import asyncio
import contextvars
import email.utils
import hashlib
import inspect
import itertools
import json
import math
import random
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import httpx2

if TYPE_CHECKING:
    import openai

from core.engine.endpoints import Endpoint, EndpointError, redact_url, split_query, url_secrets
from core.store import Store, upsert_rows

OnToken = Callable[[str], Any | Awaitable[Any]]


@dataclass
class ChatResult:
    """One answered chat request (after retries), or one answered from the cache."""

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float
    cost_usd: float | None
    cached: bool
    attempts: int
    finish_reason: str | None


class CallFailed(Exception):
    """A request that failed for good (non-retryable error, or retries exhausted)."""

    def __init__(
        self, message: str, *, attempts: int, last_error: str, http_status: int | None = None
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error
        self.http_status = http_status


@dataclass
class CallSink:
    """Where a unit's call records and new cache rows wait for the runner's next flush."""

    calls: list[dict] = field(default_factory=list)
    cache_rows: list[tuple[str, str]] = field(default_factory=list)
    refresh: bool = False  # ask afresh (no cache reads): the unit failed before, maybe on a
    #                        cached answer (e.g. garbled judge JSON), so re-asking must re-ask
    sample: int = 1  # which sample of the same request this unit is (a run's epoch, a
    #                  rescore's repeat): from 2 on, the cache key of `sample_role`'s calls
    #                  names it, so epoch 2 is asked, not answered from epoch 1's cache entry
    sample_role: str = "model"


CURRENT_SINK: contextvars.ContextVar[CallSink | None] = contextvars.ContextVar(
    "ehw_call_sink", default=None
)

# Shared per event loop: one semaphore per endpoint (model and judge roles share it) and one
# openai client per (endpoint URL, key) so connections are pooled.
_LOOP_STATE: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict] = (
    weakref.WeakKeyDictionary()
)
_LOOP_GUARD = threading.Lock()


def _loop_state() -> dict:
    loop = asyncio.get_running_loop()
    with _LOOP_GUARD:
        state = _LOOP_STATE.get(loop)
        if state is None:
            state = {"semaphores": {}, "clients": {}}
            _LOOP_STATE[loop] = state
        return state


def _endpoint_key(endpoint: Endpoint) -> tuple:
    return (endpoint.name, endpoint.base_urls, endpoint.max_concurrency)


def cache_scope(endpoint: Endpoint) -> str:
    """Requests to the same model at the same URLs may share answers."""
    ident = json.dumps([sorted(endpoint.base_urls), endpoint.model])
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


# json.dumps(..., sort_keys=True, ensure_ascii=False, default=str) builds an encoder per call;
# one kept encoder gives the same text (stored cache keys must not change) for less.
_KEY_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)
_ROW_JSON = json.JSONEncoder(ensure_ascii=False)


def cache_key(
    endpoint: Endpoint, messages: list[dict], params: dict, scope: str | None = None
) -> str:
    body = _KEY_JSON.encode({"messages": messages, "params": params})
    return f"{scope or cache_scope(endpoint)}:{hashlib.sha256(body.encode()).hexdigest()[:40]}"


def _positive(seconds: float) -> float | None:
    """A usable wait, or None: a date in the past, 0, NaN or a negative number would make the
    client hammer the server with no pause, so those fall back to exponential backoff."""
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def _retry_after_seconds(headers: Any) -> float | None:
    """Retry-After as seconds (delta or HTTP date); also the non-standard retry-after-ms.
    None (use backoff) when absent, invalid, or not in the future."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        value = headers.get("retry-after")
    except Exception:
        return None
    if ms:
        try:
            return _positive(float(ms) / 1000.0)
        except ValueError:
            pass
    if not value:
        return None
    try:
        return _positive(float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
            return _positive(when.timestamp() - time.time())
        except (TypeError, ValueError, OverflowError):
            return None


class HTTPStatusFailure(Exception):
    """An error status (4xx, 5xx) worded as openai's APIStatusError: "Error code: 500", plus
    " - <message>" when the body is JSON with an error message (the stored reason's text)."""

    def __init__(self, response: httpx2.Response) -> None:
        message = f"Error code: {response.status_code}"
        try:
            body = json.loads(response.text.strip())
        except Exception:  # noqa: BLE001 - any body: the status says enough
            body = None
        error = body.get("error", body) if isinstance(body, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        if isinstance(detail, str) and detail:
            message += f" - {detail}"
        super().__init__(message)
        self.message = message
        self.status_code = response.status_code
        self.headers = response.headers


class ConnectionFailure(Exception):
    """No reply: the connection failed or broke (the httpx2 error is its cause), as openai's
    APIConnectionError."""

    def __init__(self) -> None:
        super().__init__("Connection error.")


def _request_errors() -> tuple[type[BaseException], ...]:
    """What openai turns into APIConnectionError: httpx2's request errors, and the TLS and
    end-of-stream errors httpx2 lets through."""
    import ssl

    import anyio

    return (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream)


_REQUEST_ERRORS = _request_errors()


def _openai_errors() -> Any:
    """The openai package when something imported it (a streamed reply): its errors can only
    have been raised then, so classifying a failure never imports it."""
    return sys.modules.get("openai")


def _kinds(
    own: tuple[type[BaseException], ...], openai_name: str
) -> tuple[type[BaseException], ...]:
    """`own` exception types, and openai's `openai_name` when openai is loaded: one failure
    worded alike whether a plain request (httpx2) or a streamed one (openai) raised it."""
    oa = _openai_errors()
    return own + ((getattr(oa, openai_name),) if oa is not None else ())


class StreamCut(Exception):
    """A streamed reply that broke off before its end (connection reset, proxy timeout...)."""

    def __init__(self, chars: int, cause: BaseException) -> None:
        super().__init__(
            f"stream ended before completion (after {chars} chars): {_cause_text(cause)}"
        )
        self.chars = chars


def _chain(exc: BaseException) -> list[BaseException]:
    """exc and its causes, outermost first (bounded: chains can loop)."""
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in out and len(out) < 12:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def _cause_text(exc: BaseException) -> str:
    """A non-empty description of a network error: httpx's ReadError has no message, the
    socket error under it says what happened ("[Errno 104] Connection reset by peer")."""
    chain = _chain(exc)
    if isinstance(exc, _kinds((ConnectionFailure,), "APIConnectionError")) and len(chain) > 1:
        chain = chain[1:]  # "Connection error." says nothing
    name = type(chain[0]).__name__
    for link in chain:
        text = str(link).strip()
        if text:
            return text if text.startswith(name) else f"{name}: {text}"
    return name


def is_connection_refused(exc: BaseException) -> bool:
    """Nobody listens at the URL (as opposed to a slow or failing server)."""
    return any(isinstance(link, ConnectionRefusedError) for link in _chain(exc))


REFUSED_LIMIT = 5  # consecutive refused connections before an endpoint's remaining calls fail
# Consecutive timeouts (no reply of any kind in between) before an endpoint that accepts
# connections and then hangs is given up: at least TIMEOUT_LIMIT_MIN, and at least two full
# waves of the endpoint's concurrency. Why two waves: every request in flight times out at the
# same moment when a server stalls once (a model reload, a long GC pause), so one wave is not
# proof; the same requests timing out again after their backoff, with not one reply between,
# is. A hung endpoint then costs about two timeouts instead of timeout × attempts × items.
TIMEOUT_LIMIT_MIN = 5


def default_timeout_limit(max_concurrency: int) -> int:
    return max(TIMEOUT_LIMIT_MIN, 2 * int(max_concurrency))


def is_timeout(exc: BaseException) -> bool:
    """No complete reply in time (the connection was accepted: not a refusal)."""
    own = (httpx2.TimeoutException, TimeoutError, asyncio.TimeoutError)
    return isinstance(exc, _kinds(own, "APITimeoutError"))


@dataclass
class _Failure:
    message: str
    retryable: bool
    http_status: int | None = None
    retry_after: float | None = None


RETRYABLE_STATUS = {408, 409, 425, 429}


def classify_error(exc: BaseException, timeout_s: float) -> _Failure:
    """Which failures are worth retrying: rate limits, 5xx, timeouts, dropped or garbled replies.
    The same words for a plain request (httpx2, HTTPStatusFailure, ConnectionFailure) as for a
    streamed one (openai's errors)."""
    if isinstance(exc, _kinds((HTTPStatusFailure,), "APIStatusError")):
        error: Any = exc  # HTTPStatusFailure, or openai's APIStatusError (typed only if loaded)
        status = error.status_code
        detail = getattr(exc, "message", None) or str(exc)
        if isinstance(exc, HTTPStatusFailure):
            headers: Any = exc.headers
        else:
            headers = error.response.headers if error.response else None
        return _Failure(
            f"HTTP {status}: {detail}"[:500],
            status in RETRYABLE_STATUS or status >= 500,
            status,
            _retry_after_seconds(headers),
        )
    if is_timeout(exc):
        return _Failure(f"timeout: no complete reply within {timeout_s:g} s", True)
    if isinstance(exc, StreamCut):
        return _Failure(str(exc)[:500], True)
    if isinstance(exc, _kinds((ConnectionFailure,), "APIConnectionError")):
        return _Failure(f"connection error: {_cause_text(exc)}"[:500], True)
    if isinstance(exc, _kinds((json.JSONDecodeError,), "APIResponseValidationError")):
        return _Failure(f"malformed response body: {exc}"[:500], True)
    if isinstance(exc, EndpointError):
        return _Failure(str(exc), False)
    return _Failure(f"{type(exc).__name__}: {exc}"[:500], False)


class _CacheIndex:
    """Bulk-mode cache for runs: which keys exist (loaded once) + batched fetches of hits.

    Why: opening the database costs ~20 ms, so a lookup per call would dominate a run. A fresh
    run finds no keys and never touches the database for lookups; a resumed run fetches its
    hits in batches (one query for every key waiting at that moment).
    """

    def __init__(self, store: Store, scope: str) -> None:
        self.store = store
        self.scope = scope
        self.keys: set[str] | None = None
        self.recent: OrderedDict[str, str] = OrderedDict()  # written in this process
        self.pending: dict[str, list[asyncio.Future]] = {}
        self.fetching = False
        self.load_lock = asyncio.Lock()

    async def ensure_loaded(self) -> None:
        if self.keys is not None:
            return
        async with self.load_lock:
            if self.keys is None:
                rows = await asyncio.to_thread(
                    self.store.rows,
                    "SELECT key FROM call_cache WHERE starts_with(key, ?)",
                    [self.scope + ":"],
                )
                self.keys = {r[0] for r in rows}

    def remember(self, key: str, value: str) -> None:
        """A new answer of this run: kept in a small LRU (not added to `keys`, so memory stays
        flat however many calls a run makes; an identical request far apart just asks again)."""
        self.recent[key] = value
        self.recent.move_to_end(key)
        while len(self.recent) > 1024:
            self.recent.popitem(last=False)

    async def get(self, key: str) -> str | None:
        await self.ensure_loaded()
        if key in self.recent:
            return self.recent[key]
        assert self.keys is not None
        if key not in self.keys:
            return None
        future = asyncio.get_running_loop().create_future()
        self.pending.setdefault(key, []).append(future)
        if not self.fetching:
            self.fetching = True
            asyncio.ensure_future(self._fetch_loop())
        return await future

    async def _fetch_loop(self) -> None:
        try:
            while self.pending:
                batch, self.pending = self.pending, {}
                keys = list(batch)
                try:
                    rows = await asyncio.to_thread(
                        self.store.rows,
                        "SELECT key, response FROM call_cache WHERE list_contains(?, key)",
                        [keys],
                    )
                    found = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in rows}
                except Exception:
                    found = {}  # a cache read failing must not fail the call: just ask again
                for key, futures in batch.items():
                    for future in futures:
                        if not future.done():
                            future.set_result(found.get(key))
        finally:
            self.fetching = False


class ModelClient:
    """Chat with one endpoint. Create once per run; use from one event loop at a time."""

    def __init__(
        self,
        endpoint: Endpoint,
        store: Store | None = None,
        use_cache: bool = True,
        max_retries: int | None = None,
        *,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        refused_limit: int = REFUSED_LIMIT,
        timeout_limit: int | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.refused_limit = refused_limit  # 0: never stop asking (see _circuit)
        self.timeout_limit = (  # 0: never stop asking a hanging endpoint
            default_timeout_limit(endpoint.max_concurrency)
            if timeout_limit is None
            else timeout_limit
        )
        self.store = store
        self.use_cache = use_cache
        self.max_retries = endpoint.max_retries if max_retries is None else max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._rr = itertools.count()
        self._scope = cache_scope(endpoint)
        self._loop: asyncio.AbstractEventLoop | None = None  # per-loop objects, cached
        self._sem: asyncio.Semaphore | None = None
        self._clients: list[_Connection | None] = []
        self._index: _CacheIndex | None = None
        self._api_key: str | None = None
        self._key_loaded = False
        self._secrets: list[str] | None = None  # secrets(), once the key is loaded
        self._circuit_state: dict | None = None  # this loop's breaker state (see _circuit)

    # -- set-up ---------------------------------------------------------------------------
    def _key(self) -> str | None:
        if not self._key_loaded:
            self._api_key = self.endpoint.api_key()  # raises EndpointError if unset
            self._key_loaded = True
        return self._api_key

    def check(self) -> None:
        """Fail early (missing API key) before a run plans hundreds of calls."""
        self._key()

    def enable_bulk_cache(self, known_keys: set[str] | None = None) -> None:
        """Switch to the run mode of the cache (see _CacheIndex); the runner calls this,
        passing the keys it already read in its set-up connection."""
        if self.store is not None and self.use_cache and self._index is None:
            self._index = _CacheIndex(self.store, cache_scope(self.endpoint))
            if known_keys is not None:
                self._index.keys = set(known_keys)

    def secrets(self) -> list[str]:
        """What must never be stored or printed: the key, and credentials inside the URLs
        (kept once the key is loaded: scrub() asks for them on every reply)."""
        if self._secrets is not None:
            return self._secrets
        values = [self._api_key] if self._api_key else []
        for url in self.endpoint.base_urls:
            values += url_secrets(url)
        if self._key_loaded:
            self._secrets = values
        return values

    def scrub(self, text: str) -> str:
        """Remove the API key (and URL credentials) from any text: servers sometimes echo the
        key in error messages or even in replies, and errors may quote the URL."""
        if not text:
            return text
        for secret in self.secrets():
            if secret in text:
                text = text.replace(secret, "***")
        return text

    # -- circuit breaker ------------------------------------------------------------------
    def _circuit(self) -> dict:
        """This loop's refusal and timeout streaks for the endpoint's URLs, shared by every
        client (model and judge roles, all units): when nobody listens, or the server accepts
        and never answers, each unit paying the full backoff only delays the verdict by
        minutes."""
        self._bind_loop()
        if self._circuit_state is None:
            circuits = _loop_state().setdefault("circuits", {})
            self._circuit_state = circuits.setdefault(
                tuple(self.endpoint.base_urls), {"refused": 0, "timeouts": 0, "urls": []}
            )
        return self._circuit_state

    def circuit_message(self) -> str | None:
        """The one-line error once the endpoint refused refused_limit connections, or let
        timeout_limit requests time out, in a row."""
        circuit = self._circuit()
        if not circuit["refused"] and not circuit["timeouts"]:
            return None  # the common case, on every attempt: nothing to say
        urls = ", ".join(dict.fromkeys(redact_url(u) for u in circuit["urls"]))
        retry = "remaining items not sent — re-run with the same --run-name to retry them"
        if self.refused_limit and circuit["refused"] >= self.refused_limit:
            return f"endpoint {urls} refused {self.refused_limit} connections in a row; {retry}"
        if self.timeout_limit and circuit["timeouts"] >= self.timeout_limit:
            return (
                f"endpoint {urls} accepted connections but did not answer "
                f"{self.timeout_limit} requests in a row within {self.endpoint.timeout_s:g} s "
                f"(the server hangs, or needs a longer timeout_s); {retry}"
            )
        return None

    def _note_outcome(self, url: str, refused: bool, timed_out: bool = False) -> None:
        circuit = self._circuit()
        if not (refused or timed_out or circuit["refused"] or circuit["timeouts"]):
            return  # a reply after replies: nothing to reset
        if self.circuit_message():  # once open, it stays open for this run
            return
        if refused or timed_out:
            kind, other = ("refused", "timeouts") if refused else ("timeouts", "refused")
            circuit[kind] += 1
            circuit[other] = 0
            circuit["urls"] = (circuit["urls"] + [url])[-8:]
        else:  # any reply (even an error status) shows the server is there and answers
            circuit["refused"], circuit["timeouts"], circuit["urls"] = 0, 0, []

    def _bind_loop(self) -> None:
        """Fetch this loop's shared semaphore once (not per call)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._sem = None
            self._circuit_state = None
            self._clients = [None] * len(self.endpoint.base_urls)

    def _semaphore(self) -> asyncio.Semaphore:
        self._bind_loop()
        if self._sem is None:
            semaphores = _loop_state()["semaphores"]
            key = _endpoint_key(self.endpoint)
            if key not in semaphores:
                semaphores[key] = asyncio.Semaphore(self.endpoint.max_concurrency)
            self._sem = semaphores[key]
        return self._sem

    def _client(self, index: int) -> _Connection:
        self._bind_loop()
        slot = index % len(self.endpoint.base_urls)
        cached = self._clients[slot]
        if cached is not None and not cached.is_closed():
            return cached
        client = self._shared_client(slot)
        self._clients[slot] = client
        return client

    def _shared_client(self, slot: int) -> _Connection:
        url = self.endpoint.base_urls[slot]
        clients = _loop_state()["clients"]
        api_key = self._key() or "not-needed"  # never fall back to $OPENAI_API_KEY
        ident = (url, hashlib.sha256(api_key.encode()).hexdigest())
        client = clients.get(ident)
        if client is None or client.is_closed():
            client = _Connection(url, api_key, self.endpoint.timeout_s + 5.0)
            clients[ident] = client
        return client

    async def aclose(self) -> None:
        """Close the pooled HTTP clients of the running loop (all endpoints)."""
        state = _loop_state()
        clients = list(state["clients"].values())
        state["clients"].clear()
        self._clients = [None] * len(self.endpoint.base_urls)
        for client in clients:
            try:
                await client.close()
            except Exception:
                pass

    # -- cache ----------------------------------------------------------------------------
    async def _cache_get(self, key: str) -> str | None:
        if self._index is not None:
            return await self._index.get(key)
        if self.store is None:
            return None
        try:
            return await asyncio.to_thread(
                self.store.scalar, "SELECT response FROM call_cache WHERE key = ?", [key]
            )
        except Exception:
            return None

    async def _record(self, call: dict, cache_row: tuple[str, str] | None) -> None:
        sink = CURRENT_SINK.get()
        if cache_row is not None and self._index is not None:
            self._index.remember(*cache_row)
        if sink is not None:
            sink.calls.append(call)
            if cache_row is not None:
                sink.cache_rows.append(cache_row)
            return
        if self.store is None:
            return
        await asyncio.to_thread(_write_direct, self.store, call, cache_row)

    # -- the call -------------------------------------------------------------------------
    async def chat(  # noqa: C901 - cache, circuit breaker and retry loop share one attempt state
        self,
        messages: list[dict],
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        response_format: dict | None = None,
        on_token: OnToken | None = None,
        role: str = "model",
        extra_body: dict | None = None,
    ) -> ChatResult:
        """Send one chat request (streaming when on_token is given) with retries.

        Raises CallFailed when it fails for good. A streamed reply that fails mid-way is
        retried from the start, so on_token may see a prefix twice.
        """
        params: dict[str, Any] = {
            "model": self.endpoint.model,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if response_format is not None:
            params["response_format"] = response_format
        if extra_body:
            params["extra_body"] = extra_body
        try:
            self._key()
        except EndpointError as exc:
            raise CallFailed(str(exc), attempts=0, last_error=str(exc)) from None

        key = None
        if self.use_cache and self.store is not None:
            sink = CURRENT_SINK.get()
            keyed = params
            if sink is not None and sink.sample > 1 and role == sink.sample_role:
                keyed = {**params, "sample": sink.sample}  # sample 1 keeps the plain key
            key = cache_key(self.endpoint, messages, keyed, self._scope)
            t0 = time.perf_counter()
            hit = None if sink is not None and sink.refresh else await self._cache_get(key)
            if hit is not None:
                try:
                    data = json.loads(hit)
                    result = ChatResult(
                        text=data["text"],
                        prompt_tokens=data.get("prompt_tokens"),
                        completion_tokens=data.get("completion_tokens"),
                        latency_ms=(time.perf_counter() - t0) * 1000.0,
                        cost_usd=0.0 if self.endpoint.cost(1, 1) is not None else None,
                        cached=True,
                        attempts=0,
                        finish_reason=data.get("finish_reason"),
                    )
                except (ValueError, KeyError, TypeError):
                    result = None
                if result is not None:
                    if on_token is not None and result.text:
                        await _emit(on_token, result.text)
                    await self._record(_call_row(role, 0, "ok", None, None, result), None)
                    return result

        attempt = 0
        while True:
            attempt += 1
            tripped = self.circuit_message()
            if tripped:
                raise CallFailed(
                    f"{self.endpoint.name}: {tripped}", attempts=attempt - 1, last_error=tripped
                ) from None
            index = next(self._rr)
            client = self._client(index)
            started = time.perf_counter()
            try:
                async with self._semaphore():
                    started = time.perf_counter()  # latency excludes waiting for a slot
                    async with asyncio.timeout(self.endpoint.timeout_s):
                        if on_token is None:
                            text, pt, ct, finish = await self._once(client, messages, params)
                        else:
                            text, pt, ct, finish = await self._stream(
                                client, messages, params, on_token
                            )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below
                failure = classify_error(exc, self.endpoint.timeout_s)
                message = self.scrub(failure.message)
                self._note_outcome(
                    self.endpoint.base_urls[index % len(self.endpoint.base_urls)],
                    is_connection_refused(exc),
                    is_timeout(exc),
                )
                latency = (time.perf_counter() - started) * 1000.0
                await self._record(
                    {
                        "role": role,
                        "attempt": attempt,
                        "status": "error",
                        "http_status": failure.http_status,
                        "error": message,
                        "latency_ms": latency,
                        "prompt_tokens": None,
                        "completion_tokens": None,
                        "cost_usd": None,
                        "cached": False,
                    },
                    None,
                )
                if not failure.retryable or attempt > self.max_retries:
                    why = (
                        "not retryable"
                        if not failure.retryable
                        else (f"gave up after {attempt} attempts")
                    )
                    raise CallFailed(
                        f"{self.endpoint.name}: {message} ({why})",
                        attempts=attempt,
                        last_error=message,
                        http_status=failure.http_status,
                    ) from None
                if self.circuit_message():
                    continue  # no backoff: the check at the loop's top fails it now
                await asyncio.sleep(self._delay(attempt, failure.retry_after))
                continue
            self._note_outcome("", False)
            latency = (time.perf_counter() - started) * 1000.0
            text = self.scrub(text)  # a reply echoing the key: not stored, cached or shown
            result = ChatResult(
                text=text,
                prompt_tokens=pt,
                completion_tokens=ct,
                latency_ms=latency,
                cost_usd=self.endpoint.cost(pt, ct),
                cached=False,
                attempts=attempt,
                finish_reason=finish,
            )
            cache_row = None
            if key is not None:
                cache_row = (
                    key,
                    _ROW_JSON.encode(
                        {
                            "text": text,
                            "prompt_tokens": pt,
                            "completion_tokens": ct,
                            "finish_reason": finish,
                            "latency_ms": latency,
                        }
                    ),
                )
            await self._record(_call_row(role, attempt, "ok", None, None, result), cache_row)
            return result

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter; a server's Retry-After wins (plus ≤10 % jitter)."""
        if retry_after is not None:
            retry_after = min(retry_after, 300.0)
            return retry_after + random.uniform(0, 0.1 * retry_after + 0.01)
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)

    async def _once(
        self, client: _Connection, messages: list[dict], params: dict
    ) -> tuple[str, int | None, int | None, str | None]:
        """One non-streamed request, the body as we built it and the reply as plain JSON.
        Why not `chat.completions.create` (or openai's own `post`): it walks every request
        through its request-options and typed-parameter layers and every reply through its
        response layer, most of a call's CPU on our plain str/dict messages, where the client's
        CPU is what limits a fast run (bench/bench_runner_vs_openai.py, bench/bench_shards.py).
        """
        body = {"messages": messages, **params}
        extra = body.pop("extra_body", None)
        if extra:
            body.update(extra)
        return _reply_fields(await client.post_json(body))

    async def _stream(
        self, client: _Connection, messages: list[dict], params: dict, on_token: OnToken
    ) -> tuple[str, int | None, int | None, str | None]:
        stream: Any = await client.streaming().chat.completions.create(
            messages=cast(Any, messages),
            stream=True,
            stream_options={"include_usage": True},
            **params,
        )
        parts: list[str] = []
        pt = ct = None
        finish = None
        received = 0
        try:
            async for chunk in stream:
                if getattr(chunk, "usage", None):
                    pt, ct = chunk.usage.prompt_tokens, chunk.usage.completion_tokens
                for choice in chunk.choices or []:
                    piece = choice.delta.content if choice.delta else None
                    if piece:
                        parts.append(piece)
                        received += len(piece)
                        await _emit(on_token, piece)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except (_openai_errors().APIError, OSError, ValueError) as exc:  # the SSE broke
            raise StreamCut(received, exc) from exc
        return "".join(parts), pt, ct, finish

    def chat_sync(self, messages: list[dict], **kwargs: Any) -> ChatResult:
        """Blocking chat (for the playground and scripts): its own event loop, closed after."""

        async def run() -> ChatResult:
            try:
                return await self.chat(messages, **kwargs)
            finally:
                await self.aclose()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(run())
        # Called from inside a running loop: run in a helper thread with its own loop.
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["result"] = asyncio.run(run())
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                box["error"] = exc

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["result"]


_BODY_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class _TLSOnDemand(httpx2.AsyncBaseTransport):
    """A client's transport: http:// requests go to a connection pool with no TLS set-up,
    https:// ones to a verifying pool (httpx2's default: the CA bundle, SSL_CERT_FILE honoured)
    made at the first such request, redirects included. Why: httpx2 builds the verifying SSL
    context whenever a client is made, 25-50 ms of CPU (the CA bundle parsed), paid by every
    run's process against a local http:// server too (issue 28: four shards start at once on 2
    cores, docs/performance.md › Shards, sixth round)."""

    def __init__(self, limits: httpx2.Limits) -> None:
        self._limits = limits
        # never given an https:// request (handle_async_request), so it never does TLS
        self._plain = httpx2.AsyncHTTPTransport(verify=False, limits=limits)
        self._tls: httpx2.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.scheme == "https":
            if self._tls is None:
                self._tls = httpx2.AsyncHTTPTransport(limits=self._limits)
            return await self._tls.handle_async_request(request)
        return await self._plain.handle_async_request(request)

    async def aclose(self) -> None:
        await self._plain.aclose()
        if self._tls is not None:
            await self._tls.aclose()


class _Connection:
    """One base URL's pooled HTTP client (per event loop and API key), sending what openai's
    client sends: its headers, the key as a bearer token, the URL's query on every request
    (Azure's ?api-version=), its connection limits and redirects, one overall timeout, and
    its error mapping (HTTPStatusFailure, ConnectionFailure, httpx2's timeouts). A streamed
    reply goes through an openai client made on first use (`streaming()`)."""

    def __init__(self, url: str, api_key: str, timeout_s: float) -> None:
        base, query = split_query(url)  # ?api-key=…: sent as a query, not glued to paths
        self.base, self.query, self.api_key, self.timeout_s = base, query, api_key, timeout_s
        self.url = httpx2.URL((base if base.endswith("/") else base + "/") + "chat/completions")
        limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
        self.transport = _TLSOnDemand(limits)
        self.http = httpx2.AsyncClient(
            headers={  # lower case, as openai's client sends them
                "accept": "application/json",
                "content-type": "application/json",
                "user-agent": f"error-handling-workbench httpx2/{httpx2.__version__}",
                "authorization": f"Bearer {api_key}",
            },
            params=query or None,
            timeout=httpx2.Timeout(timeout_s),
            transport=self.transport,
            follow_redirects=True,
        )
        self._openai: openai.AsyncOpenAI | None = None

    def is_closed(self) -> bool:
        return self.http.is_closed

    async def post_json(self, body: dict) -> object:
        """POST the body to chat/completions; the reply's JSON (its text when the server does
        not say JSON, as openai returns it). An error status raises HTTPStatusFailure, a
        failed or broken connection ConnectionFailure, no reply in time httpx2's timeout."""
        try:
            response = await self.http.post(self.url, content=_BODY_JSON.encode(body).encode())
        except httpx2.TimeoutException:
            raise
        except _REQUEST_ERRORS as exc:
            raise ConnectionFailure() from exc
        if not response.is_success:
            raise HTTPStatusFailure(response)
        content_type = response.headers.get("content-type", "*").split(";")[0]
        if not content_type.endswith("json"):
            return response.text
        return json.loads(response.content)

    def streaming(self) -> openai.AsyncOpenAI:
        """An openai client for the same URL and key (streamed replies only)."""
        if self._openai is None:
            import openai

            self._openai = openai.AsyncOpenAI(
                base_url=self.base,
                api_key=self.api_key,
                max_retries=0,
                timeout=self.timeout_s,
                default_query=self.query or None,
            )
        return self._openai

    async def close(self) -> None:
        try:
            await self.http.aclose()
        finally:
            if self._openai is not None:
                await self._openai.close()


def _reply_fields(data: object) -> tuple[str, int | None, int | None, str | None]:
    """(text, prompt tokens, completion tokens, finish reason) of a chat.completion reply as
    JSON; a reply without a choice is malformed (retried, as a garbled body is)."""
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, dict):
        raise json.JSONDecodeError("reply has no choices", "", 0)
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    finish = choice.get("finish_reason")
    return (
        content if isinstance(content, str) else "" if content is None else json.dumps(content),
        _count(usage.get("prompt_tokens")),
        _count(usage.get("completion_tokens")),
        finish if isinstance(finish, str) else None,
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


async def _emit(on_token: OnToken, piece: str) -> None:
    outcome = on_token(piece)
    if inspect.isawaitable(outcome):
        await outcome


def _call_row(
    role: str,
    attempt: int,
    status: str,
    http_status: int | None,
    error: str | None,
    result: ChatResult,
) -> dict:
    return {
        "role": role,
        "attempt": attempt,
        "status": status,
        "http_status": http_status,
        "error": error,
        "latency_ms": result.latency_ms,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "cost_usd": result.cost_usd,
        "cached": result.cached,
    }


def _write_direct(store: Store, call: dict, cache_row: tuple[str, str] | None) -> None:
    """Outside a run: one small transaction per call (fine at interactive rates)."""

    def write(con: Any) -> None:
        con.execute(
            "INSERT INTO calls (run_id, item_id, variant, role, attempt, status, http_status, "
            "error, latency_ms, prompt_tokens, completion_tokens, cost_usd, cached) "
            "VALUES (NULL, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                call["role"],
                call["attempt"],
                call["status"],
                call["http_status"],
                call["error"],
                call["latency_ms"],
                call["prompt_tokens"],
                call["completion_tokens"],
                call["cost_usd"],
                call["cached"],
            ],
        )
        if cache_row is not None:
            upsert_rows(con, "call_cache", ("key", "response"), ("key",), [list(cache_row)])

    try:
        store.transaction(write)
    except Exception:
        pass  # accounting must never turn an answered call into a failure
