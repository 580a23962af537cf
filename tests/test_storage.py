"""Schema creation, migration, refusal of newer/corrupt files, lock handling, atomic writes."""

from __future__ import annotations

import subprocess
import sys
import time

import duckdb
import pandas as pd
import pytest

from core import store as storage
from core.store import (
    SCHEMA_VERSION,
    DatabaseCorrupt,
    DatabaseLocked,
    DatabaseTooNew,
    Store,
    resolve_db_path,
)


def test_new_file_gets_current_schema(store):
    with store.connect() as con:
        assert storage.schema_version(con) == SCHEMA_VERSION
        tables = {
            r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
    for t in [
        "items",
        "runs",
        "responses",
        "results",
        "human_labels",
        "published_misprompt",
        "published_bbm",
        "item_sets",
        "calls",
        "call_cache",
        "audit_samples",
    ]:
        assert t in tables


def test_older_file_is_migrated_on_open(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '0')")
    con.close()
    s = Store.open(path)
    with s.connect() as con:
        assert storage.schema_version(con) == SCHEMA_VERSION
        assert con.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 0


def test_v1_file_is_migrated_to_v2_and_keeps_its_rows(tmp_path):
    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path))
    con.execute(storage.MIGRATIONS[0])
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("INSERT INTO runs (run_id, benchmark, status) VALUES ('r1', 'misprompt', 'done')")
    con.execute(
        "INSERT INTO verdicts (run_id, item_id, variant, status, detection) "
        "VALUES ('r1', 'i1', 'zero-shot', 'ok', true)"
    )
    has_counts = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'run_counts'"
    ).fetchall()[0][0]
    con.close()
    assert has_counts == 0
    s = Store.open(path)
    with s.connect() as con:
        assert storage.schema_version(con) == SCHEMA_VERSION >= 2
        assert con.execute("SELECT run_id, status FROM runs").fetchall() == [("r1", "done")]
        assert con.execute("SELECT item_id, detection FROM misprompt_verdicts").fetchall() == [
            ("i1", True)
        ]
        cols = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'run_counts' "
                "ORDER BY ordinal_position"
            ).fetchall()
        ]
        assert con.execute("SELECT count(*) FROM run_counts").fetchall()[0][0] == 0
    assert cols[:7] == [
        "source",
        "model",
        "setting",
        "evaluator",
        "primary_category",
        "secondary_category",
        "is_error",
    ]
    # schema 4: a benchmark's counts (pos_detection, known_guidance, n_inconsistent...) are one
    # JSON object per row
    assert {
        "counts",
        "n",
        "status",
        "fingerprint",
        "computed_at",
    } <= set(cols)


def test_newer_file_is_refused_with_clear_message(tmp_path):
    path = tmp_path / "new.duckdb"
    Store.open(path)
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    con.close()
    with pytest.raises(DatabaseTooNew, match="schema version 999"):
        Store.open(path)


def test_corrupt_file_is_reported(tmp_path):
    path = tmp_path / "bad.duckdb"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(DatabaseCorrupt, match="could not be opened"):
        Store.open(path)


def test_locked_file_is_reported_after_timeout(tmp_path):
    path = tmp_path / "locked.duckdb"
    Store.open(path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb,time; c=duckdb.connect({str(path)!r}); print('ready', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "ready"
        s = Store(path=path, lock_timeout=0.3, _migrated=True)
        t0 = time.monotonic()
        with pytest.raises(DatabaseLocked, match="locked by another process"):
            s.df("SELECT 1")
        assert time.monotonic() - t0 >= 0.3
    finally:
        holder.kill()
        holder.wait()


def test_waits_for_a_short_lock(tmp_path):
    path = tmp_path / "short.duckdb"
    Store.open(path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb,time; c=duckdb.connect({str(path)!r}); print('ready', flush=True); time.sleep(0.5)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "ready"
    s = Store(path=path, lock_timeout=20, _migrated=True)
    assert s.scalar("SELECT 42") == 42
    holder.wait()


def _other_process_writes(path) -> subprocess.CompletedProcess:
    """Another process (as a CLI run would) opens the file for writing and adds a row."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            f"import duckdb; c = duckdb.connect({str(path)!r}); "
            "c.execute(\"INSERT INTO item_sets (name, benchmark) VALUES ('other', 'x')\")",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_file_is_let_go_after_each_operation_and_shared_within_a_session(store, monkeypatch):
    """The file is attached to the process's DuckDB instance only while in use: after a read
    or a write nothing holds it and another process can write at once; inside a session every
    operation shares one attachment (one alias) and the lock is held; the same file named
    relatively is the same attachment."""
    from core.store import files

    assert store.scalar("SELECT count(*) FROM item_sets") == 0
    store.execute("INSERT INTO item_sets (name, benchmark) VALUES ('mine', 'x')")
    assert files.attached_paths() == []
    done = _other_process_writes(store.path)
    assert done.returncode == 0, done.stderr
    monkeypatch.chdir(store.path.parent)
    relative = Store(path=type(store.path)(store.path.name), _migrated=True)
    with store.session():
        aliases = {store.scalar("SELECT current_database()")}
        aliases.add(relative.scalar("SELECT current_database()"))
        assert len(aliases) == 1 and files.attached_paths() == [store.path]
        held = _other_process_writes(store.path)
        assert held.returncode != 0 and "lock" in held.stderr.lower()
    assert files.attached_paths() == []
    assert sorted(r[0] for r in store.rows("SELECT name FROM item_sets")) == ["mine", "other"]


def test_transaction_is_all_or_nothing(store):
    frame = pd.DataFrame({"name": ["a"], "benchmark": ["misprompt"]})
    store.insert_df("item_sets", frame)

    def fails(con):
        con.execute("INSERT INTO item_sets (name, benchmark) VALUES ('b', 'misprompt')")
        raise ValueError("boom")

    with pytest.raises(ValueError):
        store.transaction(fails)
    assert store.scalar("SELECT count(*) FROM item_sets") == 1


def test_db_path_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("EHW_DB", str(tmp_path / "env.duckdb"))
    assert resolve_db_path(None) == tmp_path / "env.duckdb"
    assert resolve_db_path(tmp_path / "flag.duckdb") == tmp_path / "flag.duckdb"
    monkeypatch.delenv("EHW_DB")
    assert resolve_db_path(None) == storage.DEFAULT_DB


def test_the_lock_holds_through_the_first_write_and_its_block_check(store):
    """A Store's first write checks every block's checksum by reading the file beside DuckDB
    (core/store/blocks.py). Closing that read handle while attached dropped DuckDB's POSIX
    lock, so another process attached and wrote at the same time, and one of the two
    checkpoints overwrote the other's commit (a label lost in tests/test_audit_concurrency.py).
    Here the other process tries to write from inside our first write's transaction."""
    from core.store import files

    fresh = Store(path=store.path, _migrated=True)  # its blocks not yet checked
    seen: list[subprocess.CompletedProcess] = []

    def write(con):
        con.execute("INSERT INTO item_sets (name, benchmark) VALUES ('mine', 'x')")
        seen.append(_other_process_writes(store.path))  # the block check has run by now

    fresh.transaction(write)
    assert fresh._blocks_checked
    assert seen[0].returncode != 0 and "lock" in seen[0].stderr.lower(), seen[0].stderr
    assert files.attached_paths() == []
    assert [r[0] for r in store.rows("SELECT name FROM item_sets")] == ["mine"]
    after = _other_process_writes(store.path)  # and let go once the write is done
    assert after.returncode == 0, after.stderr
