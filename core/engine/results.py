"""What a unit of work produces, and the one writer of it.

`Response` (the model's answer) and `Result` (one judging of it: the generic result record) are one dataclass each, used
by the runner, every task, `rescore` and the playground, so a field means the same everywhere.

`ResultBatch` + `save_batch`/`write_batch` are the only code that writes rows of `responses`,
`results`, `calls` and `call_cache`: the runner's flushes, rescore's flushes and the
playground's exchanges all go through them. Why one writer: column order, JSON encoding,
secret scrubbing and the insert-vs-replace rule live in one place, so a new column or a fix
reaches every path at once. Its speed tricks (the runner writes thousands of units a second):

- rows are kept as tuples in column order and turned into Arrow columns only when written;
- units never written before are inserted with a plain INSERT, retried units (a row exists)
  by deleting their keys and inserting, which costs more per row; should a plain INSERT meet
  an existing row after all, the whole batch is written again with replace (the file's
  primary key keeps exactly one row per unit either way). A DuckLake has no primary key, so
  there every batch is written with replace: the writer keeps the keys, and the lake's write
  guard (core/store/lake.py) makes two writers of one key take turns;
- a batch is one transaction (a response never lands without its result and call records).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from core.store import DatabaseError, Store, error_line, is_lake_connection

T = TypeVar("T")  # what save_batch's `also` returns


@dataclass
class Response:
    """One unit's answer from the model under test (a row of `responses`).

    `text` is the model's reply (column `response`); `scores` holds what the task recorded
    while generating (exemplars used, finish reason, per-step answers...) and, for benchmarks
    scored by code, the run's own scores.
    """

    status: str = "ok"
    messages: list[dict[str, Any]] | None = None
    text: str | None = None
    error: str | None = None
    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    cached: bool = False
    scores: dict[str, Any] | None = None

    @classmethod
    def answered(
        cls,
        messages: list[dict[str, Any]] | None,
        result: Any,
        scores: dict[str, Any] | None = None,
    ) -> Response:
        """From a client ChatResult (or anything with its fields)."""
        return cls(
            status="ok",
            messages=messages,
            text=result.text,
            attempts=int(result.attempts or 0),
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            latency_ms=result.latency_ms,
            cost_usd=result.cost_usd,
            cached=bool(result.cached),
            scores=scores,
        )

    @classmethod
    def failed(
        cls,
        error: str,
        *,
        attempts: int = 0,
        messages: list[dict[str, Any]] | None = None,
        scores: dict[str, Any] | None = None,
    ) -> Response:
        return cls(
            status="failed",
            messages=messages,
            error=error,
            attempts=int(attempts or 0),
            scores=scores,
        )

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def row(self) -> dict[str, Any]:
        """Columns of the responses table (JSON columns still as Python values)."""
        return {
            "status": self.status,
            "messages": self.messages,
            "response": self.text,
            "error": self.error,
            "attempts": self.attempts,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_ms": self.latency_ms,
            "cost_usd": self.cost_usd,
            "cached": self.cached,
            "scores": self.scores,
        }


@dataclass
class Result:
    """One judging of one response (a row of `results`), the same record for every benchmark:
    what was read (`answer`), whether it is `correct`, a `score`, a multi-label judge's `labels`
    (e.g. six named labels), a `status` (ok / unparsable / out_of_range / truncated / failed — only
    `failed` means "not done": a resume asks again) and an `explanation`; the judge's or scorer's
    details in `metadata` (a scorer's parsed numbers, a judge's per-label rationales)."""

    status: str = "ok"
    judge_model: str | None = None
    answer: str | None = None
    correct: bool | None = None
    score: float | None = None
    labels: dict[str, Any] | None = None
    explanation: str | None = None
    metadata: dict[str, Any] | None = None
    raw: str | None = None
    parse_note: str | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None

    @classmethod
    def failed(cls, error: str, judge_model: str | None = None) -> Result:
        return cls(status="failed", error=error, judge_model=judge_model)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def done(self) -> bool:
        """Judged (whatever the verdict): only a failed judging is asked again."""
        return self.status != "failed"

    def row(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def as_json(value: Any) -> str | None:
    """A JSON column's text (None stays NULL; text is assumed to be JSON already)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


