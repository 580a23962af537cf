"""The results database: one DuckDB file, its schema, migrations and safe access.

DuckDB lets one *process* hold a file open for writing at a time. The app, a CLI run and a
second browser session must all share one file, so nobody keeps a connection open: every read
or write opens a short-lived connection, retries while another process holds the lock, and
closes it. Within one process, writes are serialised by a lock so readers never see half a
batch (each batch is one transaction).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB = PROJECT_ROOT / "data" / "results.duckdb"
DB_ENV_VAR = "EHW_DB"
SCHEMA_VERSION = 4


class DatabaseError(RuntimeError):
    """A problem with the database file that the user must act on; the message says how."""


class DatabaseLocked(DatabaseError):
    pass


class DatabaseTooNew(DatabaseError):
    pass


class DatabaseCorrupt(DatabaseError):
    pass


class DatabaseReadOnly(DatabaseError):
    """The file or its folder is not writable: browsing works, writes are refused."""


class DatabaseMissing(DatabaseError):
    """The file vanished after it was opened; a reader must not silently create a new one."""


# Substrings of DuckDB errors that mean the file itself is damaged (truncated, overwritten).
_DAMAGE_MARKERS = (
    "could not read enough bytes",
    "not a valid duckdb database",
    "corrupt",
    "checksum",
    "failed to read",
    "invalid block",
    "bad file descriptor",
)
# ... and that mean the operating system refused to let us write.
_READONLY_MARKERS = ("permission denied", "read-only file system", "operation not permitted")


def _is_damage_error(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and any(m in text for m in _DAMAGE_MARKERS)


def _is_readonly_error(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(m in text for m in _READONLY_MARKERS) or "read-only mode" in text


def _writable(path: Path) -> bool:
    """Whether this process may write the file and create its WAL next to it."""
    parent_ok = os.access(path.parent, os.W_OK)
    return parent_ok and (not path.exists() or os.access(path, os.W_OK))


def readonly_message(path: Path) -> str:
    return (
        f"{path} is read-only (the file or its folder is not writable): browsing works, "
        "but writes (runs, imports, labels) are disabled. Make the file and its folder "
        "writable, or point --db / EHW_DB at a writable copy."
    )


def missing_message(path: Path) -> str:
    return (
        f"{path} was deleted or moved while the app was running; run `python -m core "
        "init` or restore it."
    )


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

# The label columns of `verdicts` and `run_counts` in schemas 1-3 (history: schema 4 keeps labels
# in the generic result record's `labels` JSON; the benchmark that defines them owns their names).
_V1_LABELS: tuple[str, ...] = (
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
    status VARCHAR,               -- pending | running | done | failed | cancelled | interrupted
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
    {", ".join(f"{label} BOOLEAN" for label in _V1_LABELS)},
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
# every verdict on each load (core/misprompt/metrics.py fills and reads it). Rows are exactly
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
    {", ".join(f"pos_{label} BIGINT" for label in _V1_LABELS)},
    {", ".join(f"known_{label} BIGINT" for label in _V1_LABELS)},
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
# (Its views are replaced by v4's, which say a run's own judging is a judge's when the run names
# a judge model; written here the same way, so no step names a benchmark.)
_VERDICT_COLUMNS_V1 = (
    "run_id, item_id, variant, judge_model, status, "
    + ", ".join(_V1_LABELS)
    + ", rationales, raw, parse_note, inconsistent, error, prompt_tokens, "
    "completion_tokens, latency_ms, cost_usd, created_at"
)
_V3 = f"""
CREATE TABLE verdicts_v3 (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    judge_model VARCHAR,
    status VARCHAR NOT NULL,      -- ok | failed
    {", ".join(f"{label} BOOLEAN" for label in _V1_LABELS)},
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
       CASE WHEN judge_model IS NOT NULL THEN 'judge' ELSE 'parser' END AS kind,
       judge_model, judge_endpoint,
       json_extract_string(params, '$.judge_template') AS template_id,
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


# v4: one result record for every benchmark. `verdicts` (Mis-prompt's six label columns, or a
# parser judging's `scores`) becomes `results`: per (run, judging, item, variant) what was read
# (`answer`), `correct`, `score`, `labels` (named values of a multi-label judge), `status` (ok /
# unparsable / out_of_range / truncated / … — `failed` alone means "not done, ask again") and
# `explanation`, with the judge's or scorer's details in `metadata`. Code-scored runs' own
# judging, kept in `responses.scores` until v3, gets its record rows too, so every reader reads
# one table. The benchmark-specific fields (answer, correct, score, status of migrated rows) are
# derived by each registered benchmark's `migrate_sql` (core/benchmarks.py), after this step.
# `run_counts` keeps a benchmark's cached counts as one JSON object per row.
_V4 = f"""
CREATE TABLE results (
    run_id VARCHAR NOT NULL,
    judging VARCHAR NOT NULL DEFAULT 'default',
    item_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    judge_model VARCHAR,
    status VARCHAR NOT NULL,      -- ok | unparsable | out_of_range | truncated | failed
    answer VARCHAR,               -- what was read from the response, as people read it
    correct BOOLEAN,              -- right or wrong, where the benchmark has a right answer
    score DOUBLE,                 -- a number, where the benchmark scores one
    labels JSON,                  -- named values of a multi-label judge
    explanation VARCHAR,          -- the judge's or scorer's reasons, as text
    metadata JSON,                -- everything else the judge or scorer recorded
    raw VARCHAR,                  -- a judge's output as written
    parse_note VARCHAR,           -- how a judge's output was read (schema | repaired | ...)
    error VARCHAR,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms DOUBLE,
    cost_usd DOUBLE,
    created_at TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, judging, item_id, variant)
);
INSERT INTO results (run_id, judging, item_id, variant, judge_model, status, labels, metadata,
                     raw, parse_note, error, prompt_tokens, completion_tokens, latency_ms,
                     cost_usd, created_at)
SELECT run_id, judging, item_id, variant, judge_model, status,
       CASE WHEN scores IS NULL THEN json_object({", ".join(f"'{lb}', {lb}" for lb in _V1_LABELS)})
       END,
       coalesce(scores, json_object('rationales', rationales, 'inconsistent', inconsistent)),
       raw, parse_note, error, prompt_tokens, completion_tokens, latency_ms, cost_usd, created_at
FROM verdicts;
INSERT INTO results (run_id, judging, item_id, variant, status, metadata, created_at)
SELECT x.run_id, 'default', x.item_id, x.variant, 'ok', x.scores, x.created_at
FROM responses x JOIN runs r ON r.run_id = x.run_id
WHERE r.judge_model IS NULL AND x.status = 'ok' AND x.scores IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM verdicts v WHERE v.run_id = x.run_id AND v.judging = 'default'
                  AND v.item_id = x.item_id AND v.variant = x.variant);
DROP VIEW IF EXISTS current_verdicts;
DROP VIEW IF EXISTS current_judgings;
DROP VIEW IF EXISTS all_judgings;
DROP TABLE verdicts;

CREATE TABLE run_counts_v4 (
    source VARCHAR NOT NULL,      -- run_id
    model VARCHAR,
    setting VARCHAR,
    evaluator VARCHAR NOT NULL,
    primary_category VARCHAR,
    secondary_category VARCHAR,
    is_error BOOLEAN,
    counts JSON,                  -- the benchmark's counts of this group, by name
    n BIGINT,
    status VARCHAR,               -- result status; NULL = the run's marker row
    fingerprint VARCHAR NOT NULL,
    computed_at TIMESTAMP DEFAULT current_timestamp
);
DROP TABLE run_counts;
ALTER TABLE run_counts_v4 RENAME TO run_counts;

-- A run's own judging ('default') is an LLM judge's when the run names a judge model, else
-- its benchmark's scoring code; named judgings are listed in `judgings`.
CREATE VIEW all_judgings AS
SELECT run_id, 'default' AS judging,
       CASE WHEN judge_model IS NOT NULL THEN 'judge' ELSE 'parser' END AS kind,
       judge_model, judge_endpoint,
       json_extract_string(params, '$.judge_template') AS template_id,
       status, created_at, updated_at
FROM runs
UNION ALL
SELECT run_id, judging, kind, judge_model, judge_endpoint, template_id, status, created_at,
       updated_at
FROM judgings;

CREATE VIEW current_judgings AS
SELECT run_id, judging FROM all_judgings
QUALIFY row_number() OVER (PARTITION BY run_id
                           ORDER BY coalesce(status = 'done', false) DESC, created_at DESC,
                                    judging = 'default') = 1;

CREATE VIEW current_results AS
SELECT v.* FROM results v
SEMI JOIN current_judgings c ON c.run_id = v.run_id AND c.judging = v.judging;
"""

MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4]

