"""A file's import staged in a DuckDB file of its own, then moved into the store.

Why: writing a 100,000-sample log in one transaction of the store kept every uncommitted row
in the process (peak RSS grew with the log: ~0.9 GB at 100,000 samples; docs/performance.md).
Here each batch is committed into the stage (a temporary DuckDB file under a small memory
limit: its rows go to disk), and core.sources.service then moves the staged rows into the
store in committed chunks (INSERT … SELECT from the attached stage) under a marker, writing the
`runs` row last. So:

- all or nothing per file: a bad sample part-way fails the staging, and the store was never
  touched; a failure while moving deletes what the move committed;
- a killed import (SIGKILL) leaves a stale stage folder in the temp directory (swept by the
  next import) and, if it died while moving, rows of no visible run under its marker, which the
  next import into the store deletes (service.sweep_stale_imports);
- the store is not held open while the log is read and staged (other processes can use it).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from core.engine.results import RESPONSE_SCHEMA, RESULT_SCHEMA
from core.engine.runner.checks import pid_alive

PREFIX = "ehw-import-"
_STALE = re.compile(rf"^{PREFIX}(\d+)-")
ITEM_SCHEMA = pa.schema(
    [
        ("item_set", pa.string()),
        ("item_id", pa.string()),
        ("benchmark", pa.string()),
        ("prompt", pa.string()),
        ("gold", pa.string()),
        ("payload", pa.string()),
    ]
)
TABLES = {"responses": RESPONSE_SCHEMA, "results": RESULT_SCHEMA, "items": ITEM_SCHEMA}


def sweep(folder: Path | None = None) -> list[Path]:
    """Remove the stage folders of imports whose process is gone (killed mid-way)."""
    folder = Path(folder or tempfile.gettempdir())
    gone: list[Path] = []
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            m = _STALE.match(entry.name)
            if m and entry.is_dir() and not pid_alive(int(m.group(1))):
                shutil.rmtree(entry, ignore_errors=True)
                gone.append(entry)
    return gone


class Stage:
    """The staged rows of one file's import (see the module docstring)."""

    def __init__(self, memory_limit: str) -> None:
        sweep()
        self.folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        self.path = self.folder / "stage.duckdb"
        self.alias = f"ehw_stage_{os.getpid()}_{self.folder.name.rsplit('-', 1)[-1]}"
        self.alias = re.sub(r"[^A-Za-z0-9_]", "_", self.alias)
        self.sizes: dict[str, int] = {}
        self.con: duckdb.DuckDBPyConnection | None = duckdb.connect(
            str(self.path), config={"memory_limit": memory_limit, "threads": 1}
        )
        for name, schema in TABLES.items():
            self.con.register("_empty", schema.empty_table())
            self.con.execute(f"CREATE TABLE {name} AS SELECT * FROM _empty")
            self.con.unregister("_empty")

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The stage's own connection (autocommit: each write is committed there)."""
        assert self.con is not None, "the stage is closed"
        return self.con

    def add_items(self, rows: list[tuple[Any, ...]]) -> None:
        """Items of a new item set (ITEM_SCHEMA's columns), committed in the stage."""
        assert self.con is not None
        if not rows:
            return
        columns = [list(c) for c in zip(*rows)]
        table = pa.table(dict(zip(ITEM_SCHEMA.names, columns)), schema=ITEM_SCHEMA)
        self.con.register("_items", table)
        self.con.execute("INSERT INTO items SELECT * FROM _items")
        self.con.unregister("_items")

    def twice(self, run_id: str) -> tuple[str, int] | None:
        """(item id, epoch) of a unit the run holds twice in the stage, if any."""
        assert self.con is not None
        row = self.con.execute(
            "SELECT item_id, epoch FROM responses WHERE run_id = ? GROUP BY item_id, variant, "
            "epoch HAVING count(*) > 1 ORDER BY item_id, epoch LIMIT 1",
            [run_id],
        ).fetchone()
        return (str(row[0]), int(row[1])) if row else None

    def count(self, sql: str, params: list[Any] | None = None) -> int:
        assert self.con is not None
        row = self.con.execute(sql, params or []).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def close(self) -> None:
        """Checkpointed and closed: the store's connection attaches the file read-only.
        `sizes` keeps each table's row count (what the move goes through)."""
        if self.con is not None:
            self.sizes = {t: self.count(f"SELECT count(*) FROM {t}") for t in TABLES}
            self.con.execute("CHECKPOINT")
            self.con.close()
            self.con = None

    def remove(self) -> None:
        if self.con is not None:
            with contextlib.suppress(duckdb.Error):
                self.con.close()
            self.con = None
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def staged(memory_limit: str) -> Iterator[Stage]:
    stage = Stage(memory_limit)
    try:
        yield stage
    finally:
        stage.remove()
