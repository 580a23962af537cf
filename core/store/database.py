"""The store: one DuckDB file and safe access to it (schema in core/store/schema.py).

DuckDB lets one *process* hold a file open for writing at a time. The app, a CLI run and a
second browser session must all share one file, so nobody keeps it open: every read or write
takes a short-lived connection to it (the file attached to the process's DuckDB instance while
in use, core/store/files.py), retries while another process holds the lock, and lets it go.
Within one process, writes are serialised by a lock so readers never see half a batch (each
batch is one transaction).
"""

from __future__ import annotations

import contextlib
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

from core.store import files
from core.store.errors import (
    DB_ENV_VAR,
    DEFAULT_DB,
    DatabaseCorrupt,
    DatabaseError,
    DatabaseLocked,
    DatabaseMissing,
    DatabaseReadOnly,
    error_line,
)
from core.store.lake import ALIAS as LAKE_ALIAS
from core.store.lake import (
    GUARD_TABLE,
    Lake,
    converge,
    ensure_guard,
    is_conflict,
    lake_for,
    take_guard,
)
from core.store.location import as_of_from_env, data_path_from_env, parse_location
from core.store.schema import (
    SCHEMA_VERSION,
    benchmark_views_digest,
    migrate,
    schema_version,
    wired,
)

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


def is_writable(path: Path) -> bool:
    """Whether a write to the database at `path` can work: asked before starting something
    that writes beside it (a background run writes its log next to the file)."""
    return _writable(path)


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
    """--db beats the EHW_DB environment variable, which beats data/results.duckdb (for a
    DuckLake location: this machine's stand-in path, see Store.path)."""
    return parse_location(db).store_path


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
            f"{path} could not be opened for writing ({error_line(exc)}). " + _write_advice(exc)
        )
    if "could not read enough bytes" in text:  # DuckDB 1.5 reads a cut tail on open
        return DatabaseCorrupt(truncated_message(path, "DuckDB needed more"))
    return DatabaseCorrupt(
        f"{path} could not be opened as a DuckDB database ({type(exc).__name__}: {exc}): "
        "the file is damaged (e.g. truncated) or is not a database. Move it aside (or restore "
        "a backup) and run `python -m core init` to create a new one."
    )


# DuckDB's file: a main header and two alternating database headers of 4 KiB each, then blocks
# of pragma_database_size's block_size (block n at _FILE_HEADERS_BYTES + n * block_size). DuckDB
# opens a file that lost its tail and only fails when a missing block is read — after a writer
# has extended the file past the hole (the hostile-input run: `import` "succeeded", `metrics`
# then hit a checksum error). Pinned by tests/test_bad_input.py.
_FILE_HEADERS_BYTES = 3 * 4096


def _blocks_needed(con: duckdb.DuckDBPyConnection, thorough: bool, size: int) -> tuple[int, int]:
    """(blocks the file must hold, block size) for a file of `size` bytes. An intact file is
    exactly the headers plus `total_blocks` blocks (pinned by tests/test_bad_input.py), so one
    that long needs no more questions. Shorter, it may still be whole: DuckDB cuts free blocks
    off the end of the file but keeps counting them. Then the number of used blocks (each has
    its own id, so the file holds at least that many) and, if `thorough`, the highest block a
    table's stored segment lives in (catches a cut tail behind free blocks; ~10 ms at 200k
    responses) decide."""
    used, total, block_size = con.execute(
        "SELECT used_blocks, total_blocks, block_size FROM pragma_database_size() "
        "WHERE database_name = current_database()"
    ).fetchone() or (0, 0, 0)
    if not thorough or size >= _FILE_HEADERS_BYTES + int(total) * int(block_size):
        return int(used), int(block_size)
    tables = [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "AND NOT temporary"
        ).fetchall()
    ]
    top = -1
    if tables:
        quoted = ['"' + t.replace('"', '""') + '"' for t in tables]  # an identifier, in a string
        parts = " UNION ALL ".join(
            "SELECT block_id, additional_block_ids, persistent FROM pragma_storage_info('"
            + q.replace("'", "''")
            + "')"
            for q in quoted
        )
        found = con.execute(
            f"SELECT max(greatest(block_id, coalesce(list_max(additional_block_ids), -1))) "
            f"FROM ({parts}) WHERE persistent"  # not data still only in memory / the WAL
        ).fetchone()
        top = int(found[0]) if found and found[0] is not None else -1
    return max(int(used), top + 1), int(block_size)