# A judging's name (`rescore --as`): the run-name alphabet, at most 80 characters. Checked where
# names are made and before one is put in SQL as a literal (core/misprompt/metrics.py).
JUDGING_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+=@-]{0,79}$")
assert len(MIGRATIONS) == SCHEMA_VERSION


def schema_version(con: duckdb.DuckDBPyConnection, path: Path | str = "") -> int:
    """0 for an empty file (no meta table); a non-integer version means a damaged file."""
    has_meta = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
    ).fetchall()[0][0]
    if not has_meta:
        return 0
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if not row:
        return 0
    try:
        return int(row[0])
    except (TypeError, ValueError):
        raise DatabaseCorrupt(
            f"{path or 'the database'} has schema version {row[0]!r} in table meta, which is "
            "not a whole number: the file is damaged or was not written by this program. Move "
            "it aside and run `python -m core init` to create a new one."
        ) from None


def migrate(con: duckdb.DuckDBPyConnection, path: Path | str = "") -> int:
    """Bring the schema to SCHEMA_VERSION; refuse a file written by a newer version."""
    version = schema_version(con, path)
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
            if target + 1 == 4:
                _derive_records(con)
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(target + 1)]
            )
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    ensure_benchmark_views(con)
    return SCHEMA_VERSION


def _derive_records(con: duckdb.DuckDBPyConnection) -> None:
    """v3 -> v4: each benchmark fills answer, correct, score and status of its migrated rows
    (its `migrate_sql`, run inside the migration's transaction)."""
    from core.benchmarks import BENCHMARKS, resolve

    for benchmark in BENCHMARKS.values():
        if benchmark.migrate_sql:
            con.execute(resolve(benchmark.migrate_sql))


