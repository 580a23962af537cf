"""DuckDB files attached to one in-memory instance per process, only while they are in use.

Why: `duckdb.connect(path)` builds a whole database instance (its built-in functions, its
buffer pool, its threads) and the file store opened one for every read and write — ~12 ms of
CPU each, a quarter of a page's work and of the test suite's. Attaching the file to an
instance the process keeps costs ~3 ms and the lock on the file is the same: it is taken by
ATTACH and released by DETACH, which happens when the last user in this process lets go, so
another process (a CLI run, a second app) can write between our operations exactly as before.
Every operation still gets a connection (cursor) and transaction of its own.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import duckdb

ALIAS = "ehw_file"
# The storage format new files are written in. DuckDB's default is still v0.10.2's, whose
# column statistics are converted on every ATTACH (perf: about a quarter of attaching a file of
# our 16 tables). bench/bench_store_open.py: a short read (attach, read, detach) 4.4 -> 2.8 ms of
# CPU, a small write transaction 9.0 -> 7.2 ms. v1.4.0 is DuckDB 1.4 LTS's format: readable by
# DuckDB 1.4 and later, so a notebook with any recent DuckDB still opens results.duckdb. A file
# made before keeps its format (DuckDB reads both); `store copy` into a new file converts one.
STORAGE_VERSION = "v1.4.0"


class ModeBusy(duckdb.IOException):
    """The file is attached in this process in the other mode (read-only vs writable): wait
    for it to be let go, as for another process's lock. Its text reads as a lock error."""


@dataclass
class _Attached:
    alias: str
    read_only: bool
    users: int


_INSTANCE: duckdb.DuckDBPyConnection | None = None
_FILES: dict[Path, _Attached] = {}
_LATE_CLOSE: dict[Path, list[BinaryIO]] = {}  # handles read while attached, closed at DETACH
_GUARD = threading.Lock()
_NAMES = itertools.count(1)


def _instance() -> duckdb.DuckDBPyConnection:
    """The process's instance for files (the caller holds _GUARD). Lakes have their own, with
    their extensions loaded (core/store/lake.py), and not by chance: a catalog query (the schema
    check on every open lists the tables) visits every database attached to the instance, and
    with a lake attached to this one a file's open + read took 38 ms instead of 20 (measured),
    in any process that uses both (store copy, bundles)."""
    global _INSTANCE
    if _INSTANCE is None:
        _INSTANCE = duckdb.connect()
    return _INSTANCE


def _quoted(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


@dataclass(frozen=True)
class Attachment:
    """One use of an attached file: cursors on it, then `release()` exactly once."""

    path: Path
    alias: str

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A connection of its own (own transaction) whose default database is the file."""
        cur = _instance().cursor()
        try:
            cur.execute(f"USE {self.alias}")
        except BaseException:
            cur.close()
            raise
        return cur

    def release(self) -> None:
        """One user fewer; the last one detaches (DuckDB checkpoints the file and lets go of
        its lock, so another process may write)."""
        with _GUARD:
            found = _FILES[self.path]
            found.users -= 1
            if found.users:
                return
            cur = _instance().cursor()
            try:
                cur.execute(f"DETACH {found.alias}")
            except duckdb.Error:
                # DuckDB detaches even when the checkpoint on the way out fails (a full disk:
                # the WAL keeps what was committed, as when a connection closes); the caller's
                # own error is the news. Still attached means still ours: the next user or
                # release finds it.
                if cur.execute(
                    "SELECT count(*) FROM duckdb_databases() WHERE database_name = ?",
                    [found.alias],
                ).fetchall()[0][0]:
                    return
            finally:
                cur.close()
            del _FILES[self.path]
            for handle in _LATE_CLOSE.pop(self.path, []):
                handle.close()  # the lock is gone with the DETACH: nothing left to drop


def acquire(path: Path, read_only: bool) -> Attachment:
    """`path` attached to this process's instance (attached now if nobody here uses it).
    Raises DuckDB's own error (a lock held by another process, a damaged file, …), as
    duckdb.connect would."""
    path = Path(os.path.abspath(path))  # one attachment per file, however it was named
    with _GUARD:
        found = _FILES.get(path)
        if found is not None:
            if found.read_only != read_only:
                raise ModeBusy(
                    f'Could not set lock on file "{path}": Conflicting lock is held in this '
                    "process (attached in the other mode)"
                )
            found.users += 1
            return Attachment(path, found.alias)
        alias = f"{ALIAS}_{next(_NAMES)}"
        if read_only:
            options = " (READ_ONLY)"
        elif not path.exists():  # ATTACH creates it
            options = f" (STORAGE_VERSION '{STORAGE_VERSION}')"
        else:
            options = ""
        cur = _instance().cursor()
        try:
            cur.execute(f"ATTACH {_quoted(path)} AS {alias}{options}")
        finally:
            cur.close()
        _FILES[path] = _Attached(alias, read_only, 1)
        return Attachment(path, alias)


@contextlib.contextmanager
def reading(path: Path) -> Iterator[BinaryIO]:
    """The file's bytes, read beside DuckDB (e.g. its blocks' checksums, core/store/blocks.py).

    Why not a plain `open()`: DuckDB's lock on the file is a POSIX (fcntl) lock, and closing
    *any* descriptor of a file drops every such lock the process holds on it. A handle closed
    while the file is attached here let another process attach and write beside us; the
    second checkpoint overwrote the first's commit (a lost label, tests/test_audit_concurrency.py
    under load). So a handle of an attached file is closed only after its DETACH."""
    path = Path(os.path.abspath(path))
    handle = open(path, "rb")  # noqa: SIM115 - closed at DETACH, see above
    try:
        yield handle
    finally:
        with _GUARD:
            if path in _FILES:
                _LATE_CLOSE.setdefault(path, []).append(handle)
            else:
                handle.close()


def scratch() -> duckdb.DuckDBPyConnection:
    """A connection on the process's instance and no file, for SQL over DataFrames registered
    on it (registrations are the connection's own): `duckdb.connect()` would build an
    instance (~9 ms) per call. Close it after use."""
    with _GUARD:
        return _instance().cursor()


def attached_paths() -> list[Path]:
    """The files this process has attached right now (tests: nothing is left held)."""
    with _GUARD:
        return list(_FILES)
