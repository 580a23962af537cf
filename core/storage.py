"""The results database: one DuckDB file, its schema, migrations and safe access.

DuckDB lets one *process* hold a file open for writing at a time. The app, a CLI run and a
second browser session must all share one file, so nobody keeps a connection open: every read
or write opens a short-lived connection, retries while another process holds the lock, and
closes it. Within one process, writes are serialised by a lock so readers never see half a
batch (each batch is one transaction).
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import duckdb
import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = PROJECT_ROOT / "data" / "results.duckdb"
DB_ENV_VAR = "EHW_DB"
SCHEMA_VERSION = 3


class DatabaseError(RuntimeError):
    """A problem with the database file that the user must act on; the message says how."""


class DatabaseLocked(DatabaseError):
    pass


class DatabaseTooNew(DatabaseError):
    pass


class DatabaseCorrupt(DatabaseError):
    pass


def resolve_db_path(db: str | os.PathLike[str] | None = None) -> Path:
    """--db beats the EHW_DB environment variable, which beats data/results.duckdb."""
    if db:
        return Path(db).expanduser().resolve()
    env = os.environ.get(DB_ENV_VAR)
    if env:
        return Path(env).expanduser().resolve()
    return DEFAULT_DB


# --------------------------------------------------------------------------------------------
# Schema. Each entry of MIGRATIONS brings a file from version i to i + 1. Never edit a released
# migration: append a new one and bump SCHEMA_VERSION.
# --------------------------------------------------------------------------------------------

JUDGE_LABELS: tuple[str, ...] = (
    "detection",
    "identification_attempt",
    "identification_accurate",
    "correction_attempt",
    "correction_accurate",
    "guidance",
)

_V1 = f"""
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);

-- A named set of items of one benchmark (misprompt | errorbench | bbm).
CREATE TABLE IF NOT EXISTS item_sets (
    name VARCHAR PRIMARY KEY,
    benchmark VARCHAR NOT NULL,
    origin VARCHAR,              -- file it was imported from, or 'builtin'
    n_items INTEGER,
    info JSON,                   -- benchmark-specific summary (e.g. passage grouping)
    created_at TIMESTAMP DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS items (
    item_set VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    benchmark VARCHAR NOT NULL,
    split VARCHAR,
    is_error BOOLEAN,            -- misprompt: erroneous (true) or control (false)
    primary_category VARCHAR,    -- misprompt category / errorbench N / bbm task
    secondary_category VARCHAR,
    prompt VARCHAR,              -- the text shown to a model (question, passage, trace input)
    explanation VARCHAR,
    gold VARCHAR,                -- ground-truth answer
    payload JSON,                -- benchmark-specific fields (gold edits, steps, mistake_index ...)
    PRIMARY KEY (item_set, item_id)
);

-- One model under one setting/condition over an item set.
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    benchmark VARCHAR NOT NULL,
    kind VARCHAR DEFAULT 'eval',  -- eval | playground
    item_set VARCHAR,
    model VARCHAR,
    endpoint VARCHAR,
    setting VARCHAR,              -- misprompt setting, errorbench conditions, bbm method
    mode VARCHAR,                 -- proactive | passive (misprompt)
    judge_model VARCHAR,
    judge_endpoint VARCHAR,
    template_id VARCHAR,
    params JSON,                  -- temperature, max_tokens, limit ... never an API key
    weak_model BOOLEAN DEFAULT false,
    status VARCHAR,               -- pending | running | done | failed | cancelled
    n_planned INTEGER,
    pid INTEGER,
    created_at TIMESTAMP DEFAULT current_timestamp,
    updated_at TIMESTAMP DEFAULT current_timestamp
);

-- Exactly one per (run, item, variant).
CREATE TABLE IF NOT EXISTS responses (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,     -- setting (misprompt), condition (errorbench), method (bbm)
    status VARCHAR NOT NULL,      -- ok | failed
    messages JSON,
    response VARCHAR,
    error VARCHAR,
    attempts INTEGER,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms DOUBLE,
    cost_usd DOUBLE,
    cached BOOLEAN,
    scores JSON,                  -- benchmark-specific parsed results
    created_at TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, item_id, variant)
);

