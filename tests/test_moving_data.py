"""Moving data between stores (issue 17, point 4): `store copy`, `export --bundle`, `import run`.

Every store here is named by a URL from the `store_url` fixture (a new, empty store per call):
today a DuckDB file; the team-store backend adds its URLs by parametrising that one fixture.
Runs are made by the CLI against the scripted server (tests/fake_openai.py). Each refusal and
failure is checked to leave the destination row-for-row as it was.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.benchmarks.misprompt import items as mi
from core.benchmarks.misprompt import metrics as mm
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import bundle as bundle_mod
from core.services import store_copy
from core.store import Store
from core.store.lake import LAKE_ONLY_TABLES
from tests.core_cli import run_core
from tests.fake_openai import FakeOpenAI
from tests.services import Lake
from tests.test_misprompt_run import Script, _subset

ROOT = Path(__file__).resolve().parent.parent
StoreUrl = Callable[[str], str]


@pytest.fixture(params=["file", "lake"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUrl]:
    """store_url(name) -> the URL of a new, empty store: a DuckDB file under tmp_path, or a
    DuckLake (its own catalog database) on the test's PostgreSQL and S3 servers."""
    if request.param == "file":

        def make(name: str) -> str:
            return str(tmp_path / f"{name}.duckdb")

        yield make
        return
    template: Lake = request.getfixturevalue("_lake_template")
    monkeypatch = request.getfixturevalue("monkeypatch")
    for key, value in request.getfixturevalue("s3_server").env().items():
        monkeypatch.setenv(key, value)  # as on a lab machine; each lake keeps its data path
    monkeypatch.delenv("EHW_DATA_PATH", raising=False)
    made: dict[str, Lake] = {}

    def make_lake(name: str) -> str:
        if name not in made:
            made[name] = template.copy()
        return made[name].url

    yield make_lake
    for lake in made.values():
        lake.release()


def snapshot(url: str) -> dict[str, tuple[int, int]]:
    """Every table's row count and an order-free hash of its rows: 'row-for-row unchanged' is
    equality of two snapshots (one query over every table, on any backend). On a lake, DuckLake
    1.5.5 looks an empty table's statistics up in the catalog again for every column, in two
    optimizer passes (duckdb/ducklake#1313: ~900 catalog queries for an empty store); this query
    joins nothing, so those two passes are off while it runs (76 catalog queries)."""
    store = Store.open(url, create=False)
    with store.connect() as con:
        sql = " UNION ALL ".join(
            f"SELECT '{t}', count(*), sum(hash(t)::HUGEINT) FROM {t} t"
            for t in store_copy.base_tables(con)
        )
        con.execute("SET disabled_optimizers = 'join_order,statistics_propagation'")
        try:
            rows = con.execute(sql).fetchall()
        finally:
            con.execute("RESET disabled_optimizers")
    return {table: (n, hashed) for table, n, hashed in rows}


def make_run(url: str, run: str = "r1", *args: str, items: str = "small") -> None:
    """A judged Mis-prompt run `run` over item set `items` (7 items), made by the CLI."""
    store = Store.open(url)
    data, rows = _subset(4, 3)
    if not store.scalar("SELECT count(*) FROM item_sets WHERE name = ?", [items]):
        mi.import_bytes(store, data, "small.csv", items)
    with FakeOpenAI(responder=Script(rows).respond) as server:
        done = run_mp(url, server.url, "--items", items, "--run-name", run, *args)
    assert done.returncode == 0, done.stderr


def run_mp(url: str, server: str, *args: str):
    """`run misprompt` into the store at `url` against the scripted server (model fake-model)."""
    return run_core(
        "run", "misprompt", "--db", url, "--base-url", server, "--model", "fake-model", "--quiet",
        *args,
    )  # fmt: skip