def damage_probe(con: duckdb.DuckDBPyConnection, path: Path, thorough: bool = True) -> None:
    """Refuse a truncated file before anything is written to it (raises DatabaseCorrupt).

    Why not read every table (which makes DuckDB verify every block's checksum): that scales
    with the file, on every open. This is a stat and one catalog query for a file of its full
    length (~0.3 ms); for a shorter one, thorough (on open) adds the tables' block lists (~12
    ms at 200,000 responses, bench/bench_store_probe.py). Damage inside a block is still
    caught by DuckDB's checksum when the block is read (connect() turns it into the same
    message)."""
    size = path.stat().st_size
    blocks, block_size = _blocks_needed(con, thorough, size)
    needed = _FILE_HEADERS_BYTES + blocks * block_size if blocks else 0
    if size < needed:
        raise DatabaseCorrupt(truncated_message(path, f"its blocks need {needed:,}"))


def check_blocks(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a file with a damaged block before anything is written to it (DatabaseCorrupt),
    naming the blocks, their tables and what `store copy` can save (core/store/blocks.py).
    Run while this connection holds the file, so no other process is half-way through a
    block."""
    from core.store import blocks

    total, block_size = con.execute(
        "SELECT total_blocks, block_size FROM pragma_database_size() "
        "WHERE database_name = current_database()"
    ).fetchone() or (0, blocks.BLOCK_SIZE)
    bad = blocks.damaged_blocks(path, int(block_size), int(total))
    if bad:
        tables = blocks.tables_in_blocks(con, bad)
        raise DatabaseCorrupt(blocks.damage_message(path, bad, int(block_size), tables))


def truncated_message(path: Path, why: str) -> str:
    """The one message for a file that lost its tail, however it was noticed (on open by
    DuckDB, or by damage_probe before a write)."""
    return (
        f"{path} could not be opened as a DuckDB database: it is truncated "
        f"({path.stat().st_size:,} bytes; {why}), so the file is damaged and nothing was "
        "written to it. Move it aside (or restore a backup) and run `python -m core init` to "
        "create a new one."
    )


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
_TURNS = threading.local()  # per thread: the lakes (by alias) whose writers' turn it holds
_LAKES_CURRENT: set[tuple[str, int | None]] = set()  # lakes this process found current
_WRITE_LOCKS_GUARD = threading.Lock()


def _write_lock(path: Path) -> threading.RLock:
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(path, threading.RLock())


@dataclass
class Store:
    """A handle on a store: the results file or a DuckLake. Cheap to create; holds no open
    connection of its own.

    `lock_timeout` is how long an operation waits for another process's write lock.
    `read_only`: the file or its folder is not writable, so connections open with DuckDB's
    read_only=True (browsing works) and every write raises DatabaseReadOnly. Only `open(...,
    create=True)` creates a file: a connection to a file that vanished raises DatabaseMissing
    instead of silently starting an empty database.
    `url`: a DuckLake location (`ducklake:postgres:…`, core/store/location.py) instead of the
    file; `path` is then this machine's stand-in under data/lakes (side files such as run logs
    live beside it). `as_of`: a lake snapshot the store is pinned to (read-only).
    """

    path: Path
    lock_timeout: float = 30.0
    _migrated: bool = False
    read_only: bool = False
    _may_create: bool = False
    url: str | None = None
    data_path: str | None = None
    as_of: int | None = None
    _blocks_checked: bool = False  # every block's checksum verified before this Store's first write

    @classmethod
    def open(
        cls,
        db: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        lock_timeout: float = 30.0,
        data_path: str | None = None,
        as_of: int | None = None,
    ) -> Store:
        """create=True is for `init` and commands that write (imports, runs); readers pass
        False so a missing file is reported rather than replaced by an empty one.
        `data_path` (or EHW_DATA_PATH) is where a new DuckLake keeps its Parquet files;
        `as_of` pins a DuckLake to one of its snapshots."""
        location = parse_location(db)
        as_of = as_of_from_env(as_of)
        if location.is_lake and as_of is not None:
            from core.store.snapshots import check_snapshot

            check_snapshot(location, as_of)  # a clear refusal with the valid range
        if location.is_lake:
            store = cls(
                path=location.store_path,
                lock_timeout=lock_timeout,
                url=location.text,
                # a reader never makes a catalog: only init / writers pass the data path
                data_path=data_path_from_env(data_path) if create else None,
                as_of=as_of,
                read_only=as_of is not None,
                _may_create=create,
            )
            try:
                store.ensure_schema()
            finally:
                store._may_create = False
            return store
        if as_of is not None:
            raise DatabaseError(
                "--as-of / ?as_of= needs a DuckLake store: a DuckDB file keeps no snapshots."
            )
        path = location.path or DEFAULT_DB
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

    @classmethod
    def handle(cls, location: str, *, read_only: bool = False, as_of: int | None = None) -> Store:
        """A handle on a store already opened (and migrated) elsewhere in this process: the
        pages' cached calls rebuild their store from its `location` text with this."""
        parsed = parse_location(location)
        if parsed.is_lake:
            return cls(
                path=parsed.store_path,
                url=parsed.text,
                read_only=read_only,
                as_of=as_of,
                _migrated=True,
            )
        return cls(path=parsed.path or DEFAULT_DB, read_only=read_only, _migrated=True)

    # -- where it is -----------------------------------------------------------------------
    @property
    def is_lake(self) -> bool:
        return self.url is not None

    @property
    def location(self) -> str:
        """What `--db` / EHW_DB accept back: the file's path or the lake's URL (no secrets)."""
        return self.url if self.url is not None else str(self.path)

    @property
    def display(self) -> str:
        """The store as messages and pages name it."""
        return self.location + (f" (snapshot {self.as_of})" if self.as_of is not None else "")

    def exists(self) -> bool:
        """Whether the store is still there (a file can be deleted under a running app)."""
        return self.is_lake or self.path.exists()

    def _lake(self) -> Lake:
        return lake_for(parse_location(self.url), self.data_path, self.as_of)

    # -- connections -----------------------------------------------------------------------
    @contextlib.contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection; retries with jittered backoff while another process writes."""
        if self.url is not None:
            with self._lake_cursor() as cur:
                yield cur
            return
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.01
        while True:
            if not self._may_create and not self.path.exists():
                raise DatabaseMissing(missing_message(self.path))
            try:
                # the file attached to this process's instance while in use (core/store/files.py)
                attachment = files.acquire(self.path, self.read_only)
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
            con = attachment.cursor()
        except BaseException:
            attachment.release()
            raise
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
            attachment.release()

    @contextlib.contextmanager
    def _lake_cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor on this process's attachment to the lake (see core/store/lake.py)."""
        cur = self._lake().cursor()
        try:
            yield cur
        except duckdb.Error as exc:
            if _is_readonly_error(exc):
                raise DatabaseReadOnly(
                    f"{self.display} is read-only for this role or snapshot: browsing works, "
                    "but writes (runs, imports, labels) are disabled."
                ) from exc
            raise
        finally:
            cur.close()

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Keep the file open in this process for a burst of short operations.

        Why: attaching the file costs ~1.5-3 ms (core/store/files.py); while one connection is
        open, later ones in this process share the attachment (~0.02 ms). Every operation
        inside still has its own connection and transaction. Other processes wait for the file
        (their lock retries) as long as the block lasts: use it around a burst (init, a batch
        of label saves, a page's rerun), never around a run or anything that waits on a model.
        (A lake's attachment lives for the whole process anyway.)"""
        if self.is_lake:
            yield
            return
        with self.connect():
            yield

    def ensure_schema(self) -> None:
        if self._migrated:
            return
        if self.is_lake:
            self._ensure_lake_schema()
            self._migrated = True
            return
        if self.read_only:
            with self.connect() as con:
                try:
                    damage_probe(con, self.path)
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
                if not self._may_create:
                    damage_probe(con, self.path)
                    if schema_version(con, self.path) < SCHEMA_VERSION:  # a migration writes
                        check_blocks(con, self.path)
                        self._blocks_checked = True
                migrate(con, self.path)
            except DatabaseError:
                raise
            except duckdb.Error as exc:
                raise _classify_open_error(self.path, exc) from exc
        self._migrated = True

    def _ensure_lake_schema(self) -> None:
        """A new lake gets the current schema (create=True only); an older one gains what is
        missing; a pinned or read-only one must already be current. Once per lake and process
        (each check is several catalog round trips; a process opens its store many times)."""
        key = (self.location, self.as_of)
        if key in _LAKES_CURRENT:
            return
        self._check_lake_schema()
        _LAKES_CURRENT.add(key)

    def _check_lake_schema(self) -> None:
        with self.connect() as con:
            if _lake_is_current(con):
                return  # the common case: one catalog read instead of a converge transaction
            version = schema_version(con, self.display)
        if version > SCHEMA_VERSION:
            with self.connect() as con:
                migrate(con, self.display)  # raises DatabaseTooNew
        if version == 0 and not self._may_create:
            raise DatabaseError(
                f"No store in {self.display}. Run `python -m core init --db '{self.location}' "
                "--data-path DIR|s3://bucket/prefix` first."
            )
        if self.read_only:
            if version < SCHEMA_VERSION:
                raise DatabaseReadOnly(
                    f"{self.display} has schema version {version} and needs {SCHEMA_VERSION}; "
                    "run `python -m core init` on it with a role that may write."
                )
            return
        self.transaction(converge, bump=False)

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
    def transaction(
        self,
        fn: Callable[[duckdb.DuckDBPyConnection], Any],
        *,
        bump: bool = True,
        domain: str | None = None,
    ) -> Any:
        """Run fn(con) in one transaction: all of it lands or none of it does.

        The error that stopped the transaction is the one raised: a ROLLBACK failing after it
        (DuckDB ends the transaction itself when COMMIT fails, e.g. on a full disk, and then
        says "cannot rollback - no transaction is active") must not hide the real cause.
        On a lake, a commit that another process's commit beat is retried (fn runs again on
        the new snapshot) with jittered backoff. `domain` (a lake only): fn writes only keys of
        that domain (a run's flush: its own run, judging and shard), so it takes that domain's
        turn instead of the whole lake's (core/store/lake.py, Lake.turn).
        """
        if self.read_only:
            raise DatabaseReadOnly(
                readonly_message(self.path) if not self.is_lake else f"{self.display} is read-only."
            )
        if self.is_lake:
            return self._lake_transaction(fn, domain)
        with _write_lock(self.path), self.connect() as con:
            damage_probe(con, self.path, thorough=False)  # e.g. cut under a running app
            if not self._blocks_checked:  # damage inside a block: once, before the first write
                check_blocks(con, self.path)
                self._blocks_checked = True
            con.execute("BEGIN TRANSACTION")
            try:
                result = fn(con)
                if bump:
                    _bump_data_version(con)
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
                    f"could not save to {self.path}: {error_line(exc)}; nothing of this "
                    "write was kept. " + _write_advice(exc)
                ) from exc
            return result

    def _lake_transaction(
        self, fn: Callable[[duckdb.DuckDBPyConnection], Any], domain: str | None = None
    ) -> Any:
        """A lake keeps no change counter row: its version is the snapshot id its commits make.
        Every write transaction takes the lake's turn and the guard first (core/store/lake.py:
        any two that overlap conflict), and one that lost is run again, fn and all, on the new
        snapshot; one of a `domain` takes that domain's turn and no guard."""
        lake = self._lake()
        if not lake.guarded:
            self._ensure_guard(lake)
        return self._lake_attempts(fn, guard=domain is None, domain=domain)

    def _lake_attempts(
        self,
        fn: Callable[[duckdb.DuckDBPyConnection], Any],
        guard: bool,
        domain: str | None = None,
    ) -> Any:
        deadline = time.monotonic() + max(self.lock_timeout, CONFLICT_TIMEOUT_S)
        delay = 0.02
        lake = self._lake()
        while True:
            wanted = guard or domain is not None
            outer = wanted and not getattr(_TURNS, lake.alias, False)  # nested: has the turn
            turn = lake.turn(domain) if outer else contextlib.nullcontext()
            try:
                with _write_lock(self.path), turn, self.connect() as con:
                    if outer:
                        setattr(_TURNS, lake.alias, True)
                    con.execute("BEGIN TRANSACTION")
                    try:
                        if guard:
                            take_guard(con)
                        result = fn(con)
                    except duckdb.Error as exc:
                        _rollback_quietly(con)
                        denied = _permission_denied(self.location, exc)
                        if denied:
                            raise DatabaseReadOnly(denied) from exc
                        if not (is_conflict(exc) and time.monotonic() < deadline):
                            raise  # the caller's own error, as on a file
                    except BaseException:
                        _rollback_quietly(con)
                        raise
                    else:
                        try:
                            con.execute("COMMIT")
                            return result
                        except duckdb.Error as exc:
                            _rollback_quietly(con)
                            denied = _permission_denied(self.location, exc)
                            if denied:  # "Failed to commit DuckLake transaction" said nothing
                                raise DatabaseReadOnly(denied) from exc
                            if not (is_conflict(exc) and time.monotonic() < deadline):
                                raise DatabaseError(
                                    f"could not save to {self.display}: {error_line(exc)}; "
                                    "nothing of this write was kept."
                                ) from exc
            finally:
                if outer:
                    setattr(_TURNS, lake.alias, False)
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 1.0)

    def _ensure_guard(self, lake: Lake) -> None:
        """Make the lake's write_guard (and its row) if it has none: once per attachment, in a
        transaction of its own that takes no guard (it only makes the guard)."""
        with self.connect() as con:
            try:  # (listing duckdb_tables() to ask cost ~13 ms of CPU on a lake; this ~3 ms)
                found = con.execute(f"SELECT count(*) FROM {GUARD_TABLE}").fetchall()[0][0]
            except duckdb.CatalogException:
                found = 0
        if not found:
            self._lake_attempts(ensure_guard, guard=False)
        lake.guarded = True

    def data_version(self) -> int:
        """The store's change counter: every write transaction (a run's batch, a rescore, an
        import, an audit label, from any process) adds one when it commits. Pages key their
        caches on it, so a change made elsewhere shows on the next rerun. One small read.
        On a lake: its current snapshot id (the pinned one for `as_of`)."""
        if self.is_lake:
            return self._lake().snapshot_id()
        value = self.scalar(f"SELECT value FROM meta WHERE key = '{DATA_VERSION_KEY}'")
        try:
            return int(value) if value is not None else 0
        except ValueError:
            return 0

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


