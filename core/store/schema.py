"""The schema: every table, view and migration of a store, and what the benchmarks add to it.

The store knows no benchmark: each benchmark package declares its views, caches and the SQL of
its part of the v3 -> v4 step, and whoever knows the benchmarks gives them to the store
(`use_extensions`; core/declared.py wires the registry's).

Each entry of MIGRATIONS brings a file from version i to i + 1, in one transaction (a failed step
leaves the file as it was). Never edit a released migration: append one and bump SCHEMA_VERSION.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb

from core.store.errors import DB_ENV_VAR, DatabaseCorrupt, DatabaseTooNew

SCHEMA_VERSION = 8

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

-- A named set of items of one benchmark (its registry name).
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
    is_error BOOLEAN,            -- erroneous (true) or error-free control (false)
    primary_category VARCHAR,    -- the benchmark's first grouping of its items
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
    setting VARCHAR,              -- what the run varies (its benchmark's variants)
    mode VARCHAR,                 -- proactive | passive
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
    variant VARCHAR NOT NULL,     -- the variant asked (a setting, condition or method)
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

-- The judge's labels for one response. Raw output always kept.
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
"""

# v2: per-run judge counts of a judged benchmark's finished runs, so its results page does not
# re-scan every verdict on each load (its package's metrics fill and read it; since v7 the package
# declares it as its cache). Rows are exactly
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

# v3: judging is a stage of its own. A run's responses can be judged (an LLM judge) or scored
# (a parser) again without asking the model (`python -m core rescore`); each judging is
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
    scores JSON,                  -- a parser judging's per-response numbers
    PRIMARY KEY (run_id, judging, item_id, variant)
);
INSERT INTO verdicts_v3 ({_VERDICT_COLUMNS_V1}) SELECT {_VERDICT_COLUMNS_V1} FROM verdicts;
DROP TABLE verdicts;
ALTER TABLE verdicts_v3 RENAME TO verdicts;

