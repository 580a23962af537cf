"""`python -m core store check [--repair]` on a file and on a lake: keys held twice, orphan rows,
unreadable cache rows and (lake) files the catalog names that the bucket lost; `--repair` fixes
what is safe and leaves the rest; `store copy` says what is wrong instead of a constraint error."""

from __future__ import annotations

import urllib.request

from core.engine.results import Response, Result, ResultBatch, save_batch
from core.services.store_check import check_store
from core.store import Store
from tests.core_cli import run_core


def _one_run(store: Store, run_id: str = "r1", n: int = 3) -> None:
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status) VALUES (?, 'misprompt', 'done')", [run_id]
    )
    batch = ResultBatch()
    for i in range(n):
        key = (run_id, f"i{i}", "v")
        batch.add_response(key, Response(text=f"answer {i}"))
        batch.add_result(key, Result(correct=True))
    save_batch(store, batch)


def _kinds(store: Store) -> set[tuple[str, str]]:
    return {(f.kind, f.table) for f in check_store(store)}


def test_a_clean_store_is_clean(backend):
    store = Store.open(backend)
    _one_run(store)
    assert check_store(store) == []
    done = run_core("store", "check")
    assert done.returncode == 0, done.stderr
    assert "no problems found" in done.stdout


def test_orphans_are_reported_and_unreadable_cache_rows_repaired(backend):
    store = Store.open(backend)
    _one_run(store)
    store.transaction(
        lambda con: (
            # a result whose response is gone, a response whose run is gone
            con.execute("DELETE FROM responses WHERE item_id = 'i0'"),
            con.execute(
                "INSERT INTO responses (run_id, item_id, variant, status) "
                "VALUES ('gone', 'x', 'v', 'ok')"
            ),
            con.execute(
                "INSERT INTO human_labels (run_id, item_id, variant, annotator, label, value) "
                "VALUES ('r1', 'nope', 'v', 'ann', 'detection', true)"
            ),
            con.execute(
                "INSERT INTO audit_samples (audit, position, run_id, item_id, variant) "
                "VALUES ('a', 0, 'r1', 'nope', 'v')"
            ),
            con.execute("INSERT INTO items (item_set, item_id, benchmark) VALUES ('no', '1', 'b')"),
            con.execute("INSERT INTO call_cache (key, response) VALUES ('k', NULL)"),
        )
    )
    found = {(f.kind, f.table): f for f in check_store(store)}
    assert set(found) == {
        ("orphan", "results"),
        ("orphan", "responses"),
        ("orphan", "human_labels"),
        ("orphan", "audit_samples"),
        ("orphan", "items"),
        ("unreadable", "call_cache"),
    }
    assert found[("orphan", "results")].examples == ["r1/default/i0/v/1"]
    assert found[("orphan", "responses")].examples == ["gone/x/v/1"]
    done = run_core("store", "check")
    assert done.returncode == 1
    assert "results: 1 row(s) without their response [left]" in done.stdout
    assert "--repair" in done.stdout
    done = run_core("store", "check", "--repair")
    assert done.returncode == 1  # the orphans are left for a person
    assert "call_cache: 1 row(s) with no key or no answer" in done.stdout
    assert "[repaired]" in done.stdout
    assert store.scalar("SELECT count(*) FROM call_cache") == 0
    assert ("unreadable", "call_cache") not in _kinds(store)
    assert store.scalar("SELECT count(*) FROM results") == 3  # nothing else touched