def benchmark_views_sql() -> str:
    """Every registered benchmark's own views over the generic tables (`Benchmark.views`)."""
    from core.benchmarks import BENCHMARKS, resolve

    return "\n".join(resolve(b.views) for b in BENCHMARKS.values() if b.views)


def ensure_benchmark_views(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create the benchmarks' views when their SQL changed since the file last saw it (a
    digest in `meta`), so a new or changed benchmark needs no migration of its own."""
    sql = benchmark_views_sql()
    digest = hashlib.sha256(sql.encode()).hexdigest()[:16]
    row = con.execute("SELECT value FROM meta WHERE key = 'benchmark_views'").fetchone()
    if row and row[0] == digest:
        return
    con.execute("BEGIN TRANSACTION")
    try:
        if sql:
            con.execute(sql)
        con.execute("INSERT OR REPLACE INTO meta VALUES ('benchmark_views', ?)", [digest])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text or "held" in text)


def _classify_open_error(path: Path, exc: Exception) -> DatabaseError:
    if isinstance(exc, DatabaseError):
        return exc
    if not path.exists():
        return DatabaseMissing(missing_message(path))
    if path.is_dir():
        return DatabaseError(
            f"{path} is a folder, not a database file; point --db / {DB_ENV_VAR} at a .duckdb file."
        )
    if _is_readonly_error(exc):
        return DatabaseReadOnly(readonly_message(path))
    if _is_lock_error(exc):
        return DatabaseLocked(
            f"{path} is locked by another process that is writing to it (DuckDB allows one "
            "writer at a time). Wait for it to finish, or stop it; the app and the CLI retry "
            "automatically for a while before giving up."
        )
    text = str(exc).lower()
    if any(s in text for s in _NO_SPACE + _NO_WRITE):
        return DatabaseError(
            f"{path} could not be opened for writing ({_first_line(exc)}). " + _write_advice(exc)
        )
    return DatabaseCorrupt(
        f"{path} could not be opened as a DuckDB database ({type(exc).__name__}: {exc}): "
        "the file is damaged (e.g. truncated) or is not a database. Move it aside (or restore "
        "a backup) and run `python -m core init` to create a new one."
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
    `read_only`: the file or its folder is not writable, so connections open with DuckDB's
    read_only=True (browsing works) and every write raises DatabaseReadOnly. Only `open(...,
    create=True)` creates a file: a connection to a file that vanished raises DatabaseMissing
    instead of silently starting an empty database.
    """

    path: Path
    lock_timeout: float = 30.0
    _migrated: bool = False
    read_only: bool = False
    _may_create: bool = False

    @classmethod
    def open(
        cls,
        db: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        lock_timeout: float = 30.0,
    ) -> Store:
        """create=True is for `init` and commands that write (imports, runs); readers pass
        False so a missing file is reported rather than replaced by an empty one."""
        path = resolve_db_path(db)
        if path.is_dir():
            raise DatabaseError(
                f"{path} is a folder, not a database file; point --db / "
                f"{DB_ENV_VAR} at a .duckdb file."
            )
        exists = path.exists()
        if not create and not exists:
            raise DatabaseError(
                f"No database at {path}. Run `python -m core init --db {path}` first."
            )
        if not exists:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseReadOnly(
                    f"cannot create {path}: {exc.strerror} ({path.parent})"
                ) from None
            if not _writable(path):
                raise DatabaseReadOnly(
                    f"cannot create {path}: its folder {path.parent} is not "
                    "writable. Point --db / EHW_DB at a writable place."
                )
        store = cls(
            path=path,
            lock_timeout=lock_timeout,
            read_only=exists and not _writable(path),
            _may_create=not exists,
        )
        try:
            store.ensure_schema()
        finally:
            store._may_create = False
        return store

    # -- connections -----------------------------------------------------------------------
    @contextlib.contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection; retries with jittered backoff while another process writes."""
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.01
        while True:
            if not self._may_create and not self.path.exists():
                raise DatabaseMissing(missing_message(self.path))
            try:
                # DuckDB's per-process instance cache races when two threads open the same
                # file at once ("Unique file handle conflict"): serialise the open itself.
                with _connect_lock(self.path):
                    con = duckdb.connect(str(self.path), read_only=self.read_only)
                break
            except duckdb.Error as exc:  # IOException for locks, others for corrupt files
                if _is_lock_error(exc) and time.monotonic() < deadline:
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.25)
                    continue
                if not self.read_only and _is_readonly_error(exc) and self.path.exists():
                    self.read_only = True  # e.g. a read-only mount: browse it
                    continue
                raise _classify_open_error(self.path, exc) from exc
        try:
            yield con
        except duckdb.Error as exc:
            if _is_damage_error(exc):
                raise _classify_open_error(self.path, exc) from exc
            if self.read_only and _is_readonly_error(exc):
                raise DatabaseReadOnly(readonly_message(self.path)) from exc
            raise
        finally:
            con.close()

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Keep the file open in this process for a burst of short operations.

        Why: opening a DuckDB file builds a database instance, ~12 ms here even for an empty
        file; while one connection is open, DuckDB gives later connections to the same file in
        this process that instance (~0.02 ms). Every operation inside still has its own
        connection and transaction. Other processes wait for the file (their lock retries) as
        long as the block lasts: use it around a burst (init, a batch of label saves), never
        around a run or anything that waits on a model."""
        with self.connect():
            yield

    def ensure_schema(self) -> None:
        if self._migrated:
            return
        if self.read_only:
            with self.connect() as con:
                try:
                    version = schema_version(con, self.path)
                except duckdb.Error as exc:
                    raise _classify_open_error(self.path, exc) from exc
            if version > SCHEMA_VERSION:
                with self.connect() as con:
                    migrate(con, self.path)  # raises DatabaseTooNew
            if version < SCHEMA_VERSION:
                raise DatabaseReadOnly(
                    f"{self.path} has schema version {version} and needs upgrading to "
                    f"{SCHEMA_VERSION}, but it is read-only (the file or its folder is not "
                    "writable). Make it writable and run `python -m core init`, or point --db "
                    f"/ {DB_ENV_VAR} at a writable copy."
                )
            self._migrated = True
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
        if self.read_only:
            raise DatabaseReadOnly(readonly_message(self.path))
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
                    "write was kept. " + _write_advice(exc)
                ) from exc
            return result

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> None:
        self.transaction(lambda con: con.execute(sql, params or []).fetchall())

    def insert_df(
        self,
        table: str,
        frame: pd.DataFrame,
        *,
        replace_where: str | None = None,
        params: Sequence[Any] | None = None,
    ) -> int:
        """Insert a DataFrame by column name; optionally delete matching rows first (atomic)."""

        def write(con: duckdb.DuckDBPyConnection) -> int:
            if replace_where:
                con.execute(f"DELETE FROM {table} WHERE {replace_where}", params or [])
            return insert_frame(con, table, frame)

        return self.transaction(write)