CREATE TABLE IF NOT EXISTS judgings (
    run_id VARCHAR NOT NULL,
    judging VARCHAR NOT NULL,     -- its name (never 'default': that one is the run's own)
    kind VARCHAR NOT NULL,        -- judge (an LLM) | parser (a benchmark's scoring code)
    judge_model VARCHAR,
    judge_endpoint VARCHAR,
    template_id VARCHAR,          -- judge template or scorer version
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


# v4: one result record for every benchmark. `verdicts` (a multi-label judge's columns, or a
# parser judging's `scores`) becomes `results`: per (run, judging, item, variant) what was read
# (`answer`), `correct`, `score`, `labels` (named values of a multi-label judge), `status` (ok /
# unparsable / out_of_range / truncated / … — `failed` alone means "not done, ask again") and
# `explanation`, with the judge's or scorer's details in `metadata`. Code-scored runs' own
# judging, kept in `responses.scores` until v3, gets its record rows too, so every reader reads
# one table. The benchmark-specific fields (answer, correct, score, status of migrated rows) are
# derived by each benchmark's extension (`StoreExtension.migrate_v4`), after this step.
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

# v5: repeats (`run --epochs K`, issue 18). A run may ask each unit K times; each answer is an
# epoch (1..K) of its unit, so `responses` and `results` gain `epoch` in their keys and `calls`
# records which epoch a call served. Every earlier row is epoch 1: a run stored before is a run
# of one epoch, and every reader that does not name an epoch reads all of a run's epochs (the
# mean over epochs; for a one-epoch run exactly what it read before). Readers that pair a
# response with its result join on the epoch too. The column comes last, so `SELECT *` keeps
# its prefix. DuckDB cannot change a primary key in place: both tables are copied.
_RESPONSE_COLUMNS_V4 = (
    "run_id, item_id, variant, status, messages, response, error, attempts, prompt_tokens, "
    "completion_tokens, latency_ms, cost_usd, cached, scores, created_at"
)
_RESULT_COLUMNS_V4 = (
    "run_id, judging, item_id, variant, judge_model, status, answer, correct, score, labels, "
    "explanation, metadata, raw, parse_note, error, prompt_tokens, completion_tokens, "
    "latency_ms, cost_usd, created_at"
)
_V5 = f"""
DROP VIEW IF EXISTS current_results;
CREATE TABLE responses_v5 (
    run_id VARCHAR NOT NULL,
    item_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    messages JSON,
    response VARCHAR,
    error VARCHAR,
    attempts INTEGER,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms DOUBLE,
    cost_usd DOUBLE,
    cached BOOLEAN,
    scores JSON,
    created_at TIMESTAMP DEFAULT current_timestamp,
    epoch INTEGER NOT NULL DEFAULT 1,  -- which of the run's K answers to this unit (1..K)
    PRIMARY KEY (run_id, item_id, variant, epoch)
);
INSERT INTO responses_v5 ({_RESPONSE_COLUMNS_V4}) SELECT {_RESPONSE_COLUMNS_V4} FROM responses;
DROP TABLE responses;
ALTER TABLE responses_v5 RENAME TO responses;

CREATE TABLE results_v5 (
    run_id VARCHAR NOT NULL,
    judging VARCHAR NOT NULL DEFAULT 'default',
    item_id VARCHAR NOT NULL,
    variant VARCHAR NOT NULL,
    judge_model VARCHAR,
    status VARCHAR NOT NULL,
    answer VARCHAR,
    correct BOOLEAN,
    score DOUBLE,
    labels JSON,
    explanation VARCHAR,
    metadata JSON,
    raw VARCHAR,
    parse_note VARCHAR,
    error VARCHAR,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms DOUBLE,
    cost_usd DOUBLE,
    created_at TIMESTAMP DEFAULT current_timestamp,
    epoch INTEGER NOT NULL DEFAULT 1,  -- the epoch of the response it judges
    PRIMARY KEY (run_id, judging, item_id, variant, epoch)
);
INSERT INTO results_v5 ({_RESULT_COLUMNS_V4}) SELECT {_RESULT_COLUMNS_V4} FROM results;
DROP TABLE results;
ALTER TABLE results_v5 RENAME TO results;

ALTER TABLE calls ADD COLUMN epoch INTEGER DEFAULT 1;

CREATE VIEW current_results AS
SELECT v.* FROM results v
SEMI JOIN current_judgings c ON c.run_id = v.run_id AND c.judging = v.judging;
"""

# v6: the dashboard's append-only action log (core/access/log.py; issue 27).
_V6 = """
CREATE TABLE actions (
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
    who VARCHAR NOT NULL,  -- the signed-in email (or 'local: <user>' without login)
    role VARCHAR,
    action VARCHAR NOT NULL,  -- a key of core.access.ACTIONS
    target VARCHAR,  -- what it was done on: a run, run/judging, item set, audit
    detail VARCHAR
);
"""

# v7: the papers' published tables in one long table, owned by the benchmark packages (issue 30).
# Each package's loader writes its tables' rows here, one row per row of its reader's frame:
# the shared columns (source, model, setting, category, measure, value, n) where the table has
# them, the rest in `detail` (JSON, by column name), `position` the row's place in the frame; the
# package's view of the same name gives its readers the table as before. The tables of this kind
# that stores made before (schema 1 made three, as tables of the store's own) are moved in, row
# for row, by the v8 step (`adopt_published_tables`): each package declares the tables it keeps
# and how a table of that name moves, so the store names none. Schema 1 made them here until
# 2026-12-04; a new file no longer gets them, an old one still holds them until v8.
_V7 = """
CREATE TABLE published (
    source VARCHAR,               -- which paper's table: '<benchmark>:<paper table>'
    table_name VARCHAR NOT NULL,  -- the package's name for the table (its view)
    model VARCHAR,
    setting VARCHAR,
    category VARCHAR,
    measure VARCHAR,
    value DOUBLE,
    n BIGINT,
    detail JSON,                  -- the table's other columns, by name
    position BIGINT               -- the row's place in its table as loaded
);
"""

# v8: a package's published table that a store holds as a table of its own (made by schema 1,
# or by the package's views SQL before it declared the table) moves into `published`, row for row, and the package's view of the same name reads
# it back (issue 30). The store names none of them: each package's extension says which tables
# it adopts and how (`StoreExtension.adopt`, run by `adopt_published_tables` inside this step);
# DuckLake stores run the same in core/store/lake.py's converge. No SQL of the store's own.
_V8 = ""

MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8]

# Keys the writers keep (a DuckLake table has no PRIMARY KEY; see core/store/lake.py).
HUMAN_LABEL_KEYS = ("run_id", "item_id", "variant", "annotator", "label")
HUMAN_LABEL_COLUMNS = (*HUMAN_LABEL_KEYS, "value", "judge_value", "note", "created_at")

# A judging's name (`rescore --as`): the run-name alphabet, at most 80 characters. Checked where
# names are made and before one is put in SQL as a literal (a package's metrics, say).
JUDGING_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+=@-]{0,79}$")
assert len(MIGRATIONS) == SCHEMA_VERSION


def schema_version(con: duckdb.DuckDBPyConnection, path: Path | str = "") -> int:
    """0 for an empty file (no meta table); a non-integer version means a damaged file."""
    has_meta = con.execute(  # duckdb_tables(), not information_schema: ~1 ms less per open
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'meta' "
        "AND database_name = current_database() AND schema_name = 'main'"
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
            if MIGRATIONS[target]:
                con.execute(MIGRATIONS[target])
            if target + 1 == 4:
                _derive_records(con)
            if target + 1 == 8:
                adopt_published_tables(con)
            con.execute("DELETE FROM meta WHERE key = 'schema_version'")
            con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(target + 1)])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    ensure_benchmark_views(con)
    return SCHEMA_VERSION


