"""The DuckLake backend: a catalog in PostgreSQL, data as Parquet files on S3 or a shared disk.

Why DuckLake: many processes on many machines write one store at once (ACID snapshots in the
catalog database), and the SQL stays DuckDB's, so every query of the file store runs unchanged.
Each process keeps one in-memory DuckDB instance (the extensions load once, from their pip
packages, never downloaded), attaches each lake it opens to it once, and gives every operation
a cursor of its own, as the file store gives every operation a short-lived connection.

What a lake cannot do, and what the store does instead: no PRIMARY KEY / UNIQUE, no INSERT OR
REPLACE / ON CONFLICT. The tables are the file's, derived from the same migrations
(`current_schema`), without their constraints. Writers keep the keys (delete-and-insert or
insert-where-absent in one transaction). Why that alone is not enough: DuckLake never makes two
inserts conflict, so two writers that each found a key absent would both insert it. So every
write transaction first waits for its turn (`Lake.turn`: PostgreSQL advisory locks, held until
it committed) and, unless it writes only one run's flush (a `domain`), updates the one row of
`write_guard` (`take_guard`): DuckLake refuses to commit a transaction that deleted (updated)
rows of a table another transaction changed since it began, so any two such writes that
overlap conflict, and the store runs the later one again on the new snapshot
(Store._lake_transaction). Writes of the whole lake are serialisable; a run's flushes take
their own domain's turn; "is it there? then write it" holds for every key by design (the call
cache, shared by runs, is de-duplicated on read instead: core/engine/results.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb

from core.store.errors import DatabaseError, error_line
from core.store.location import Location

ALIAS = "lake"
INLINE_ENV = "EHW_LAKE_INLINE"
# Inserts of fewer rows than this are kept in the catalog database instead of a new Parquet
# file each: a run's flush (a few hundred rows every second or so) then costs one catalog
# commit instead of four object-store PUTs, and readers fetch no tiny files. `python -m core
# DuckLake's ducklake_flush_inlined_data moves inlined rows to Parquet (docs/team-store.md ›
# Maintenance). Measured: bench/bench_lake.py.
DEFAULT_INLINE_ROWS = 1000


def inline_row_limit() -> int:
    """EHW_LAKE_INLINE overrides the inlining limit (0 writes every insert to Parquet)."""
    raw = os.environ.get(INLINE_ENV, "").strip()
    try:
        return max(0, int(raw)) if raw else DEFAULT_INLINE_ROWS
    except ValueError:
        raise DatabaseError(f"{INLINE_ENV}={raw!r}: a row count is a whole number") from None


EXTENSIONS = ("ducklake", "postgres_scanner", "httpfs")

# DuckLake's own commit retry (a snapshot id another commit took, without a logical conflict:
# it re-commits in the catalog, no data rewritten). The defaults (10 tries, 100 ms x 1.5^n) give
# up under many writers; these make up to 30 tries over ~3 s. A logical conflict (the guard's)
# is retried by the store itself, transaction and all (Store._lake_transaction).
RETRY_SETTINGS = {
    "ducklake_max_retry_count": 30,
    "ducklake_retry_wait_ms": 20,
    "ducklake_retry_backoff": 1.1,
}

GUARD_TABLE = "write_guard"
# lake-only tables: not in the file's schema, never copied (core/services/store_copy.py)
LAKE_ONLY_TABLES = (GUARD_TABLE,)


def ensure_guard(con: duckdb.DuckDBPyConnection) -> None:
    """Make the guard table and its row if missing (in the caller's transaction). Two processes
    making it at once conflict (both created the table) and one runs this again; two rows, should
    both insert one, guard as well as one (every write updates all of them)."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {GUARD_TABLE} (writes BIGINT)")
    con.execute(
        f"INSERT INTO {GUARD_TABLE} SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM {GUARD_TABLE})"
    )


# PostgreSQL advisory lock key of the writers' turn (advisory locks are per catalog database)
TURN_LOCK = 0x65687728


def take_guard(con: duckdb.DuckDBPyConnection) -> None:
    """The first write of every whole-lake write transaction (see the module docstring)."""
    con.execute(f"UPDATE {GUARD_TABLE} SET writes = writes + 1")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    default: str | None
    nullable: bool


@dataclass(frozen=True)
class SchemaShape:
    """The current schema as tables (columns in order) and views, from the migrations."""

    tables: dict[str, tuple[Column, ...]]
    views: tuple[tuple[str, str], ...]  # (name, CREATE VIEW sql) in creation order