DATA_VERSION_KEY = "data_version"
# How long a lake write that keeps losing to other writers' commits is tried again (each loss
# means another writer committed: the store as a whole moves on).
CONFLICT_TIMEOUT_S = 120.0


_DENIED = re.compile(r"permission denied for (table|schema|sequence|relation|database) (\S+)")
_ROLE = re.compile(r"(?:^|\s)user=(\S+)")


def _permission_denied(location: str, exc: BaseException) -> str | None:
    """The one line for a lake write the catalog's PostgreSQL role may not make (DuckLake's
    own message is "Failed to commit DuckLake transaction", its cause deep in a query it
    quotes with the rows): which role, which permission, how to grant it. None otherwise."""
    found = _DENIED.search(str(exc))
    if not found:
        return None
    role = _ROLE.search(location)
    who = f"the PostgreSQL role {role.group(1)!r}" if role else "this PostgreSQL role"
    return (
        f"{who} may only read this lake: PostgreSQL refused the write (permission denied for "
        f"{found.group(1)} {found.group(2).strip(chr(34))}). Writing (init, import, run, "
        "rescore, labels) needs INSERT, UPDATE and DELETE on the catalog's tables (and CREATE "
        "on its schema for init): use the writers' role, or grant those (docs/team-store.md); "
        "nothing was written."
    )