@dataclass(frozen=True)
class StoreExtension:
    """What one benchmark package adds to a store: `views` (SQL, run whenever it changes),
    `caches` (tables of derived rows: a bundle leaves them out, a deleted run drops its own),
    `migrate_v4` (SQL filling its records migrated from schema 3, inside the v3 -> v4 step) and
    `adopt` (a table of its own that its views now read from `published` instead, with the SQL
    moving that table's rows into `published` and dropping it: run where the table exists)."""

    name: str
    views: str = ""
    caches: tuple[tuple[str, str], ...] = ()  # (table, the column naming the run)
    migrate_v4: str = ""
    adopt: tuple[tuple[str, str], ...] = ()  # (table, SQL moving it into `published`)


_EXTENSIONS: Callable[[], Sequence[StoreExtension]] | None = None


def use_extensions(provider: Callable[[], Sequence[StoreExtension]]) -> None:
    """Tell the store where the benchmarks' extensions come from (asked afresh at each use, so
    a benchmark registered later is seen)."""
    global _EXTENSIONS
    _EXTENSIONS = provider


def wired() -> bool:
    """Whether the store was told the benchmarks' extensions. A process that was not (a bare
    `from core.store import Store` script) keeps the views a file has and cannot run the
    v3 -> v4 step on stored records."""
    return _EXTENSIONS is not None


def extensions() -> Sequence[StoreExtension]:
    if _EXTENSIONS is None:
        raise RuntimeError(
            "the store was not told the benchmarks' views and records: call "
            "core.declared.wire_store() first (importing core.engine, core.services or "
            "core.benchmarks does)"
        )
    return _EXTENSIONS()


def cache_tables() -> tuple[tuple[str, str], ...]:
    """Every extension's cache tables (table, the column naming the run), each once."""
    return tuple(dict.fromkeys(c for ext in extensions() for c in ext.caches))


def _derive_records(con: duckdb.DuckDBPyConnection) -> None:
    """v3 -> v4: each benchmark fills answer, correct, score and status of its migrated rows
    (its `migrate_v4`, run inside the migration's transaction)."""
    stored = con.execute("SELECT count(*) FROM results").fetchone()
    if not wired() and stored is not None and stored[0] == 0:
        return  # nothing to derive (a new file): no benchmark needed
    for ext in extensions():
        if ext.migrate_v4:
            con.execute(ext.migrate_v4)


def _base_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
            "AND table_catalog = current_database() AND table_schema = 'main'"
        ).fetchall()
    }


def adopt_published_tables(con: duckdb.DuckDBPyConnection) -> bool:
    """v7 -> v8 (and a lake's converge): move each package's own published table that this
    store still holds as a table into `published` (its `adopt` SQL); returns whether any moved.
    Without the extensions (a bare `from core.store import Store` script) a store holding no
    such table has nothing to move; one that may hold one gets the clear error of
    `extensions()`, since the package's view could not be made over the table later."""
    tables = _base_tables(con)
    if not wired() and not any(t.startswith("published_") for t in tables):
        return False
    moved = False
    for ext in extensions():
        for table, sql in ext.adopt:
            if table in tables:
                con.execute(sql)
                moved = True
    return moved


def benchmark_views_sql() -> str:
    """Every benchmark's own views over the generic tables, in the order they were given."""
    return "\n".join(ext.views for ext in extensions() if ext.views)


def benchmark_views_digest(sql: str | None = None) -> str:
    """What `meta` records of the benchmarks' views (see ensure_benchmark_views)."""
    views = benchmark_views_sql() if sql is None else sql
    return hashlib.sha256(views.encode()).hexdigest()[:16]


def ensure_benchmark_views(con: duckdb.DuckDBPyConnection, in_transaction: bool = False) -> None:
    """(Re)create the benchmarks' views when their SQL changed since the store last saw it (a
    digest in `meta`), so a new or changed benchmark needs no migration of its own."""
    if not wired():
        return  # the views the store has stay (see `wired`)
    sql = benchmark_views_sql()
    digest = benchmark_views_digest(sql)
    row = con.execute("SELECT value FROM meta WHERE key = 'benchmark_views'").fetchone()
    if row and row[0] == digest:
        return
    if not in_transaction:
        con.execute("BEGIN TRANSACTION")
    try:
        if sql:
            con.execute(sql)
        # delete-and-insert, not INSERT OR REPLACE: a DuckLake table has no key to replace on
        con.execute("DELETE FROM meta WHERE key = 'benchmark_views'")
        con.execute("INSERT INTO meta VALUES ('benchmark_views', ?)", [digest])
        if not in_transaction:
            con.execute("COMMIT")
    except Exception:
        if not in_transaction:
            con.execute("ROLLBACK")
        raise
