"""Schema v4 -> v5 (repeats: `epoch` in the keys of `responses` and `results`): every stored row
is kept as it was and becomes epoch 1 of its unit, a second epoch of a unit can be stored beside
it, and a failed migration leaves the v4 file as it was.

The v4 file is the schema-v3 store of tests/data/store_v3 brought to v4 by the v4 step alone
(the numbers it gives after v5 are checked against what the v3 code printed in
tests/test_migration_v4.py, which now migrates through v5).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from core.store import MIGRATIONS, SCHEMA_VERSION, DatabaseError, Store
from core.store.schema import _derive_records
from tests.test_migration_v4 import _v3_file

TABLES = {
    "responses": "run_id, item_id, variant, status, messages::VARCHAR, response, error, "
    "attempts, prompt_tokens, completion_tokens, latency_ms, cost_usd, cached, "
    "scores::VARCHAR, created_at",
    "results": "run_id, judging, item_id, variant, judge_model, status, answer, correct, score, "
    "labels::VARCHAR, explanation, metadata::VARCHAR, raw, parse_note, error, prompt_tokens, "
    "completion_tokens, latency_ms, cost_usd, created_at",
    "calls": "run_id, item_id, variant, role, attempt, status, http_status, error, latency_ms, "
    "prompt_tokens, completion_tokens, cost_usd, cached, created_at",
}


def _v4_file(path: Path) -> Path:
    """The v3 dump brought to schema 4 by the v4 step only."""
    _v3_file(path)
    con = duckdb.connect(str(path))
    con.execute("BEGIN TRANSACTION")
    con.execute(MIGRATIONS[3])
    _derive_records(con)
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    con.execute("COMMIT")
    con.close()
    return path


def _snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {
        table: sorted(con.execute(f"SELECT {cols} FROM {table}").fetchall(), key=repr)
        for table, cols in TABLES.items()
    }


@pytest.fixture(scope="module")
def v4_path(tmp_path_factory) -> Path:
    return _v4_file(tmp_path_factory.mktemp("v4") / "v4.duckdb")


def test_every_row_is_kept_as_epoch_1(v4_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "copy.duckdb"
    path.write_bytes(v4_path.read_bytes())
    con = duckdb.connect(str(path))
    before = _snapshot(con)
    con.close()
    assert before["responses"] and before["results"] and before["calls"]
    store = Store.open(path)
    assert store.scalar("SELECT value FROM meta WHERE key = 'schema_version'") == str(
        SCHEMA_VERSION
    )
    with store.connect() as con:
        assert _snapshot(con) == before
    for table in TABLES:
        assert store.rows(f"SELECT DISTINCT epoch FROM {table}") == [(1,)]
    # the benchmarks' views read the new column
    assert store.scalar("SELECT count(*) FROM misprompt_verdicts WHERE epoch = 1") > 0


def test_a_second_epoch_of_a_unit_is_stored_beside_the_first(v4_path: Path, tmp_path) -> None:
    path = tmp_path / "copy.duckdb"
    path.write_bytes(v4_path.read_bytes())
    store = Store.open(path)
    run_id, item_id, variant = store.rows("SELECT run_id, item_id, variant FROM results LIMIT 1")[0]
    key = [run_id, item_id, variant]
    for table in ("responses", "results"):
        copy = f"INSERT INTO {table} SELECT * REPLACE (2 AS epoch) FROM {table} " + (
            "WHERE run_id = ? AND item_id = ? AND variant = ? AND epoch = 1"
        )
        store.execute(copy, key)
        n = store.scalar(
            f"SELECT count(*) FROM {table} WHERE run_id = ? AND item_id = ? AND variant = ?", key
        )
        assert n >= 2
        with pytest.raises(duckdb.ConstraintException):  # one row per (unit, epoch)
            store.execute(copy.replace("2 AS epoch", "1 AS epoch"), key)


def test_a_failed_v5_step_leaves_the_v4_file_as_it_was(v4_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "copy.duckdb"
    path.write_bytes(v4_path.read_bytes())
    con = duckdb.connect(str(path))
    con.execute("DROP TABLE calls")  # the v5 step alters it: it must fail
    before = {
        t: con.execute(f"SELECT count(*) FROM {t}").fetchone() for t in TABLES if t != "calls"
    }
    con.close()
    with pytest.raises((duckdb.Error, DatabaseError)):
        Store.open(path).ensure_schema()
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
    columns = {r[0] for r in con.execute("DESCRIBE responses").fetchall()}
    assert "epoch" not in columns
    assert {t: con.execute(f"SELECT count(*) FROM {t}").fetchone() for t in before} == before
    con.close()
