"""Every page and the app's writes on a DuckLake (issue 17, point 1): the same app over a lake.

One lake per module (init, a judged Mis-prompt run, a BIG-Bench Mistake run): each page of the
navigation renders as a deep link; the audit's draw and labels, a background run started as
the Runs page starts it, the grid and the export work on it.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest

from core.benchmarks.misprompt import items as mi
from core.services import audit, grid, jobs
from core.store import Store
from tests.core_cli import run_core, run_misprompt
from tests.fake_openai import FakeOpenAI, FakeProcess
from tests.test_judged_example import open_page
from tests.test_misprompt_run import Script, _subset

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def lake_with_runs(pg_cluster, s3_server, _lake_template):
    with pytest.MonkeyPatch.context() as mp:
        for key, value in s3_server.env().items():
            mp.setenv(key, value)
        made = _lake_template.copy()
        mp.setenv("EHW_DB", made.url)
        assert run_core("init").returncode == 0
        store = Store.open(made.url)
        data, rows = _subset(6, 4)
        mi.import_bytes(store, data, "small.csv", "small")
        with FakeOpenAI(responder=Script(rows).respond) as server:
            done = run_misprompt(made.url, server.url, "--items", "small", "--run-name", "r1")
            assert done.returncode == 0, done.stderr
        yield made
        made.release()


def _pages() -> list[str]:
    from tests.test_judged_example import navigation_pages

    return [p for p in navigation_pages() if p.startswith("pages/")]


@pytest.mark.parametrize("page", _pages())
def test_every_page_renders_on_a_lake(lake_with_runs, monkeypatch, page):
    monkeypatch.setenv("EHW_DB", lake_with_runs.url)
    open_page(page)


def test_the_audit_draws_and_saves_labels_on_a_lake(lake_with_runs):
    store = Store.open(lake_with_runs.url)
    info = audit.create_audit(store, "lake-audit", ["r1"], fraction=0.5, seed=1)
    queue = audit.audit_queue(store, info.name)
    first = queue.iloc[0]
    names = audit.label_set_of_run(store, "r1").names
    for value in (True, False):  # saved twice: the writer keeps one row per label
        audit.save_labels(
            store, "r1", first["item_id"], first["variant"], "ann", {n: value for n in names}
        )
    saved = store.df(
        "SELECT label, value FROM human_labels WHERE run_id = 'r1' AND annotator = 'ann'"
    )
    assert len(saved) == len(names) and not saved["value"].any()
    assert audit.get_audit(store, info.name) is not None


def test_a_background_run_the_grid_and_the_export_on_a_lake(lake_with_runs, monkeypatch, tmp_path):
    """As the Runs page starts a run: a detached `python -m core run …` with `--db <lake>`."""
    monkeypatch.setenv("EHW_DB", lake_with_runs.url)
    store = Store.open(lake_with_runs.url)
    with FakeProcess({"latency": 0.01}) as server:
        args = ["run", "bbm", "--items", "bbm-sample", "--method", "direct_trace"]
        args += ["--base-url", server.url, "--model", "fake-model", "--run-name", "bg"]
        job = jobs.start_cli_run(args + ["--quiet"], store.location)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if store.scalar("SELECT status FROM runs WHERE run_id = 'bg'") == "done":
                break
            time.sleep(0.5)
        job.wait(timeout=60)  # its log is whole only once the process ended
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'bg'") == "done", (
        job.log_path.read_text()
    )
    assert str(job.log_path).startswith(str(ROOT / "data" / "lakes"))
    assert lake_with_runs.url in job.command
    page = grid.grid_page(store, "misprompt", "small", ("r1",))
    assert page.total == 10 and len(page.rows) == 10
    out = tmp_path / "r1.csv"
    done = run_core("export", "--source", "r1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    with out.open(newline="", encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) == 10  # one row per response


def test_a_page_pinned_with_as_of_reads_the_snapshot_and_says_so(lake_with_runs, monkeypatch):
    """?as_of=N: the page says it is pinned; a store pinned so reads the runs of then."""
    monkeypatch.setenv("EHW_DB", lake_with_runs.url)
    store = Store.open(lake_with_runs.url)
    then = store.data_version()
    runs_then = store.scalar("SELECT count(*) FROM runs")
    store.execute("INSERT INTO runs (run_id, benchmark, status) VALUES ('later', 'bbm', 'done')")
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["as_of"] = str(then)
    at.run()  # the default page, Overview
    assert not at.exception, [e.value for e in at.exception]
    notes = " ".join(i.value for i in at.info)
    assert f"Pinned to snapshot {then}" in notes
    pinned = Store.open(lake_with_runs.url, create=False, as_of=then)
    assert pinned.scalar("SELECT count(*) FROM runs") == runs_then
    assert store.scalar("SELECT count(*) FROM runs") == runs_then + 1
    store.execute("DELETE FROM runs WHERE run_id = 'later'")