_SHAPE: SchemaShape | None = None


def current_schema() -> SchemaShape:
    """Run every migration on an empty in-memory database and read back what it made: one
    definition of the schema for both backends."""
    global _SHAPE
    if _SHAPE is None:
        from core.store.schema import migrate

        con = duckdb.connect()
        try:
            migrate(con)
            tables: dict[str, list[Column]] = {}
            for table, name, typ, default, nullable in con.execute(
                "SELECT table_name, column_name, data_type, column_default, is_nullable "
                "FROM information_schema.columns c WHERE table_schema = 'main' AND table_name "
                "IN (SELECT table_name FROM information_schema.tables WHERE table_type = "
                "'BASE TABLE' AND table_schema = 'main') ORDER BY table_name, ordinal_position"
            ).fetchall():
                tables.setdefault(table, []).append(Column(name, typ, default, nullable == "YES"))
            views = con.execute(
                "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal AND "
                "schema_name = 'main' ORDER BY view_oid"
            ).fetchall()
        finally:
            con.close()
        _SHAPE = SchemaShape({t: tuple(c) for t, c in tables.items()}, tuple(views))
    return _SHAPE


def _column_sql(col: Column) -> str:
    default = f" DEFAULT {col.default}" if col.default is not None else ""
    return f"{col.name} {col.type}{default}{'' if col.nullable else ' NOT NULL'}"


def _write_table_stats(
    con: duckdb.DuckDBPyConnection, table: str, columns: tuple[Column, ...]
) -> None:
    """Give a new table DuckLake's table statistics at once. DuckLake 1.5.5 keeps none for a
    table no row was ever written to, and then looks them up in the catalog again for every
    column a query names, in two optimizer passes (duckdb/ducklake#1313, fixed after 1.5.5):
    measured, a count over an empty table made ~90 catalog queries, over a table that has its
    statistics ~20. A row written and deleted in the transaction that creates the table writes
    them; no reader ever sees the row (the table appears with the commit)."""
    needed = [c for c in columns if not c.nullable and c.default is None]
    if needed:
        values = ", ".join(
            f"COALESCE(TRY_CAST('0' AS {c.type}), TRY_CAST('2000-01-01' AS {c.type}))"
            for c in needed
        )
        names = ", ".join(c.name for c in needed)
        con.execute(f"INSERT INTO {table} ({names}) VALUES ({values})")
    else:
        con.execute(f"INSERT INTO {table} DEFAULT VALUES")
    con.execute(f"DELETE FROM {table}")


def converge(con: duckdb.DuckDBPyConnection) -> bool:
    """Bring the lake's tables and views to the current schema: create missing tables, add
    missing columns (what every migration so far could do additively), recreate views and
    record the version. Returns whether anything changed. Runs in the caller's transaction."""
    from core.store.schema import (
        SCHEMA_VERSION,
        adopt_published_tables,
        ensure_benchmark_views,
    )

    shape = current_schema()
    have: dict[str, set[str]] = {}
    for table, column in con.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = current_database() AND table_schema = 'main'"
    ).fetchall():
        have.setdefault(table, set()).add(column)
    changed = False
    for table, columns in shape.tables.items():
        if table not in have:
            con.execute(f"CREATE TABLE {table} ({', '.join(map(_column_sql, columns))})")
            _write_table_stats(con, table, columns)
            changed = True
            continue
        for col in columns:
            if col.name not in have[table]:
                con.execute(f"ALTER TABLE {table} ADD COLUMN {col.name} {col.type}")
                changed = True
    # the packages' published tables a store made as tables of their own (schema 1's three
    # included) move into `published`, row for row: each package says which and how
    if adopt_published_tables(con):
        changed = True
    version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if changed or version is None or version[0] != str(SCHEMA_VERSION):
        for _, sql in shape.views:
            con.execute(sql.replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1))
        con.execute("DELETE FROM meta WHERE key IN ('schema_version', 'benchmark_views')")
        con.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        changed = True
    ensure_benchmark_views(con, in_transaction=True)
    return changed