-- The judge's labels for one response (misprompt). Raw output always kept.
CREATE TABLE IF NOT EXISTS verdicts (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    judge_model VARCHAR,
    status VARCHAR NOT NULL,      -- ok | failed
    {", ".join(f"{label} BOOLEAN" for label in JUDGE_LABELS)},
    rationales JSON,
    raw VARCHAR,
    parse_note VARCHAR,           -- how the JSON was obtained (schema | repaired | ...)
    inconsistent BOOLEAN,         -- an 'accurate' label true while its 'attempt' is false
    error VARCHAR,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms DOUBLE,
    cost_usd DOUBLE,
    created_at TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, item_id, variant)
);

-- A person's label for one judge label of one response.
CREATE TABLE IF NOT EXISTS human_labels (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    annotator VARCHAR NOT NULL,
    label VARCHAR NOT NULL,
    value BOOLEAN NOT NULL,
    judge_value BOOLEAN,
    note VARCHAR,
    created_at TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, item_id, variant, annotator, label)
);

-- A seeded audit sample of verdicts (its order is the labelling queue).
CREATE TABLE IF NOT EXISTS audit_samples (
    audit VARCHAR NOT NULL,
    position INTEGER NOT NULL,
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    created_at TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (audit, run_id, item_id, variant)
);

-- Every model/judge call with its accounting (one row per attempt).
CREATE TABLE IF NOT EXISTS calls (
    run_id VARCHAR,
    item_id VARCHAR,
    variant VARCHAR,
    role VARCHAR,                 -- model | judge
    attempt INTEGER,
    status VARCHAR,               -- ok | error
    http_status INTEGER,
    error VARCHAR,
    latency_ms DOUBLE,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cost_usd DOUBLE,
    cached BOOLEAN,
    created_at TIMESTAMP DEFAULT current_timestamp
);

-- Identical requests (endpoint, model, messages, parameters) answered once.
CREATE TABLE IF NOT EXISTS call_cache (
    key VARCHAR PRIMARY KEY,
    response JSON,
    created_at TIMESTAMP DEFAULT current_timestamp
);

-- Published Mis-prompt tables (one row per cell).
CREATE TABLE IF NOT EXISTS published_misprompt (
    source VARCHAR NOT NULL,      -- e.g. 'misprompt:T6'
    paper VARCHAR,
    table_id VARCHAR,
    evaluator VARCHAR,            -- judge | human
    model VARCHAR,
    setting VARCHAR,              -- zero-shot | one-shot | three-shot | cot | sft
    category_level VARCHAR,       -- all | primary | secondary
    category VARCHAR,
    metric VARCHAR,
    f1 DOUBLE
);

-- Published BIG-Bench Mistake tables.
CREATE TABLE IF NOT EXISTS published_bbm (
    source VARCHAR NOT NULL,      -- e.g. 'bigbench_mistake:T4'
    paper VARCHAR,
    table_id VARCHAR,
    subset VARCHAR,
    task VARCHAR,
    model VARCHAR,
    method VARCHAR,
    measure VARCHAR,
    value DOUBLE,
    note VARCHAR
);