def test_duplicate_keys_on_a_lake_are_found_repaired_and_stop_a_copy(lake, tmp_path):
    """Keys held twice, as a lake written before the write guard (or by another program) may
    hold them: identical ones collapse, cache ones keep the first answer, differing ones stay."""
    store = Store.open(lake.url)
    _one_run(store)

    def dup(con):
        con.execute("INSERT INTO responses SELECT * FROM responses WHERE item_id = 'i1'")
        con.execute(
            "INSERT INTO results SELECT * REPLACE ('other' AS answer) FROM results "
            "WHERE item_id = 'i2'"
        )
        con.execute("INSERT INTO call_cache (key, response) VALUES ('k1', '\"a\"')")
        con.execute("INSERT INTO call_cache (key, response) VALUES ('k1', '\"b\"')")
        con.execute("INSERT INTO call_cache (key, response) VALUES ('k2', '\"c\"')")
        con.execute("INSERT INTO call_cache (key, response) VALUES ('k2', '\"c\"')")

    store.transaction(dup)
    found = {(f.kind, f.table): f for f in check_store(store)}
    assert set(found) == {
        ("duplicate-identical", "responses"),
        ("duplicate-differing", "results"),
        ("duplicate-identical", "call_cache"),
        ("duplicate-differing", "call_cache"),
    }
    assert found[("duplicate-identical", "responses")].examples == ["r1/i1/v/1"]
    assert not found[("duplicate-differing", "results")].repairable
    assert found[("duplicate-differing", "call_cache")].repairable
    # a copy says what is wrong, writes nothing
    backup = tmp_path / "backup.duckdb"
    done = run_core("store", "copy", "--from", lake.url, "--to", str(backup))
    assert done.returncode == 1
    assert "has problems a copy cannot carry over" in done.stderr
    assert "results: 1 extra row(s) of 1 key(s)" in done.stderr
    assert "ConstraintException" not in done.stderr and not backup.exists()
    # repair: the safe ones
    done = run_core("store", "check", "--repair")
    assert done.returncode == 1, done.stdout
    assert store.scalar("SELECT count(*) FROM responses") == 3
    assert store.rows("SELECT key, response FROM call_cache ORDER BY key") == [
        ("k1", '"a"'),
        ("k2", '"c"'),
    ]
    assert store.scalar("SELECT count(*) FROM results WHERE item_id = 'i2'") == 2  # left
    # a person chooses; then the copy goes through
    store.execute("DELETE FROM results WHERE item_id = 'i2' AND answer = 'other'")
    assert check_store(store) == []
    done = run_core("store", "copy", "--from", lake.url, "--to", str(backup))
    assert done.returncode == 0, done.stderr
    assert Store.open(backup, create=False).scalar("SELECT count(*) FROM results") == 3


def test_a_data_file_the_bucket_lost_is_reported_and_stops_a_copy(
    pg_cluster, s3_server, _lake_template, monkeypatch, tmp_path
):
    monkeypatch.setenv("EHW_LAKE_INLINE", "0")  # every insert a Parquet file
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    made = _lake_template.copy()
    monkeypatch.setenv("EHW_DB", made.url)
    try:
        store = Store.open(made.url)
        _one_run(store)
        assert check_store(store) == []
        prefix = made.prefix or made.dbname
        lost = sorted(k for k in made.objects() if "/main/results/" in k or "results" in k)
        assert lost, sorted(made.objects())
        # every results file goes: one alone may be a file no current snapshot names any more
        # (a flush that rewrote it), whose loss the catalog rightly does not miss
        for key in lost:
            request = urllib.request.Request(
                f"{s3_server.endpoint}/{made.bucket}/{key}", method="DELETE"
            )
            urllib.request.urlopen(request, timeout=10).read()
        found = check_store(store)
        assert [(f.kind, f.table) for f in found] == [("missing-file", "results")]
        names = {k.split("/")[-1] for k in lost}
        assert any(found[0].examples[0].endswith(n) for n in names)
        assert prefix
        done = run_core("store", "check")
        assert done.returncode == 1 and "the storage lacks" in done.stdout
        backup = tmp_path / "backup.duckdb"
        done = run_core("store", "copy", "--from", made.url, "--to", str(backup))
        assert done.returncode == 1 and "the storage lacks" in done.stderr
        assert not backup.exists()
    finally:
        made.release()