def _s3_secret_sql() -> str | None:
    """A temporary (in-memory) S3 secret from the conventional AWS_* variables, or None when
    none is set (a local data path, or an instance role httpfs finds itself)."""
    key = os.environ.get("AWS_ACCESS_KEY_ID")
    endpoint = os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL_S3")
    if not key and not endpoint:
        return None
    parts = ["TYPE s3"]
    if key:
        parts.append(f"KEY_ID {_literal(key)}")
        parts.append(f"SECRET {_literal(os.environ.get('AWS_SECRET_ACCESS_KEY', ''))}")
    if os.environ.get("AWS_SESSION_TOKEN"):
        parts.append(f"SESSION_TOKEN {_literal(os.environ['AWS_SESSION_TOKEN'])}")
    parts.append(f"REGION {_literal(os.environ.get('AWS_REGION', 'us-east-1'))}")
    if endpoint:
        url = urllib.parse.urlsplit(endpoint if "://" in endpoint else "https://" + endpoint)
        parts.append(f"ENDPOINT {_literal(url.netloc)}")
        parts.append("URL_STYLE 'path'")
        parts.append(f"USE_SSL {'true' if url.scheme == 'https' else 'false'}")
    return f"CREATE OR REPLACE TEMPORARY SECRET ehw_s3 ({', '.join(parts)})"


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


_INSTANCE: duckdb.DuckDBPyConnection | None = None
_ATTACHED = itertools.count(1)


def _extension_file(name: str) -> str:
    """The extension's file in its pip package (duckdb_extension_NAME), for this DuckDB."""
    import importlib
    import importlib.resources

    package = importlib.import_module(f"duckdb_extension_{name}")
    folder = Path(str(importlib.resources.files(package))) / "extensions" / f"v{duckdb.__version__}"
    found = folder / f"{name}.duckdb_extension"
    if not found.is_file():
        raise DatabaseError(
            f"DuckDB's {name} extension for DuckDB {duckdb.__version__} is missing ({found}): "
            f"pip install the duckdb-extension-{name} that matches the installed duckdb"
        )
    return str(found)


def _instance() -> duckdb.DuckDBPyConnection:
    """The process's one DuckDB instance for lakes, with the extensions loaded; every lake and
    every pinned snapshot this process opens is attached to it under an alias of its own
    (~0.02-0.05 s each). The caller holds _LAKES_GUARD.

    The extensions are loaded straight from their pip packages' files (pinned beside duckdb in
    requirements.txt: the same trust as the duckdb wheel itself), without DuckDB's signature
    check: checking the three (~100 MB) took ~0.65 s of CPU in every process that opens a lake
    (measured; 0.01 s without), which was a third of a run's start-up, four times over when
    four shards start at once on one machine (docs/performance.md › Shards). Nothing is
    installed or downloaded (autoinstall off), so no other extension file is ever loaded."""
    global _INSTANCE
    if _INSTANCE is None:
        files = [_extension_file(name) for name in EXTENSIONS]
        con = duckdb.connect(
            config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false"}
        )
        try:
            for path in files:
                con.execute(f"LOAD {_literal(path)}")
            for setting, value in RETRY_SETTINGS.items():
                con.execute(f"SET {setting} = {value}")
        except BaseException:
            con.close()
            raise
        _INSTANCE = con
    return _INSTANCE


