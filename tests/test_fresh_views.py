"""Fresh and reproducible views (issue 17, point 5), on a DuckDB file and on a DuckLake.

The case users hit: a `rescore` in a terminal, and the Mis-prompt page kept showing the old
judging for ten minutes (its caches did not know the data changed). Page caches are keyed on
the store's version (a file's change counter, a lake's snapshot id), so a change made by any
other process shows on the next rerun; a lake can also be read as of a snapshot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.benchmarks.misprompt import items as mi
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.store import Store
from tests.core_cli import run_core, run_misprompt
from tests.fake_openai import FakeOpenAI
from tests.services import Lake
from tests.test_misprompt_run import Script, _subset

ROOT = Path(__file__).resolve().parent.parent


def _judged_run(location: str) -> Store:
    store = Store.open(location)
    data, rows = _subset(6, 4)
    mi.import_bytes(store, data, "small.csv", "small")
    with FakeOpenAI(responder=Script(rows).respond) as server:
        done = run_misprompt(location, server.url, "--items", "small", "--run-name", "r1")  # type: ignore[arg-type]
        assert done.returncode == 0, done.stderr
    return store


@pytest.fixture(scope="module")
def _judged_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run r1, judged, in a file made once per module: each test gets its own copy."""
    path = tmp_path_factory.mktemp("judged") / "judged.duckdb"
    _judged_run(str(path))
    return path


@pytest.fixture(scope="module")
def _judged_lake(request: pytest.FixtureRequest) -> Lake:
    """Run r1, judged, in a lake made once per module (a run into a lake is seconds of catalog
    round trips): each test gets a copy of its catalog (CREATE DATABASE … TEMPLATE)."""
    from core.store.lake import forget
    from core.store.location import parse_location

    empty: Lake = request.getfixturevalue("_lake_template")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in request.getfixturevalue("s3_server").env().items():
            mp.setenv(key, value)
        mp.delenv("EHW_DATA_PATH", raising=False)  # the copied catalog keeps its own
        judged = empty.copy()
        _judged_run(judged.url)
        forget(parse_location(judged.url))  # no connection left: the catalog can be copied
    return judged


@pytest.fixture(params=["file", "lake"])
def judged(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The location of a store holding run r1 (judged once, 'default'), on each backend, with
    EHW_DB pointing at it as the app's would."""
    if request.param == "file":
        path = tmp_path / "results.duckdb"
        shutil.copyfile(request.getfixturevalue("_judged_file"), path)
        monkeypatch.setenv("EHW_DB", str(path))
        yield str(path)
        return
    for key, value in request.getfixturevalue("s3_server").env().items():
        monkeypatch.setenv(key, value)  # as on a lab machine; the copy keeps its data path
    monkeypatch.delenv("EHW_DATA_PATH", raising=False)
    lake = request.getfixturevalue("_judged_lake").copy()
    monkeypatch.setenv("EHW_DB", lake.url)
    yield lake.url
    lake.release()


def _rescore_in_another_process(location: str, name: str) -> None:
    """`python -m core rescore` as a separate process (as from a terminal): a judge that says
    'no' to every label, so the numbers must change."""

    def reply(body: dict) -> str:
        return json.dumps({k: {"rationale": "r", "value": False} for k in JUDGE_LABELS})

    with FakeOpenAI(responder=reply) as judge:
        done = subprocess.run(
            [sys.executable, "-m", "core", "rescore", "--source", "r1", "--as", name]
            + ["--judge-base-url", judge.url, "--judge-model", "j2", "--quiet", "--db", location],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ},
            timeout=300,
        )
    assert done.returncode == 0, done.stderr


def _judgings_listed(at: AppTest) -> list[str]:
    frames = [d.value for d in at.dataframe]
    listed = next(f for f in frames if "judging" in f.columns and "current" in f.columns)
    return [str(j) for j in listed["judging"].tolist()]


def test_a_rescore_in_another_process_shows_on_the_next_rerun(judged):
    store = Store.open(judged, create=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("pages/misprompt_results.py")
    at.query_params["view"] = "Runs"
    at.query_params["run"] = "r1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert _judgings_listed(at) == ["default"]
    before = store.data_version()

    _rescore_in_another_process(judged, "j2")

    assert store.data_version() != before
    at.run()  # the next rerun: no cache clearing, no waiting for a TTL
    assert not at.exception, [e.value for e in at.exception]
    assert _judgings_listed(at) == ["default", "j2"]


@pytest.mark.parametrize("judged", ["lake"], indirect=True)  # a file keeps no snapshots
def test_metrics_as_of_a_snapshot_gives_the_numbers_of_then(judged):
    then = Store.open(judged, create=False).data_version()
    args = ["metrics", "misprompt", "--source", "r1", "--format", "csv"]
    before = run_core(*args)
    assert before.returncode == 0, before.stderr
    _rescore_in_another_process(judged, "j2")
    now = run_core(*args)
    pinned = run_core(*args, "--as-of", str(then))
    assert pinned.returncode == 0, pinned.stderr
    assert now.stdout != before.stdout  # the rescore is the latest judging now
    assert pinned.stdout == before.stdout