CREATE TABLE IF NOT EXISTS published_counts (
    paper VARCHAR, primary_category VARCHAR, secondary_category VARCHAR, instances INTEGER
);
"""

# v2: per-run Mis-prompt judge counts of finished runs, so the results page does not re-scan
# every verdict on each load (core/misprompt_metrics.py fills and reads it). Rows are exactly
# what `_sums_sql('judge', with_status=True)` yields for the run, plus one marker row per cached
# run (status NULL, n 0) so a finished run without verdicts is cached too. `fingerprint` is the
# run's status, updated_at and item set's created_at when counted: any change re-counts.
_V2 = f"""
CREATE TABLE IF NOT EXISTS run_counts (
    source VARCHAR NOT NULL,      -- run_id
    model VARCHAR,
    setting VARCHAR,
    evaluator VARCHAR NOT NULL,   -- judge
    primary_category VARCHAR,
    secondary_category VARCHAR,
    is_error BOOLEAN,
    {", ".join(f"pos_{label} BIGINT" for label in JUDGE_LABELS)},
    {", ".join(f"known_{label} BIGINT" for label in JUDGE_LABELS)},
    n BIGINT,
    n_inconsistent BIGINT,
    status VARCHAR,               -- ok | failed (verdict status); NULL = the run's marker row
    fingerprint VARCHAR NOT NULL,
    computed_at TIMESTAMP DEFAULT current_timestamp
);
"""

# v3: judging is a stage of its own. A run's responses can be judged (Mis-prompt) or scored
# (ErrorBench, BBM) again without asking the model (`python -m core rescore`); each judging is
# kept under its name, so verdicts gain `judging` in their key ('default' = the run's own
# judging, done right after each response) and `scores` (a parser judging's numbers). The
# `judgings` table describes every judging beyond 'default' (whose judge, template and status
# are the run's own); `all_judgings` lists both kinds and `current_judgings` names each run's
# latest finished judging (else its latest), the one results show unless another is chosen.
_VERDICT_COLUMNS_V1 = ("run_id, item_id, variant, judge_model, status, "
                       + ", ".join(JUDGE_LABELS)
                       + ", rationales, raw, parse_note, inconsistent, error, prompt_tokens, "
                         "completion_tokens, latency_ms, cost_usd, created_at")
_V3 = f"""
CREATE TABLE verdicts_v3 (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    judge_model VARCHAR,
    status VARCHAR NOT NULL,      -- ok | failed
    {", ".join(f"{label} BOOLEAN" for label in JUDGE_LABELS)},
    rationales JSON,
    raw VARCHAR,
    parse_note VARCHAR,
    inconsistent BOOLEAN,
    error VARCHAR,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms DOUBLE,
    cost_usd DOUBLE,
    created_at TIMESTAMP DEFAULT current_timestamp,
    judging VARCHAR NOT NULL DEFAULT 'default',  -- which judging of the run this verdict is
    scores JSON,                  -- a parser judging's per-response numbers (ErrorBench, BBM)
    PRIMARY KEY (run_id, judging, item_id, variant)
);
INSERT INTO verdicts_v3 ({_VERDICT_COLUMNS_V1}) SELECT {_VERDICT_COLUMNS_V1} FROM verdicts;
DROP TABLE verdicts;
ALTER TABLE verdicts_v3 RENAME TO verdicts;

CREATE TABLE IF NOT EXISTS judgings (
    run_id VARCHAR NOT NULL,
    judging VARCHAR NOT NULL,     -- its name (never 'default': that one is the run's own)
    kind VARCHAR NOT NULL,        -- judge (an LLM) | parser (ErrorBench, BBM scoring code)
    judge_model VARCHAR,
    judge_endpoint VARCHAR,
    template_id VARCHAR,          -- judge template (Mis-prompt) or scorer version
    params JSON,                  -- judge settings; never an API key
    status VARCHAR,               -- running | done | failed | cancelled
    n_planned INTEGER,
    pid INTEGER,
    created_at TIMESTAMP DEFAULT current_timestamp,
    updated_at TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, judging)
);

CREATE OR REPLACE VIEW all_judgings AS
SELECT run_id, 'default' AS judging,
       CASE WHEN benchmark = 'misprompt' THEN 'judge' ELSE 'parser' END AS kind,
       judge_model, judge_endpoint,
       CASE WHEN benchmark = 'misprompt' THEN json_extract_string(params, '$.judge_template')
       END AS template_id,
       status, created_at, updated_at
FROM runs
UNION ALL
SELECT run_id, judging, kind, judge_model, judge_endpoint, template_id, status, created_at,
       updated_at
FROM judgings;

CREATE OR REPLACE VIEW current_judgings AS
SELECT run_id, judging FROM all_judgings
QUALIFY row_number() OVER (PARTITION BY run_id
                           ORDER BY coalesce(status = 'done', false) DESC, created_at DESC,
                                    judging = 'default') = 1;

