"""Schema v6 -> current (issue 30): the papers' tables of schema 1 (`published_misprompt`,
`published_bbm`, `published_counts`) move into the one long `published` table (v7 makes it,
v8 moves them: each package declares its tables and how they move, the store names none), and each
benchmark package's view of the same name reads them back — every row, every value, every
column type and the row order as they were.

The v6 file is the schema-v3 store of tests/data/store_v3 (written by the v3 code, with its
published rows) brought to v6 by the v4, v5 and v6 steps alone, plus one row of NULLs per table
(a value the CSVs never hold, that must survive the move too).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest

from core.declared import published_tables
from core.registry import BENCHMARKS
from core.services.published import load_published
from core.store import MIGRATIONS, SCHEMA_VERSION, Store
from core.store.schema import _derive_records
from tests.test_migration_v4 import _v3_file

NULL_ROWS = {
    "published_misprompt": "INSERT INTO published_misprompt (source) VALUES ('x:T0')",
    "published_bbm": "INSERT INTO published_bbm (source) VALUES ('y:T0')",
    "published_counts": "INSERT INTO published_counts VALUES (NULL, NULL, NULL, NULL)",
}


def _v6_file(path: Path) -> Path:
    _v3_file(path)
    con = duckdb.connect(str(path))
    con.execute("BEGIN TRANSACTION")
    con.execute(MIGRATIONS[3])
    _derive_records(con)
    con.execute(MIGRATIONS[4])
    con.execute(MIGRATIONS[5])
    for sql in NULL_ROWS.values():
        con.execute(sql)
    con.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    con.execute("COMMIT")
    con.close()
    return path


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
        "AND column_name <> 'position' ORDER BY ordinal_position",
        [table],
    ).fetchall()


@pytest.fixture(scope="module")
def v6_path(tmp_path_factory) -> Path:
    return _v6_file(tmp_path_factory.mktemp("v6") / "v6.duckdb")


def test_every_published_row_reads_back_as_it_was(v6_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "copy.duckdb"
    path.write_bytes(v6_path.read_bytes())
    con = duckdb.connect(str(path))
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("6",)
    before = {}
    for table in NULL_ROWS:  # the three tables schema 1 made
        columns = _columns(con, table)
        names = ", ".join(name for name, _ in columns)
        rows = con.execute(f"SELECT {names} FROM {table} ORDER BY rowid").fetchall()
        before[table] = (columns, rows)
    con.close()
    assert len(before["published_misprompt"][1]) == 1429  # 1,428 of the dump and the NULL row
    assert len(before["published_bbm"][1]) == 253 and len(before["published_counts"][1]) == 15

    store = Store.open(path)
    assert store.scalar("SELECT value FROM meta WHERE key = 'schema_version'") == str(
        SCHEMA_VERSION
    )
    with store.connect() as con:
        kinds = dict(
            con.execute(
                "SELECT table_name, table_type FROM information_schema.tables "
                "WHERE table_name IN ('published', 'published_misprompt', 'published_bbm', "
                "'published_counts')"
            ).fetchall()
        )
        assert kinds == {
            "published": "BASE TABLE",
            "published_misprompt": "VIEW",
            "published_bbm": "VIEW",
            "published_counts": "VIEW",
        }
        for table, (columns, rows) in before.items():
            assert _columns(con, table) == columns, table
            names = ", ".join(name for name, _ in columns)
            after = con.execute(f"SELECT {names} FROM {table} ORDER BY position").fetchall()
            assert after == rows, table
        total = con.execute("SELECT count(*) FROM published").fetchone()
    assert total == (sum(len(rows) for _, rows in before.values()),)


def test_a_failed_move_leaves_the_v6_file_as_it_was(v6_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "copy.duckdb"
    path.write_bytes(v6_path.read_bytes())
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE published (x INTEGER)")  # the step's CREATE TABLE fails
    con.close()
    with pytest.raises(Exception, match="published"):
        Store.open(path).ensure_schema()
    con = duckdb.connect(str(path))
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("6",)
    assert con.execute("SELECT count(*) FROM published_misprompt").fetchone() == (1429,)
    con.close()


def test_loaded_tables_read_back_as_their_readers_made_them(store: Store) -> None:
    """`init` writes each declared table into `published`; its view gives the reader's frame
    back: same columns, same values, same order."""
    load_published(store)
    declared = published_tables()
    checked = 0
    for bench in BENCHMARKS.values():
        for table, reader in bench.paper.tables:
            if table not in declared:
                continue
            frame = reader()
            back = store.df(f"SELECT * EXCLUDE (position) FROM {table} ORDER BY position")
            assert list(back.columns) == list(frame.columns), table
            expected = frame.astype(object).where(frame.notna(), None)
            got = back.astype(object).where(back.notna(), None)
            pd.testing.assert_frame_equal(
                got.reset_index(drop=True), expected.reset_index(drop=True), check_dtype=False
            )
            checked += 1
    assert checked == 4


def test_a_process_not_told_the_benchmarks_keeps_the_views_and_cannot_derive(
    v6_path: Path, tmp_path: Path
) -> None:
    """A bare `from core.store import Store` script (no registry imported) opens a current
    store with its views as they are; asked to migrate stored v3 records it says what is
    missing instead of guessing."""
    import subprocess
    import sys

    path = tmp_path / "copy.duckdb"
    path.write_bytes(v6_path.read_bytes())
    Store.open(path).ensure_schema()  # migrated here, views made by the wired process
    code = (
        "import sys; from core.store import Store; "
        "s = Store.open(sys.argv[1], create=False); "
        "print(s.scalar('SELECT count(*) FROM published_misprompt'), "
        "'core.registry' in sys.modules)"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1429", "False"]
    v3 = _v3_file(tmp_path / "v3.duckdb")
    done = subprocess.run(
        [sys.executable, "-c", code, str(v3)], cwd=root, capture_output=True, text=True
    )
    assert done.returncode != 0 and "wire_store" in done.stderr
