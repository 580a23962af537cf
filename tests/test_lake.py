"""The team store: a DuckLake on a real PostgreSQL catalog and a real S3 server (tests/services.py).

What must hold on a lake as on a file: every command works, keys are kept by the writers (no
constraints), a change by another process shows (the version is the snapshot id), a view can
be pinned to a snapshot, and credentials never reach the store, its files or the output.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.store import DatabaseError, Store
from tests.core_cli import run_core

ROOT = Path(__file__).resolve().parent.parent


def test_init_import_and_read_back_on_a_lake(lake):
    result = run_core("init")
    assert result.returncode == 0, result.stderr
    assert lake.url in result.stdout and "items:misprompt-sample" in result.stdout
    store = Store.open(lake.url, create=False)
    assert store.is_lake
    assert store.scalar("SELECT count(*) FROM items WHERE item_set = 'misprompt-sample'") > 0
    assert store.scalar("SELECT count(*) FROM published_misprompt") > 0
    # the data lives in the bucket, the catalog in PostgreSQL
    assert any(key.endswith(".parquet") for key in lake.objects())
    assert "ducklake_snapshot" in lake.catalog_dump()


def test_the_version_is_the_snapshot_and_moves_with_every_write(lake):
    store = Store.open(lake.url)
    before = store.data_version()
    store.execute("INSERT INTO meta VALUES ('probe', '1')")
    assert store.data_version() > before
    # another handle (as another process would have) sees the same version
    assert Store.handle(lake.url).data_version() == store.data_version()


def test_a_lake_without_its_write_guard_gets_one_at_the_first_write(lake):
    """Every whole-lake write updates the guard's one row (core/store/lake.py); a lake made
    before it, or whose guard was dropped, gets it back (with one row) at the next write of
    any process, and keeps it."""
    store = Store.open(lake.url)
    store.execute("DROP TABLE write_guard")

    def write_in_a_process(key: str) -> None:
        code = (
            "from core.store import Store\n"
            f"Store.open({lake.url!r}).execute(\"INSERT INTO meta VALUES ('{key}', '1')\")\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]

    write_in_a_process("probe")
    assert store.scalar("SELECT count(*) FROM write_guard") == 1
    assert store.scalar("SELECT value FROM meta WHERE key = 'probe'") == "1"
    write_in_a_process("probe2")
    assert store.scalar("SELECT count(*) FROM write_guard") == 1


def test_a_store_pinned_to_a_snapshot_reads_the_past_and_refuses_writes(lake):
    store = Store.open(lake.url)
    store.execute("INSERT INTO meta VALUES ('probe', 'old')")
    then = store.data_version()
    store.transaction(
        lambda con: (
            con.execute("DELETE FROM meta WHERE key = 'probe'"),
            con.execute("INSERT INTO meta VALUES ('probe', 'new')"),
        )
    )
    pinned = Store.open(lake.url, create=False, as_of=then)
    assert pinned.scalar("SELECT value FROM meta WHERE key = 'probe'") == "old"
    assert store.scalar("SELECT value FROM meta WHERE key = 'probe'") == "new"
    assert pinned.data_version() == then and "snapshot" in pinned.display
    with pytest.raises(DatabaseError, match="read-only"):
        pinned.execute("INSERT INTO meta VALUES ('x', 'y')")


def test_as_of_on_a_file_is_refused(tmp_path):
    with pytest.raises(DatabaseError, match="needs a DuckLake"):
        Store.open(tmp_path / "f.duckdb", as_of=3)


def test_a_password_in_the_location_is_refused_and_never_echoed(tmp_path):
    url = "ducklake:postgres:dbname=evals host=db.lab user=ehw password=hunter2-secret"
    with pytest.raises(DatabaseError, match="PGPASSWORD") as caught:
        Store.open(url)
    assert "hunter2-secret" not in str(caught.value)
    result = run_core("init", "--db", url)
    assert result.returncode == 1 and "hunter2-secret" not in result.stdout + result.stderr


def test_a_lake_that_is_not_initialised_is_reported_to_readers(pg_cluster, s3_server, monkeypatch):
    """A reader (the app) on an empty catalog database says to run init, and leaves it empty:
    no catalog made with a data path nobody chose."""
    from tests.services import Lake

    monkeypatch.delenv("EHW_DATA_PATH", raising=False)
    empty = Lake(pg_cluster, s3_server, pg_cluster.new_database())
    with pytest.raises(DatabaseError, match="python -m core init"):
        Store.open(empty.url, create=False)
    tables = pg_cluster.psql(
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", empty.dbname
    )
    assert tables.strip() == "0"
    # and init without a data path says what it needs
    result = run_core("init", "--db", empty.url)
    assert result.returncode == 1 and "--data-path" in result.stderr


def test_credentials_never_reach_the_catalog_the_files_or_the_output(lake, s3_server):
    result = run_core("init")
    assert result.returncode == 0, result.stderr
    secret = s3_server.env()["AWS_SECRET_ACCESS_KEY"]
    assert secret not in result.stdout + result.stderr
    assert secret not in lake.catalog_dump()
    for key, data in lake.objects().items():
        assert secret.encode() not in data, key


def test_a_read_only_role_browses_the_lake_and_cannot_write(lake, pg_cluster):
    """The app's database role (docs/team-store.md): SELECT on the catalog, nothing else."""
    from core.benchmarks.misprompt.metrics import f1_and_diagnostics

    assert run_core("init").returncode == 0
    pg_cluster.psql(
        "DO $$ BEGIN CREATE ROLE ehw_reader LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; "
        "END $$;"
    )
    pg_cluster.psql(
        "GRANT USAGE ON SCHEMA public TO ehw_reader; "
        "GRANT SELECT ON ALL TABLES IN SCHEMA public TO ehw_reader;",
        lake.dbname,
    )
    reader_url = lake.url.replace("user=ehw", "user=ehw_reader")
    reader = Store.open(reader_url, create=False)
    rows, _ = f1_and_diagnostics(reader)  # the Mis-prompt page's data: no run yet, published only
    assert reader.scalar("SELECT count(*) FROM items") > 0
    with pytest.raises(DatabaseError):
        reader.execute("INSERT INTO meta VALUES ('x', 'y')")
    assert Store.open(lake.url).scalar("SELECT count(*) FROM meta WHERE key = 'x'") == 0
    del rows