CREATE OR REPLACE VIEW current_verdicts AS
SELECT v.* FROM verdicts v
SEMI JOIN current_judgings c ON c.run_id = v.run_id AND c.judging = v.judging;
"""

MIGRATIONS: list[str] = [_V1, _V2, _V3]
assert len(MIGRATIONS) == SCHEMA_VERSION


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """0 for an empty file (no meta table)."""
    has_meta = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
    ).fetchone()[0]
    if not has_meta:
        return 0
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(con: duckdb.DuckDBPyConnection, path: Path | str = "") -> int:
    """Bring the schema to SCHEMA_VERSION; refuse a file written by a newer version."""
    version = schema_version(con)
    if version > SCHEMA_VERSION:
        raise DatabaseTooNew(
            f"{path} has schema version {version}, but this program knows only up to "
            f"{SCHEMA_VERSION}. Update the program (git pull), or point --db / {DB_ENV_VAR} at "
            "another file."
        )
    for target in range(version, SCHEMA_VERSION):
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(MIGRATIONS[target])
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(target + 1)]
            )
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text or "held" in text)


def _classify_open_error(path: Path, exc: Exception) -> DatabaseError:
    if _is_lock_error(exc):
        return DatabaseLocked(
            f"{path} is locked by another process that is writing to it (DuckDB allows one "
            "writer at a time). Wait for it to finish, or stop it; the app and the CLI retry "
            "automatically for a while before giving up."
        )
    text = str(exc).lower()
    if any(s in text for s in _NO_SPACE + _NO_WRITE):
        return DatabaseError(f"{path} could not be opened for writing ({_first_line(exc)}). "
                             + _write_advice(exc))
    return DatabaseCorrupt(
        f"{path} could not be opened as a DuckDB database ({type(exc).__name__}: {exc}). "
        "If the file is damaged, move it aside and run `python -m core init` to create a new "
        "one."
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


_NO_SPACE = ("no space left", "file too large", "disk quota", "not enough space")
_NO_WRITE = ("permission denied", "read-only file system", "operation not permitted")


def _write_advice(exc: BaseException) -> str:
    """What the user can do about a failed write, from the OS reason in DuckDB's message."""
    text = str(exc).lower()
    if any(s in text for s in _NO_SPACE):
        return "Free some disk space (or use --db on another disk), then run the command again."
    if any(s in text for s in _NO_WRITE):
        return "Make the file and its folder writable (or use another --db), then try again."
    return "Check the file and its disk, then run the command again."