class ItemSetConflict(ValueError):
    """An import that must not write: the name holds another benchmark's items, runs use the
    set (ItemSetInUse), or the import yields no items (EmptyItemSet)."""


class ItemSetInUse(ItemSetConflict):
    """Runs were scored against this set: changing its items would silently change them."""

    def __init__(self, name: str, runs: list[str], suggestion: str) -> None:
        self.name, self.runs, self.suggestion = name, runs, suggestion
        shown = ", ".join(runs[:10]) + (f" … and {len(runs) - 10} more" if len(runs) > 10 else "")
        super().__init__(
            f"item set {name!r} is used by {len(runs)} run(s) ({shown}) and cannot be changed "
            f"(their results refer to its items); nothing was written. Import under another "
            f"--name, e.g. --name {suggestion}"
        )


class EmptyItemSet(ItemSetConflict):
    """An import with zero items would empty (or create an empty) set."""


def runs_using(con: duckdb.DuckDBPyConnection, name: str) -> list[str]:
    """Run ids (any kind, any status) whose results refer to item set `name`."""
    return [
        r[0]
        for r in con.execute(
            "SELECT run_id FROM runs WHERE item_set = ? ORDER BY run_id", [name]
        ).fetchall()
    ]


def _free_name(con: duckdb.DuckDBPyConnection, name: str) -> str:
    taken = {r[0] for r in con.execute("SELECT name FROM item_sets").fetchall()}
    k = 2
    while f"{name}-{k}" in taken:
        k += 1
    return f"{name}-{k}"


