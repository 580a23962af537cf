"""Schema v7 -> v8 (issue 30): PCBench's published table, which its package used to create as a
table of its own (`published_pcbench`, by its views SQL), moves into the one long `published`
table like the papers' tables of schema 1 did in v7, and the package's declared view of the same
name reads it back — every row, every value, every column type and the row order as they were;
the paper's metrics computed from it are the same.

The v7 file is the v6 file of tests/test_migration_v7.py brought to v7 by the v7 step, with the
table as the v7 package made it (its SQL kept here as history) holding the CSV's rows and one
row of NULLs (a value the CSV never holds, that must survive the move too).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest

from core.benchmarks.pcbench import metrics as pcm
from core.benchmarks.pcbench.published import read
from core.services.published import load_published
from core.store import MIGRATIONS, SCHEMA_VERSION, Store
from core.store.schema import adopt_published_tables
from tests.test_migration_v7 import _columns, _v6_file

TABLE = "published_pcbench"
# core/benchmarks/pcbench/record.py's PUBLISHED_TABLE at schema 7 (history, never edited)
V7_PCBENCH_TABLE = """
CREATE TABLE IF NOT EXISTS published_pcbench (
    source VARCHAR NOT NULL,
    paper VARCHAR,
    model VARCHAR,
    error_type VARCHAR,
    difficulty VARCHAR,
    variant VARCHAR,
    n INTEGER,
    critiqued INTEGER,
    rate DOUBLE,
    mean_len_tokens DOUBLE,
    note VARCHAR
);
"""


def _v7_file(path: Path) -> Path:
    _v6_file(path)
    con = duckdb.connect(str(path))
    con.execute("BEGIN TRANSACTION")
    con.execute(MIGRATIONS[6])
    adopt_published_tables(con)  # a file at v7 holds schema 1's three tables in `published`
    con.execute(V7_PCBENCH_TABLE)
    frame = read()
    con.register("frame", frame)
    con.execute(f"INSERT INTO {TABLE} SELECT * FROM frame")
    con.execute(f"INSERT INTO {TABLE} (source) VALUES ('pcbench:x')")
    con.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    con.execute("COMMIT")
    con.close()
    return path


@pytest.fixture(scope="module")
def v7_path(tmp_path_factory) -> Path:
    return _v7_file(tmp_path_factory.mktemp("v7") / "v7.duckdb")


def _copy(v7_path: Path, tmp_path: Path) -> Path:
    path = tmp_path / "copy.duckdb"
    path.write_bytes(v7_path.read_bytes())
    return path


def test_the_pcbench_table_reads_back_as_it_was(v7_path: Path, tmp_path: Path) -> None:
    path = _copy(v7_path, tmp_path)
    con = duckdb.connect(str(path))
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("7",)
    columns = _columns(con, TABLE)
    names = ", ".join(name for name, _ in columns)
    rows = con.execute(f"SELECT {names} FROM {TABLE} ORDER BY rowid").fetchall()
    others = con.execute("SELECT count(*) FROM published").fetchone()
    con.close()
    assert len(rows) == len(read()) + 1

    store = Store.open(path)
    assert store.scalar("SELECT value FROM meta WHERE key = 'schema_version'") == str(
        SCHEMA_VERSION
    )
    with store.connect() as con:
        kind = con.execute(
            "SELECT table_type FROM information_schema.tables WHERE table_name = ?", [TABLE]
        ).fetchone()
        assert kind == ("VIEW",)
        assert _columns(con, TABLE) == columns
        after = con.execute(f"SELECT {names} FROM {TABLE} ORDER BY position").fetchall()
        assert after == rows
        moved = con.execute(
            "SELECT count(*) FROM published WHERE table_name = ?", [TABLE]
        ).fetchone()
        total = con.execute("SELECT count(*) FROM published").fetchone()
        assert moved == (len(rows),)
    assert others is not None and total == (others[0] + len(rows),)


def test_the_papers_metrics_are_the_same_after_the_move(
    v7_path: Path, tmp_path: Path, initialised_store: Store
) -> None:
    """published_metrics over the moved rows (the NULL row removed) equals published_metrics
    over the rows `init` writes from the CSV today."""
    store = Store.open(_copy(v7_path, tmp_path))
    store.execute(f"DELETE FROM published WHERE table_name = '{TABLE}' AND model IS NULL")
    moved = pcm.published_metrics(store)
    loaded = pcm.published_metrics(initialised_store)
    assert len(moved) == len(read())
    pd.testing.assert_frame_equal(moved, loaded)


def test_a_failed_move_leaves_the_v7_file_as_it_was(v7_path: Path, tmp_path: Path) -> None:
    path = _copy(v7_path, tmp_path)
    con = duckdb.connect(str(path))
    con.execute("DROP TABLE published")  # the step's INSERT INTO published fails
    con.execute("CREATE TABLE published (x INTEGER)")
    con.close()
    with pytest.raises(Exception, match="published"):
        Store.open(path).ensure_schema()
    con = duckdb.connect(str(path))
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("7",)
    assert con.execute(f"SELECT count(*) FROM {TABLE}").fetchone() == (len(read()) + 1,)
    con.close()


def test_load_published_fills_the_view_from_the_csv(initialised_store: Store) -> None:
    """`init` writes PCBench's rows into `published`; it keeps no table of its own."""
    counts = load_published(initialised_store)
    assert counts[TABLE] == len(read())
    kind = initialised_store.scalar(
        "SELECT table_type FROM information_schema.tables WHERE table_name = ?", [TABLE]
    )
    assert kind == "VIEW"


def test_a_lake_at_schema_7_moves_the_table_when_next_opened(lake) -> None:
    """A DuckLake store has no migration steps: the process that next opens it converges it
    (core/store/lake.py), and moves the package's own table the same way, row for row."""
    import subprocess
    import sys

    from core.store import insert_frame

    store = Store.open(lake.url)

    def back_to_v7(con: duckdb.DuckDBPyConnection) -> None:
        con.execute(f"DROP VIEW {TABLE}")
        con.execute(V7_PCBENCH_TABLE)
        insert_frame(con, TABLE, read())
        con.execute("DELETE FROM meta WHERE key IN ('schema_version', 'benchmark_views')")
        con.execute("INSERT INTO meta VALUES ('schema_version', '7')")

    store.transaction(back_to_v7)
    columns = ", ".join(name for name, _ in _columns_of(store))
    before = store.rows(f"SELECT {columns} FROM {TABLE} ORDER BY rowid")
    assert len(before) == len(read())

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(  # another process opens the lake (EHW_DB): it converges it
        [sys.executable, "-m", "core", "runs"], cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert store.scalar("SELECT value FROM meta WHERE key = 'schema_version'") == str(
        SCHEMA_VERSION
    )
    kind = store.scalar(
        "SELECT table_type FROM information_schema.tables WHERE table_name = ? "
        "AND table_catalog = current_database()",
        [TABLE],
    )
    assert kind == "VIEW"
    assert store.rows(f"SELECT {columns} FROM {TABLE} ORDER BY position") == before


def _columns_of(store: Store) -> list[tuple[str, str]]:
    with store.connect() as con:
        return _columns(con, TABLE)