def rejudge(url: str, run: str, name: str) -> None:
    """A second judging of `run` whose labels are all false (so its numbers differ)."""
    reply = json.dumps({k: {"rationale": "no", "value": False} for k in JUDGE_LABELS})
    with FakeOpenAI(responder=lambda body: reply) as judge:
        done = run_core(
            "rescore", "--source", run, "--judge-base-url", judge.url, "--judge-model", "j2",
            "--as", name, "--quiet", "--db", url,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr


def label(url: str, run: str) -> None:
    """One audit label of the run by a person (as the audit page saves it)."""
    store = Store.open(url)
    item = store.scalar("SELECT min(item_id) FROM responses WHERE run_id = ?", [run])
    store.execute(
        "INSERT INTO human_labels (run_id, item_id, variant, annotator, label, value, "
        "judge_value) VALUES (?, ?, 'zero-shot', 'ann', 'detection', false, true)",
        [run, item],
    )


def metrics(url: str, run: str, *args: str) -> str:
    done = run_core("metrics", "misprompt", "--source", run, "--db", url, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def export_bundle(url: str, run: str, folder: Path) -> None:
    done = run_core("export", "--source", run, "--bundle", str(folder), "--db", url)
    assert done.returncode == 0, done.stderr


def import_run(url: str, folder: Path):
    return run_core("import", "run", str(folder), "--db", url)


@pytest.fixture(scope="module")
def _template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Made once per module by the CLI: `init` (published tables, samples), run r1 over item
    set 'small' (judged, re-judged as j2, one audit label, its counts cached by `metrics`) and
    run r2 over the same items."""
    path = tmp_path_factory.mktemp("moving") / "template.duckdb"
    assert run_core("init", "--db", str(path)).returncode == 0
    make_run(str(path))
    rejudge(str(path), "r1", "j2")
    label(str(path), "r1")
    make_run(str(path), "r2")
    mm.f1_and_diagnostics(Store.open(path))  # the page's load: caches the runs' counts
    return path


@pytest.fixture(scope="module")
def _made_lake(_template: Path, request: pytest.FixtureRequest) -> Lake:
    """The template's data in a lake, put there by `store copy` once per module (a copy into a
    lake is a few seconds of catalog and S3 round trips); each lake test's `made` is a copy
    of its catalog (CREATE DATABASE … TEMPLATE), as the empty lakes are."""
    from core.store.lake import forget
    from core.store.location import parse_location

    empty: Lake = request.getfixturevalue("_lake_template")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in request.getfixturevalue("s3_server").env().items():
            mp.setenv(key, value)
        mp.delenv("EHW_DATA_PATH", raising=False)  # the copied catalog keeps its own
        filled = empty.copy()
        store_copy.copy_store(_template, filled.url)
        forget(parse_location(filled.url))  # no connection left: the catalog can be copied
    return filled


@pytest.fixture
def made(_template: Path, store_url: StoreUrl, request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a store holding the template's data (a copy of the file; on a lake, a copy
    of the catalog `store copy` filled once per module, see _made_lake)."""
    if request.node.callspec.params["store_url"] == "file":
        url = store_url("made")
        shutil.copyfile(_template, url)
        yield url
        return
    lake = request.getfixturevalue("_made_lake").copy()
    yield str(lake.url)
    lake.release()


@pytest.fixture(scope="module")
def _bundle(_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bundles") / "r1"
    export_bundle(str(_template), "r1", folder)
    return folder


@pytest.fixture
def r1_bundle(_bundle: Path, tmp_path: Path) -> Path:
    """A bundle of the template's run r1, the test's own copy."""
    return Path(shutil.copytree(_bundle, tmp_path / "r1-bundle"))


# -- store copy --------------------------------------------------------------------------------


def test_store_copy_copies_every_table_and_prints_the_counts(
    made: str, store_url: StoreUrl
) -> None:
    src, dst = made, store_url("dst")
    before = snapshot(src)
    done = run_core("store", "copy", "--from", src, "--to", dst)
    assert done.returncode == 0, done.stderr
    assert snapshot(src) == before  # the source is only read
    copied = snapshot(dst)
    assert set(copied) == set(before)
    for table in before:
        if table != "meta":
            assert copied[table] == before[table], table
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["table", "rows", "source", "rows", "destination", "ok"]
    shown = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert set(shown) == set(before) - {"meta", *LAKE_ONLY_TABLES}  # the lake's write guard
    for table, (n_src, n_dst, ok) in shown.items():
        n = before[table][0]
        assert (n_src, n_dst, ok) == (f"{n:,}", f"{n:,}", "yes"), table
    assert all(before[t][0] for t in ("runs", "items", "results", "calls", "run_counts"))
    assert all(before[t][0] for t in ("judgings", "human_labels", "published"))


def test_store_copy_refuses_a_store_that_holds_data(
    made: str, store_url: StoreUrl, r1_bundle: Path
) -> None:
    src, dst = made, store_url("dst")
    assert import_run(dst, r1_bundle).returncode == 0  # a run with its items
    before = snapshot(dst)
    done = run_core("store", "copy", "--from", src, "--to", dst)
    assert done.returncode == 1
    assert "is not empty (runs: 1 rows, item_sets: 1 rows, items: 7 rows" in done.stderr
    assert "nothing was written" in done.stderr
    assert snapshot(dst) == before


def test_an_interrupted_copy_leaves_the_destination_as_it_was(
    made: str, store_url: StoreUrl, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    src, dst = made, store_url("dst")
    Store.open(dst)  # an empty store that exists
    before = snapshot(dst)
    real = store_copy._insert_batch
    seen: list[str] = []

    def interrupted(con, table, cols, batch) -> None:
        seen.append(table)
        if len(seen) == 4:  # three tables are in: then Ctrl-C
            raise KeyboardInterrupt
        real(con, table, cols, batch)

    monkeypatch.setattr(store_copy, "_insert_batch", interrupted)
    done = run_core("store", "copy", "--from", src, "--to", dst)
    assert done.returncode == 130 and "nothing was written" in done.stderr
    assert len(seen) == 4
    assert snapshot(dst) == before
    # a destination file the copy created is removed again (a DuckDB file's case; a lake's
    # catalog is the operator's, made before the copy)
    fresh = Path(tmp_path / "fresh.duckdb")
    seen.clear()
    done = run_core("store", "copy", "--from", src, "--to", str(fresh))
    assert done.returncode == 130
    assert not fresh.exists()
    # and, not interrupted, the same copy goes through
    monkeypatch.setattr(store_copy, "_insert_batch", real)
    assert run_core("store", "copy", "--from", src, "--to", dst).returncode == 0
    assert snapshot(dst)["results"] == snapshot(src)["results"]


def test_a_copy_killed_midway_leaves_the_destination_as_it_was(
    made: str, store_url: StoreUrl
) -> None:
    """SIGKILL (no handler runs) while the copy's transaction holds four tables' rows."""
    src, dst = made, store_url("dst")
    Store.open(dst)
    before = snapshot(dst)
    code = f"""
import sys, time
sys.path.insert(0, {str(ROOT)!r})
from core.services import store_copy
real, n = store_copy._insert_batch, []
def slow(con, table, cols, batch):
    real(con, table, cols, batch)
    n.append(table)
    if len(n) == 4:
        print("COPYING", flush=True)
        time.sleep(120)
store_copy._insert_batch = slow
from core.cli import main
sys.exit(main(["store", "copy", "--from", {src!r}, "--to", {dst!r}]))
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "COPYING"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert snapshot(dst) == before
    assert run_core("store", "copy", "--from", src, "--to", dst).returncode == 0


def test_a_copy_whose_counts_differ_is_rolled_back(
    made: str, store_url: StoreUrl, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dst = made, store_url("dst")
    Store.open(dst)
    before = snapshot(dst)
    real = store_copy._insert_batch
    n = snapshot(src)["responses"][0]

    def lossy(con, table, cols, batch) -> None:
        real(con, table, cols, batch.slice(1) if table == "responses" else batch)

    monkeypatch.setattr(store_copy, "_insert_batch", lossy)
    done = run_core("store", "copy", "--from", src, "--to", dst)
    assert done.returncode == 1
    assert "row counts differ" in done.stderr and f"responses: {n} vs {n - 1}" in done.stderr
    assert snapshot(dst) == before


@pytest.mark.parametrize("store_url", ["file"], indirect=True)
def test_store_copy_never_upgrades_an_older_source(tmp_path: Path, store_url: StoreUrl) -> None:
    """The v3 store exists as a file only (tests/data/store_v3). The copy refuses it before it
    opens the destination, so no destination store is touched on either backend (file only)."""
    from tests.test_migration_v4 import _v3_file

    src = _v3_file(tmp_path / "v3.duckdb")
    before = src.read_bytes()
    done = run_core("store", "copy", "--from", str(src), "--to", store_url("dst"))
    assert done.returncode == 1
    assert "schema version 3" in done.stderr
    assert f"python -m core init --db {src}" in done.stderr
    assert src.read_bytes() == before
    assert not Path(store_url("dst")).exists()


# -- bundles -----------------------------------------------------------------------------------


def test_a_bundle_carries_a_run_into_another_store_with_the_same_numbers(
    made: str, store_url: StoreUrl, tmp_path: Path
) -> None:
    a, b = made, store_url("b")
    folder = tmp_path / "bundle"
    export_bundle(a, "r1", folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["run_id"] == "r1" and manifest["benchmark"] == "misprompt"
    assert manifest["schema_version"] == bundle_mod.SCHEMA_VERSION
    store_a = Store.open(a)
    for part in bundle_mod.parts():
        entry = manifest["files"][part.file]
        value = "r1" if part.of == "run" else "small"
        n = store_a.scalar(f"SELECT count(*) FROM {part.table} WHERE {part.key} = ?", [value])
        assert entry["rows"] == n == pq.read_table(folder / part.file).num_rows, part.table
        assert n > 0, part.table  # every part is exercised (a judging, a label, cached counts)
        assert entry["sha256"] == bundle_mod._file_sha256(folder / part.file)

    done = import_run(b, folder)
    assert done.returncode == 0, done.stderr
    assert "imported run 'r1'" in done.stdout
    store_b = Store.open(b)
    assert [r[0] for r in store_b.rows("SELECT run_id FROM runs")] == ["r1"]  # not r2
    for part in bundle_mod.parts():
        value = "r1" if part.of == "run" else "small"
        sql = f"SELECT * FROM {part.table} WHERE {part.key} = ?"
        assert sorted(store_b.rows(sql, [value]), key=repr) == sorted(
            store_a.rows(sql, [value]), key=repr
        ), part.table
    # the same numbers (the run's own judging: j2, the current one, says 'no' to everything)
    assert metrics(b, "r1", "--judging", "default") == metrics(a, "r1", "--judging", "default")


def test_importing_the_same_bundle_again_changes_nothing(
    r1_bundle: Path, store_url: StoreUrl, tmp_path: Path
) -> None:
    b = store_url("b")
    assert import_run(b, r1_bundle).returncode == 0
    before = snapshot(b)
    again = import_run(b, r1_bundle)
    assert again.returncode == 0, again.stderr
    assert "already in the store with the same content: nothing was written" in again.stdout
    assert snapshot(b) == before
    # exported again from the store it was imported into: the same run, still a no-op
    back = tmp_path / "back"
    export_bundle(b, "r1", back)
    assert import_run(b, back).returncode == 0 and snapshot(b) == before


@pytest.mark.parametrize(
    ("change", "differs"),
    [
        ("UPDATE runs SET params = '{\"temperature\": 0.5}'", "runs"),
        ("UPDATE responses SET response = 'another answer' WHERE item_id = "
         "(SELECT min(item_id) FROM responses)", "responses"),
        ("DELETE FROM results WHERE judging = 'j2'", "results"),
    ],
    ids=["parameters", "a-response", "a-judging-less"],
)  # fmt: skip
def test_a_different_run_under_the_same_name_is_refused(
    r1_bundle: Path, store_url: StoreUrl, change: str, differs: str
) -> None:
    b = store_url("b")
    assert import_run(b, r1_bundle).returncode == 0
    Store.open(b).execute(change)  # r1 in b is now another run than the bundle's
    before = snapshot(b)
    done = import_run(b, r1_bundle)
    assert done.returncode == 1
    assert f"already has a run 'r1' with other content (differs in {differs})" in done.stderr
    assert "Nothing was written" in done.stderr
    assert snapshot(b) == before


def test_an_item_set_of_the_same_name_is_reused_or_refused(
    made: str, r1_bundle: Path, store_url: StoreUrl
) -> None:
    same, other = store_url("same"), store_url("other")
    # identical items under the name: reused
    mi.import_bytes(Store.open(same), _subset(4, 3)[0], "small.csv", "small")
    items_before = snapshot(same)["items"]
    done = import_run(same, r1_bundle)
    assert done.returncode == 0 and "item set reused" in done.stdout
    assert snapshot(same)["items"] == items_before
    assert metrics(same, "r1") == metrics(made, "r1")
    # other items under the name: refused
    mi.import_bytes(Store.open(other), _subset(5, 3)[0], "small.csv", "small")
    before = snapshot(other)
    done = import_run(other, r1_bundle)
    assert done.returncode == 1
    assert "item set 'small' with other items" in done.stderr and "(8 stored, 7" in done.stderr
    assert snapshot(other) == before


@pytest.mark.parametrize("store_url", ["file"], indirect=True)
@pytest.mark.parametrize("victim", ["results.parquet", "items.parquet", "manifest.json"])
def test_a_damaged_bundle_is_refused_naming_the_file(
    r1_bundle: Path, store_url: StoreUrl, victim: str
) -> None:
    """`import run` reads and checks the whole bundle before it opens the store (bundle.main),
    so the refusal never reaches a backend: file only (the lake's import is tested above and
    below)."""
    b = store_url("b")
    mi.import_bytes(Store.open(b), _subset(1, 1)[0], "tiny.csv", "tiny")
    path = r1_bundle / victim
    data = path.read_bytes()
    if victim == "manifest.json":  # a hand-edited count
        manifest = json.loads(data)
        manifest["files"]["responses.parquet"]["rows"] += 1
        data = json.dumps(manifest).encode()
        named = r1_bundle / "responses.parquet"
    else:
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0x01  # one flipped bit
        data, named = bytes(flipped), path
    path.write_bytes(data)
    before = snapshot(b)
    done = import_run(b, r1_bundle)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: {named}:"), done.stderr
    assert snapshot(b) == before


def test_an_import_that_fails_midway_writes_nothing(r1_bundle: Path, store_url: StoreUrl) -> None:
    """The call records (written after the run, items, responses and results) hold a value the
    store refuses; the file's hash is made to match, so the failure comes from the store."""
    b = store_url("b")
    Store.open(b)
    path = r1_bundle / "calls.parquet"
    table = pq.read_table(path)
    at = table.column_names.index("attempt")
    pq.write_table(table.set_column(at, "attempt", pa.array(["x"] * table.num_rows)), path)
    manifest = json.loads((r1_bundle / "manifest.json").read_text())
    manifest["files"]["calls.parquet"]["sha256"] = bundle_mod._file_sha256(path)
    (r1_bundle / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(b)
    done = import_run(b, r1_bundle)
    assert done.returncode == 1, done.stdout
    assert (
        done.stderr.startswith("error: the import failed") and "nothing was written" in done.stderr
    )
    assert snapshot(b) == before


def test_a_run_without_an_item_set_travels_too(store_url: StoreUrl, tmp_path: Path) -> None:
    """A playground exchange keeps its item in params, not in an item set."""
    a, b = store_url("a"), store_url("b")
    Store.open(a).execute(
        "INSERT INTO runs (run_id, benchmark, kind, model, params, status) VALUES "
        "('pg-1', 'misprompt', 'playground', 'm', '{\"item\": {\"prompt\": \"q\"}}', 'done')"
    )
    Store.open(a).execute(
        "INSERT INTO responses (run_id, item_id, variant, status, response) VALUES "
        "('pg-1', 'playground', 'zero-shot', 'ok', 'an answer')"
    )
    folder = tmp_path / "pg"
    export_bundle(a, "pg-1", folder)
    assert json.loads((folder / "manifest.json").read_text())["item_set"] is None
    done = import_run(b, folder)
    assert done.returncode == 0, done.stderr
    tables = ("runs", "responses", "item_sets", "items")
    in_a, in_b = snapshot(a), snapshot(b)
    assert {t: in_b[t] for t in tables} == {t: in_a[t] for t in tables}


def test_a_bundle_never_holds_an_api_key(
    store_url: StoreUrl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run used a key (and the server echoed it into every reply): no file of the bundle
    holds it, neither in its bytes nor in any decoded cell (Parquet compresses text)."""
    secret = "sk-bundle-DO-NOT-SHIP-5d2a91"
    monkeypatch.setenv("EHW_BUNDLE_KEY", secret)
    a = store_url("a")
    store = Store.open(a)
    data, _ = _subset(2, 1)
    mi.import_bytes(store, data, "small.csv", "small")
    with FakeOpenAI(fault_fn=lambda body: {"echo_key": True}) as server:
        done = run_mp(
            a, server.url, "--items", "small", "--run-name", "keyed",
            "--api-key-env", "EHW_BUNDLE_KEY", "--judge-base-url", server.url,
            "--judge-model", "fake-model", "--judge-api-key-env", "EHW_BUNDLE_KEY",
        )  # fmt: skip
        sent = server.chat_requests
    assert done.returncode == 0, done.stderr
    assert sent and all(r["headers"]["authorization"] == f"Bearer {secret}" for r in sent)
    folder = tmp_path / "bundle"
    export_bundle(a, "keyed", folder)
    assert "***" in json.dumps(pq.read_table(folder / "responses.parquet").to_pylist(), default=str)
    for path in folder.iterdir():
        assert secret.encode() not in path.read_bytes(), path.name
        if path.suffix == ".parquet":
            cells = json.dumps(pq.read_table(path).to_pylist(), default=str)
            assert secret not in cells, path.name


def test_export_bundle_refuses_a_folder_that_holds_something_else(
    made: str, tmp_path: Path
) -> None:
    a = made
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    done = run_core("export", "--source", "r1", "--bundle", str(busy), "--db", a)
    assert done.returncode == 1 and "is not empty" in done.stderr
    for extra in (["--out", "x.csv"], ["--judging", "j2"], ["--force"], ["--source", "r2"]):
        done = run_core("export", "--source", "r1", "--bundle", str(busy), "--db", a, *extra)
        assert done.returncode in (1, 2) and done.stderr.startswith("error: "), extra
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    # a bundle of another run is not replaced; one of the same run is, whole
    folder = tmp_path / "bundle"
    export_bundle(a, "r1", folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    done = run_core("export", "--source", "r2", "--bundle", str(folder), "--db", a)
    assert done.returncode == 1 and "a bundle of run 'r1'" in done.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    done = run_core("export", "--source", "r1", "--bundle", str(folder), "--db", a)
    assert done.returncode == 0 and "replaced the bundle" in done.stdout
    assert bundle_mod.read_bundle(folder).run_id == "r1"
    made_here = ["made.duckdb"] if a.endswith(".duckdb") else []  # a lake's is on its servers
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*made_here, "busy", "bundle"])