def _rollback_quietly(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back if a transaction is still open; a failure here is a consequence, not news."""
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass


_WRITE_LOCKS: dict[Path, threading.RLock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


_CONNECT_LOCKS: dict[Path, threading.Lock] = {}


def _connect_lock(path: Path) -> threading.Lock:
    with _WRITE_LOCKS_GUARD:
        return _CONNECT_LOCKS.setdefault(path, threading.Lock())


def _write_lock(path: Path) -> threading.RLock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(path, threading.RLock())


@dataclass
class Store:
    """A handle on the results file. Cheap to create; holds no open connection.

    `lock_timeout` is how long an operation waits for another process's write lock.
    """

    path: Path
    lock_timeout: float = 30.0
    _migrated: bool = False

    @classmethod
    def open(cls, db: str | os.PathLike[str] | None = None, *, create: bool = True,
             lock_timeout: float = 30.0) -> "Store":
        path = resolve_db_path(db)
        if not create and not path.exists():
            raise DatabaseError(
                f"No database at {path}. Run `python -m core init --db {path}` first."
            )
        store = cls(path=path, lock_timeout=lock_timeout)
        store.ensure_schema()
        return store

    # -- connections -----------------------------------------------------------------------
    @contextlib.contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection; retries with jittered backoff while another process writes."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.01
        while True:
            try:
                # DuckDB's per-process instance cache races when two threads open the same
                # file at once ("Unique file handle conflict"): serialise the open itself.
                with _connect_lock(self.path):
                    con = duckdb.connect(str(self.path))
                break
            except duckdb.Error as exc:  # IOException for locks, others for corrupt files
                if _is_lock_error(exc) and time.monotonic() < deadline:
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.25)
                    continue
                raise _classify_open_error(self.path, exc) from exc
        try:
            yield con
        finally:
            con.close()

    def ensure_schema(self) -> None:
        if self._migrated:
            return
        with _write_lock(self.path), self.connect() as con:
            try:
                migrate(con, self.path)
            except DatabaseError:
                raise
            except duckdb.Error as exc:
                raise _classify_open_error(self.path, exc) from exc
        self._migrated = True

    # -- reads -----------------------------------------------------------------------------
    def df(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> pd.DataFrame:
        with self.connect() as con:
            return con.execute(sql, params or []).df()

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[tuple]:
        with self.connect() as con:
            return con.execute(sql, params or []).fetchall()

    def scalar(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Any:
        rows = self.rows(sql, params)
        return rows[0][0] if rows else None

    # -- writes ----------------------------------------------------------------------------
    def transaction(self, fn: Callable[[duckdb.DuckDBPyConnection], Any]) -> Any:
        """Run fn(con) in one transaction: all of it lands or none of it does.

        The error that stopped the transaction is the one raised: a ROLLBACK failing after it
        (DuckDB ends the transaction itself when COMMIT fails, e.g. on a full disk, and then
        says "cannot rollback - no transaction is active") must not hide the real cause.
        """
        with _write_lock(self.path), self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                result = fn(con)
            except BaseException:
                _rollback_quietly(con)
                raise
            try:
                con.execute("COMMIT")
            except duckdb.ConstraintException:
                _rollback_quietly(con)
                raise  # callers handle key clashes themselves (e.g. retry with REPLACE)
            except duckdb.Error as exc:
                _rollback_quietly(con)
                raise DatabaseError(
                    f"could not save to {self.path}: {_first_line(exc)}; nothing of this "
                    "write was kept. " + _write_advice(exc)) from exc
            return result

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> None:
        self.transaction(lambda con: con.execute(sql, params or []).fetchall())

    def insert_df(self, table: str, frame: pd.DataFrame, *, replace_where: str | None = None,
                  params: Sequence[Any] | None = None) -> int:
        """Insert a DataFrame by column name; optionally delete matching rows first (atomic)."""

        def write(con: duckdb.DuckDBPyConnection) -> int:
            if replace_where:
                con.execute(f"DELETE FROM {table} WHERE {replace_where}", params or [])
            return insert_frame(con, table, frame)

        return self.transaction(write)


class ItemSetConflict(ValueError):
    """An item set of that name already holds another benchmark's items."""


def replace_item_set(con: duckdb.DuckDBPyConnection, name: str, benchmark: str,
                     frame: pd.DataFrame, *, origin: str | None, info: dict | None = None) -> bool:
    """Replace item set `name` by `frame`'s rows (columns named as in `items`) inside the caller's
    transaction, so an import either lands whole or not at all. Returns whether the name existed;
    refuses a name owned by another benchmark rather than mixing two benchmarks in one set."""
    import json

    existing = con.execute("SELECT benchmark FROM item_sets WHERE name = ?", [name]).fetchone()
    if existing and existing[0] != benchmark:
        raise ItemSetConflict(f"item set {name!r} already exists for benchmark {existing[0]!r}; "
                              "choose another --name")
    con.execute("DELETE FROM items WHERE item_set = ?", [name])
    con.execute("DELETE FROM item_sets WHERE name = ?", [name])
    con.execute("INSERT INTO item_sets (name, benchmark, origin, n_items, info) "
                "VALUES (?, ?, ?, ?, ?)",
                [name, benchmark, origin, len(frame), json.dumps(info) if info is not None else None])
    insert_frame(con, "items", frame)
    return existing is not None


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> int:
    """INSERT a DataFrame into `table` by column name (the frame may hold a subset of columns)."""
    if len(frame):
        con.register("_insert_frame", frame)
        cols = ", ".join(frame.columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _insert_frame")
        con.unregister("_insert_frame")
    return len(frame)