class Lake:
    """One process's attachment to one lake (see the module docstring)."""

    def __init__(self, location: Location, data_path: str | None, snapshot: int | None):
        assert location.conninfo is not None
        self.location = location
        self.snapshot = snapshot
        n = next(_ATTACHED)
        self.alias = f"{ALIAS}_{n}" if snapshot is None else f"{ALIAS}_{n}_at_{int(snapshot)}"
        try:
            con = _instance()
        except duckdb.Error as exc:
            raise DatabaseError(attach_message(location, exc)) from None
        cur = con.cursor()
        try:
            secret = _s3_secret_sql()  # the environment's, now (the secret is the instance's)
            if secret:
                cur.execute(secret)
            options = []
            if data_path:
                options.append(f"DATA_PATH {_literal(data_path)}")
            if snapshot is not None:
                options += [f"SNAPSHOT_VERSION {int(snapshot)}", "READ_ONLY"]
            options.append(f"DATA_INLINING_ROW_LIMIT {inline_row_limit()}")
            opts = f" ({', '.join(options)})" if options else ""
            url = _literal("ducklake:postgres:" + location.conninfo)
            cur.execute(f"ATTACH {url} AS {self.alias}{opts}")
        except duckdb.Error as exc:
            raise DatabaseError(attach_message(location, exc)) from None
        finally:
            cur.close()
        self._con = con
        self.guarded = False  # whether write_guard is known to exist (Store._lake_transaction)

    def detach(self) -> None:
        """Let the lake go (its catalog connections close); the instance stays for others."""
        cur = self._con.cursor()
        try:
            cur.execute(f"DETACH DATABASE IF EXISTS {self.alias}")
        finally:
            cur.close()

    @contextlib.contextmanager
    def turn(self, domain: str | None = None) -> Iterator[None]:
        """Wait for this lake's writers' turn and hold it for the block: PostgreSQL
        transaction-level advisory locks in the lake's catalog database, taken on a cursor of
        its own before the write transaction begins (so that one's snapshot is taken after the
        turn came) and let go after it committed, or when the process dies and its connection
        closes. Without a `domain`: the lake's one turn, exclusive (every other writer waits).
        With one (a run's flush: `run:RUN:JUDGING:SHARD`): the lake's turn shared (writers of
        other domains go on at once; an exclusive writer waits for all of them) and the
        domain's own exclusive (two processes flushing the same keys take turns).
        Why turns besides the guard: optimistic retries alone let short transactions starve a
        long one (it loses to every commit made while it runs); with turns writers queue."""
        cur = self._con.cursor()
        if domain is None:
            locks = [f"pg_advisory_xact_lock({TURN_LOCK})"]
        else:
            key = int.from_bytes(hashlib.sha256(domain.encode()).digest()[:8], "big", signed=True)
            locks = [f"pg_advisory_xact_lock_shared({TURN_LOCK})", f"pg_advisory_xact_lock({key})"]
        try:
            cur.execute("BEGIN TRANSACTION")
            for lock in locks:
                cur.execute(
                    f"CALL postgres_execute('__ducklake_metadata_{self.alias}', 'SELECT {lock}')"
                )
            yield
        finally:
            with contextlib.suppress(duckdb.Error):
                cur.execute("ROLLBACK")
            cur.close()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        cur = self._con.cursor()
        cur.execute(f"USE {self.alias}")
        return cur

    def snapshot_id(self) -> int:
        """The lake's latest snapshot (its version: every commit of any process makes one)."""
        if self.snapshot is not None:
            return self.snapshot
        cur = self._con.cursor()
        try:
            row = cur.execute(
                f"SELECT id FROM ducklake_current_snapshot('{self.alias}')"
            ).fetchone()
        finally:
            cur.close()
        return int(row[0]) if row else 0


def attach_message(location: Location, exc: BaseException) -> str:
    hint = ""
    low = str(exc).lower()
    if "data_path is not set" in low:
        return (
            f"No store in {location.text}. Run `python -m core init --db '{location.text}' "
            "--data-path DIR|s3://bucket/prefix` first (a new DuckLake needs a place for its "
            "data files)."
        )
    if "does not match existing data path" in low:
        hint = " The lake keeps the data path it was made with: drop --data-path / EHW_DATA_PATH."
    elif "connection" in low or "could not" in low or "password" in low:
        hint = (
            " Check the connection string, that the server runs, and PGPASSWORD (the password "
            "is read from the environment, never from the location)."
        )
    return f"could not open the DuckLake {location.text}: {error_line(exc)}.{hint}"


_LAKES: dict[tuple[str, int | None], Lake] = {}
_LAKES_GUARD = threading.Lock()


def lake_for(location: Location, data_path: str | None, snapshot: int | None = None) -> Lake:
    """The process's attachment to `location` (at `snapshot`, if pinned), made on first use."""
    key = (location.text, snapshot)
    with _LAKES_GUARD:
        lake = _LAKES.get(key)
        if lake is None:
            lake = _LAKES[key] = Lake(location, data_path, snapshot)
        return lake


def forget(location: Location) -> None:
    """Drop this process's attachments to `location` (tests; a catalog dropped under us)."""
    with _LAKES_GUARD:
        for key in [k for k in _LAKES if k[0] == location.text]:
            _LAKES.pop(key).detach()


def is_conflict(exc: BaseException) -> bool:
    """A commit another process's commit beat (retry the whole transaction)."""
    text = str(exc).lower()
    return (
        "conflict" in text
        or "could not serialize" in text
        or "maximum retry count" in text  # DuckLake's own commit retry gave up: ours goes on
        or "ducklake_snapshot_pkey" in text
    )