def test_several_writer_processes_into_one_lake_lose_and_duplicate_nothing(lake, tmp_path):
    """Three runs from three processes (each its own working directory, as three machines)
    write into one lake at once, one of them SIGKILLed and resumed: every item exactly once
    (bench/bench_lake.py measures the same at 4 x 2,000 items with the app and a rescore)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from tests.echo_task import create_item_set
    from tests.fake_openai import FakeProcess

    root = Path(__file__).resolve().parent.parent
    store = Store.open(lake.url)
    runs = ["w0", "w1", "w2"]
    for run in runs:
        create_item_set(store, run, "echo", [f"{run} prompt {i}" for i in range(60)])

    def writer(run: str) -> subprocess.Popen[str]:
        folder = tmp_path / run
        folder.mkdir(exist_ok=True)
        return subprocess.Popen(
            [sys.executable, "-m", "tests.echo_task", "--db", lake.url, "--items", run]
            + ["--base-url", server.url, "--model", "fake-model", "--run-name", run, "--quiet"]
            + ["--concurrency", "4"],
            cwd=folder,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    with FakeProcess({"latency": 0.03}) as server:
        procs = {run: writer(run) for run in runs}
        deadline = time.monotonic() + 120
        while (store.scalar("SELECT count(*) FROM responses WHERE run_id = 'w0'") or 0) < 10:
            assert procs["w0"].poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        procs["w0"].send_signal(signal.SIGKILL)
        procs["w0"].communicate(timeout=30)
        procs["w0"] = writer("w0")
        for run, proc in procs.items():
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, (run, err)
    for run in runs:
        rows = store.rows(
            "SELECT count(*), count(DISTINCT item_id) FROM responses WHERE run_id = ? "
            "AND status = 'ok'",
            [run],
        )[0]
        results = store.rows(
            "SELECT count(*), count(DISTINCT item_id) FROM results WHERE run_id = ? "
            "AND status = 'ok'",
            [run],
        )[0]
        assert rows == results == (60, 60), (run, rows, results)


def test_the_lake_extensions_load_from_their_packages_quickly_and_nothing_is_downloaded():
    """A run's start-up opens a lake: DuckDB's signature check of the three extension files
    (~100 MB) cost ~0.65 s of CPU per process (four shards starting at once paid it four
    times over); the files are the pinned pip packages', loaded as they are."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import json, time, duckdb\n"
        "from core.store import lake\n"
        "started = time.process_time()\n"
        "con = lake._instance()\n"
        "cpu = time.process_time() - started\n"
        'loaded = con.execute("SELECT extension_name FROM duckdb_extensions() WHERE loaded '
        "AND install_path <> '(BUILT-IN)'\").fetchall()\n"
        "auto = con.execute(\"SELECT current_setting('autoinstall_known_extensions')\")"
        ".fetchone()[0]\n"
        "print(json.dumps({'cpu': cpu, 'loaded': sorted(r[0] for r in loaded), 'auto': auto}))\n"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    import json

    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["loaded"] == sorted(["ducklake", "postgres_scanner", "httpfs"])
    assert found["auto"] is False  # a missing extension is an error, never a download
    assert found["cpu"] < 0.25, found  # measured 0.01-0.03 s; with the check 0.6-0.8 s