# The items table's columns after item_set, in order (importers build frames with them).
ITEM_COLUMNS = (
    "item_id",
    "benchmark",
    "split",
    "is_error",
    "primary_category",
    "secondary_category",
    "prompt",
    "explanation",
    "gold",
    "payload",
)


def _same_items(con: duckdb.DuckDBPyConnection, name: str, frame: pd.DataFrame) -> bool:
    """Whether `frame` holds exactly the rows stored for `name` (every items column compared as
    text; columns the frame lacks must be NULL in the database)."""
    n_stored = con.execute("SELECT count(*) FROM items WHERE item_set = ?", [name]).fetchall()[0][0]
    if n_stored != len(frame):
        return False
    cols = [c for c in ITEM_COLUMNS]
    new = ", ".join(
        f"CAST({c} AS VARCHAR)" if c in frame.columns else "CAST(NULL AS VARCHAR)" for c in cols
    )
    old = ", ".join(f"CAST({c} AS VARCHAR)" for c in cols)
    con.register("_same_items_frame", frame)
    try:
        differ = con.execute(
            f"SELECT count(*) FROM ((SELECT {new} FROM _same_items_frame EXCEPT ALL "
            f"SELECT {old} FROM items WHERE item_set = ?) UNION ALL "
            f"(SELECT {old} FROM items WHERE item_set = ? EXCEPT ALL "
            f"SELECT {new} FROM _same_items_frame))",
            [name, name],
        ).fetchall()[0][0]
    finally:
        con.unregister("_same_items_frame")
    return differ == 0


def replace_item_set(
    con: duckdb.DuckDBPyConnection,
    name: str,
    benchmark: str,
    frame: pd.DataFrame,
    *,
    origin: str | None,
    info: dict | None = None,
) -> bool:
    """Replace item set `name` by `frame`'s rows (columns named as in `items`) inside the caller's
    transaction, so an import either lands whole or not at all. Returns whether the name existed.

    The one writer of item sets, so every importer (CLI, Import page, `init`) gets its rules:
    refuses a name owned by another benchmark (no mixed sets), an empty frame (EmptyItemSet:
    an import that yields nothing never empties a set), and a set that runs use
    (ItemSetInUse: results must keep meaning what they meant) unless the rows are identical,
    in which case nothing is written (re-running `init` is a no-op)."""
    import json

    if len(frame) == 0:
        raise EmptyItemSet(
            f"the import yields no items, so item set {name!r} was not "
            "written (an existing set keeps its items)"
        )
    found = con.execute("SELECT benchmark FROM item_sets WHERE name = ?", [name]).fetchall()
    existing = found[0] if found else None
    if existing and existing[0] != benchmark:
        raise ItemSetConflict(
            f"item set {name!r} already exists for benchmark {existing[0]!r}; choose another --name"
        )
    if existing:
        used_by = runs_using(con, name)
        if used_by:
            if _same_items(con, name, frame):
                return True
            raise ItemSetInUse(name, used_by, _free_name(con, name))
    con.execute("DELETE FROM items WHERE item_set = ?", [name])
    con.execute("DELETE FROM item_sets WHERE name = ?", [name])
    con.execute(
        "INSERT INTO item_sets (name, benchmark, origin, n_items, info) VALUES (?, ?, ?, ?, ?)",
        [name, benchmark, origin, len(frame), json.dumps(info) if info is not None else None],
    )
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


def runs_without_judging(store: Store, run_ids: Sequence[str], judging: str) -> list[str]:
    """The runs among `run_ids` that have no judging of that name (`--judging` checks)."""
    have = {
        r[0]
        for r in store.rows(
            "SELECT run_id FROM all_judgings WHERE judging = ? AND list_contains(?, run_id)",
            [judging, list(run_ids)],
        )
    }
    return [r for r in run_ids if r not in have]