def _lake_is_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a lake records this program's schema version and benchmark views (what
    `converge` writes last, once everything else is in place): one query, where the full check
    (schema_version, then converge's transaction) is seven statements, each a catalog round
    trip. Anything else (no meta table yet, another version, a changed benchmark view) takes
    the full check."""
    try:
        found = dict(
            con.execute(
                "SELECT key, value FROM meta WHERE key IN ('schema_version', 'benchmark_views')"
            ).fetchall()
        )
    except duckdb.CatalogException:
        return False
    if not wired():  # a process not told the benchmarks' views keeps the lake's
        return found.get("schema_version") == str(SCHEMA_VERSION)
    return found == {
        "schema_version": str(SCHEMA_VERSION),
        "benchmark_views": benchmark_views_digest(),
    }


def _bump_data_version(con: duckdb.DuckDBPyConnection) -> None:
    """Count this write transaction in meta (see Store.data_version); part of the transaction,
    so the counter moves exactly when the data does."""
    con.execute(
        f"INSERT INTO meta SELECT '{DATA_VERSION_KEY}', '0' WHERE NOT EXISTS "
        f"(SELECT 1 FROM meta WHERE key = '{DATA_VERSION_KEY}')"
    )
    con.execute(
        "UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) "
        f"WHERE key = '{DATA_VERSION_KEY}'"
    )


def is_lake_connection(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `con` works in a DuckLake (core/store/lake.py attaches it under that alias), so
    a writer that needs keys kept knows no constraint will keep them."""
    row = con.execute("SELECT current_database()").fetchone()
    return row is not None and str(row[0]).startswith(LAKE_ALIAS)


def upsert_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: Sequence[str],
    keys: Sequence[str],
    rows: Sequence[Sequence[Any]],
) -> int:
    """INSERT OR REPLACE that works on both backends (a DuckLake table has no key to replace
    on): delete the rows with these keys, insert the new ones, in the caller's transaction.
    Of rows sharing a key the last one wins, as with INSERT OR REPLACE."""
    at = [list(columns).index(k) for k in keys]
    last: dict[tuple, Sequence[Any]] = {}
    for row in rows:
        last[tuple(row[i] for i in at)] = row
    where = " AND ".join(f"{k} = ?" for k in keys)
    for key in last:
        con.execute(f"DELETE FROM {table} WHERE {where}", list(key))
    if last:
        marks = ", ".join("?" for _ in columns)
        con.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
            [list(r) for r in last.values()],
        )
    return len(last)


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> int:
    """INSERT a DataFrame into `table` by column name (the frame may hold a subset of columns)."""
    if len(frame):
        con.register("_insert_frame", frame)
        cols = ", ".join(frame.columns)
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _insert_frame")
        con.unregister("_insert_frame")
    return len(frame)