# -- secrets ----------------------------------------------------------------------------------


def scrub_secrets(value: Any, secrets: Sequence[str]) -> Any:
    """Replace any secret value found inside strings of a nested structure by ***."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, "***")
        return value
    if isinstance(value, dict):
        return {k: scrub_secrets(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_secrets(v, secrets) for v in value]
    return value


# -- table rows -------------------------------------------------------------------------------

DEFAULT_JUDGING = "default"

RESPONSE_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("item_id", pa.string()),
        ("variant", pa.string()),
        ("status", pa.string()),
        ("messages", pa.string()),
        ("response", pa.string()),
        ("error", pa.string()),
        ("attempts", pa.int32()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("latency_ms", pa.float64()),
        ("cost_usd", pa.float64()),
        ("cached", pa.bool_()),
        ("scores", pa.string()),
        ("epoch", pa.int32()),
    ]
)
RESULT_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("item_id", pa.string()),
        ("variant", pa.string()),
        ("judging", pa.string()),
        ("judge_model", pa.string()),
        ("status", pa.string()),
        ("answer", pa.string()),
        ("correct", pa.bool_()),
        ("score", pa.float64()),
        ("labels", pa.string()),
        ("explanation", pa.string()),
        ("metadata", pa.string()),
        ("raw", pa.string()),
        ("parse_note", pa.string()),
        ("error", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("latency_ms", pa.float64()),
        ("cost_usd", pa.float64()),
        ("epoch", pa.int32()),
    ]
)
CALL_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("item_id", pa.string()),
        ("variant", pa.string()),
        ("role", pa.string()),
        ("attempt", pa.int32()),
        ("status", pa.string()),
        ("http_status", pa.int32()),
        ("error", pa.string()),
        ("latency_ms", pa.float64()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("cached", pa.bool_()),
        ("epoch", pa.int32()),
    ]
)
CACHE_SCHEMA = pa.schema([("key", pa.string()), ("response", pa.string())])
_KEY_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("item_id", pa.string()),
        ("variant", pa.string()),
        ("epoch", pa.int32()),
    ]
)
_JSON_FIELDS = {"messages", "scores", "labels", "metadata"}
_CALL_FIELDS = [f.name for f in CALL_SCHEMA][3:-1]

UnitKey = tuple[str, str, str]
"""(run_id, item_id, variant): the unit a row belongs to (with `epoch`, which of its answers:
1 unless the run asks each unit several times, `run --epochs K`)."""


def _coerce(schema: pa.Schema, row: dict[str, Any]) -> dict[str, Any]:
    """Slow path: make every value fit its column (a task may hand back numpy scalars...)."""
    out: dict[str, Any] = {}
    for f in schema:
        value = row.get(f.name)
        if f.name in _JSON_FIELDS:
            value = as_json(value)
        elif value is not None:
            if pa.types.is_string(f.type):
                value = str(value)
            elif pa.types.is_boolean(f.type):
                value = bool(value)
            elif pa.types.is_integer(f.type):
                value = int(value)
            elif pa.types.is_floating(f.type):
                value = float(value)
        out[f.name] = value
    return out


class _Columns:
    """Rows of one table as tuples in column order (cheap to append; transposed to Arrow
    columns only when written, in the flush thread)."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.names = [f.name for f in schema]
        self.rows: list[tuple[Any, ...]] = []

    @property
    def n(self) -> int:
        return len(self.rows)

    def extend(self, other: _Columns) -> None:
        self.rows.extend(other.rows)

    def table(self) -> pa.Table:
        if not self.rows:
            return self.schema.empty_table()
        columns = [list(c) for c in zip(*self.rows)]
        try:
            return pa.table(dict(zip(self.names, columns)), schema=self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            rows = [_coerce(self.schema, dict(zip(self.names, r))) for r in self.rows]
            return pa.Table.from_pylist(rows, schema=self.schema)


class ResultBatch:
    """Finished units' rows waiting to be written together (see the module docstring).

    `judging` names the judging its results belong to (`default`: the run's own). With
    `secrets`, every value is scrubbed of them as it is added, so no key reaches the file.
    Units added with `retried=True` already have a row and replace it; the others are new.
    """

    def __init__(self, judging: str = DEFAULT_JUDGING, secrets: Sequence[str] = ()) -> None:
        self.judging = judging
        self.secrets = list(secrets)
        self.responses = _Columns(RESPONSE_SCHEMA)
        self.results = _Columns(RESULT_SCHEMA)
        self.responses_old = _Columns(RESPONSE_SCHEMA)
        self.results_old = _Columns(RESULT_SCHEMA)
        self.calls = _Columns(CALL_SCHEMA)
        self.no_result: list[tuple[str, str, str, int]] = []
        self.cache_rows: list[tuple[str, str]] = []

    def __len__(self) -> int:
        """Units in the batch: their responses, or their results in a judging-only batch."""
        return max(self.responses.n + self.responses_old.n, self.results.n + self.results_old.n)

    @property
    def empty(self) -> bool:
        return not len(self) and not self.calls.n and not self.no_result and not self.cache_rows

    def add_response(
        self, key: UnitKey, response: Response, *, retried: bool = False, epoch: int = 1
    ) -> None:
        r = response
        values: list[Any] = [
            r.status,
            r.messages,
            r.text,
            r.error,
            r.attempts,
            r.prompt_tokens,
            r.completion_tokens,
            r.latency_ms,
            r.cost_usd,
            r.cached,
            r.scores,
        ]
        if self.secrets:
            values = scrub_secrets(values, self.secrets)
        values[1] = as_json(values[1])
        values[10] = as_json(values[10])
        (self.responses_old if retried else self.responses).rows.append((*key, *values, epoch))

    def add_result(
        self,
        key: UnitKey,
        result: Result,
        *,
        retried: bool = False,
        judge_model: str | None = None,
        epoch: int = 1,
    ) -> None:
        """A result of this batch's judging; `judge_model` fills one the result lacks."""
        r = result
        values: list[Any] = [
            self.judging,
            r.judge_model if r.judge_model is not None else judge_model,
            r.status,
            r.answer,
            r.correct,
            r.score,
            r.labels,
            r.explanation,
            r.metadata,
            r.raw,
            r.parse_note,
            r.error,
            r.prompt_tokens,
            r.completion_tokens,
            r.latency_ms,
            r.cost_usd,
        ]
        if self.secrets:
            values = scrub_secrets(values, self.secrets)
        values[6] = as_json(values[6])
        values[8] = as_json(values[8])
        (self.results_old if retried else self.results).rows.append((*key, *values, epoch))

    def drop_result(self, key: UnitKey, epoch: int = 1) -> None:
        """A retried unit that has no result now: its stale one in this judging goes."""
        self.no_result.append((*key, epoch))

    def add_call(self, key: UnitKey, call: Mapping[str, Any], epoch: int = 1) -> None:
        """One HTTP attempt (a CallSink record: role, attempt, status, http_status...)."""
        values = list(map(call.get, _CALL_FIELDS))
        if self.secrets:
            values = scrub_secrets(values, self.secrets)
        self.calls.rows.append((*key, *values, epoch))

    def add_cache_rows(self, rows: Iterable[tuple[str, str]]) -> None:
        """New call-cache entries (key, response JSON); an existing key is kept."""
        if self.secrets:
            rows = [
                (scrub_secrets(k, self.secrets), scrub_secrets(v, self.secrets)) for k, v in rows
            ]
        self.cache_rows.extend(rows)

    def absorb(self, newer: ResultBatch) -> None:
        """Put back a batch that could not be written, followed by what came after it."""
        for name in ("responses", "results", "responses_old", "results_old", "calls"):
            getattr(self, name).extend(getattr(newer, name))
        self.no_result.extend(newer.no_result)
        self.cache_rows.extend(newer.cache_rows)


def write_batch(
    con: duckdb.DuckDBPyConnection, batch: ResultBatch, *, replace: bool = False
) -> None:
    """Insert a batch's rows inside the caller's transaction: new units with a plain INSERT
    (a file's PRIMARY KEY then reports a clash), retried ones, or all with `replace` (always on
    a DuckLake, which has no key to clash on), by deleting their keys first."""
    lake = is_lake_connection(con)
    replace = replace or lake

    def insert(table: pa.Table, name: str, keyed: bool) -> None:
        if table.num_rows == 0:
            return
        con.register("_batch", table)
        cols = ", ".join(table.column_names)
        if keyed:
            keys = _TABLE_KEYS[name]
            on = " AND ".join(f"t.{k} = b.{k}" for k in keys)
            con.execute(
                f"DELETE FROM {name} t USING (SELECT DISTINCT {', '.join(keys)} FROM _batch) b WHERE {on}"
            )
        con.execute(f"INSERT INTO {name} ({cols}) SELECT {cols} FROM _batch")
        con.unregister("_batch")

    insert(batch.responses.table(), "responses", replace)
    insert(batch.results.table(), "results", replace)
    insert(batch.responses_old.table(), "responses", True)
    insert(batch.results_old.table(), "results", True)
    if batch.no_result:
        con.register(
            "_nov",
            pa.Table.from_pylist(
                [dict(zip(_KEY_SCHEMA.names, k)) for k in batch.no_result], schema=_KEY_SCHEMA
            ),
        )
        con.execute(
            "DELETE FROM results WHERE judging = ? AND (run_id, item_id, variant, epoch) IN "
            "(SELECT (run_id, item_id, variant, epoch) FROM _nov)",
            [batch.judging],
        )
        con.unregister("_nov")
    insert(batch.calls.table(), "calls", False)
    cache = pa.table(
        {"key": [k for k, _ in batch.cache_rows], "response": [v for _, v in batch.cache_rows]},
        schema=CACHE_SCHEMA,
    )
    if cache.num_rows:
        # A key already cached stays as it is: a file's primary key ignores it; on a lake the
        # insert skips the keys stored already. Flushes of different runs commit side by side
        # (their turns are their own), so two runs caching one new request at once may both
        # add it: readers take any one of a key's rows (every one answers the request), and
        # `store copy` and `store check --repair` keep the first (core/services/store_check.py).
        con.register("_cache", cache)
        if lake:
            con.execute(
                "INSERT INTO call_cache (key, response) SELECT DISTINCT ON (key) key, response "
                "FROM _cache b WHERE NOT EXISTS (SELECT 1 FROM call_cache c WHERE c.key = b.key)"
            )
        else:
            con.execute(
                "INSERT OR IGNORE INTO call_cache (key, response) SELECT DISTINCT ON (key) key, "
                "response FROM _cache"
            )
        con.unregister("_cache")


# The keys writers keep (a file also enforces them as PRIMARY KEYs; a lake cannot).
_TABLE_KEYS = {
    "responses": ("run_id", "item_id", "variant", "epoch"),
    "results": ("run_id", "judging", "item_id", "variant", "epoch"),
}


def save_batch(
    store: Store,
    batch: ResultBatch,
    also: Callable[[duckdb.DuckDBPyConnection], T] | None = None,
    domain: str | None = None,
) -> T | None:
    """Write a batch in one transaction, with `also(con)` in the same one (e.g. touching the
    run's updated_at, or a run's final status) and return what `also` returned (None for an
    empty batch: nothing is written). Plain INSERT first; a key clash writes it again with replace. A write
    DuckDB refuses (I/O error, full disk...) is a DatabaseError, so a caller can keep the
    batch and try again. `domain`: the batch writes only that run's (judging's, shard's) keys
    (a lake then lets other runs' flushes commit alongside: Store.transaction)."""
    if batch.empty:
        return None

    def write(con: duckdb.DuckDBPyConnection, replace: bool) -> T | None:
        write_batch(con, batch, replace=replace)
        return also(con) if also is not None else None

    try:
        try:
            return store.transaction(lambda con: write(con, False), domain=domain)
        except duckdb.ConstraintException:
            return store.transaction(lambda con: write(con, True), domain=domain)
    except duckdb.Error as exc:
        raise DatabaseError(f"could not save to {store.path}: {error_line(exc)}") from exc
