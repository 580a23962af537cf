"""Snapshots of the team store (issue 31, point 10; the `--as-of` errors of point 15): a bad
snapshot is refused with the valid range in the CLI and the app, the app shows the current
snapshot and lists them, a pinned view offers no "Start a run", and the command the Runs form
shows names the store. Real PostgreSQL + SeaweedFS (tests/services.py), as tests/test_lake_app.py."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.store import Store
from tests.conftest import ROOT
from tests.core_cli import run_core


def _app(page: str | None = None, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if page:
        at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def inited_lake(lake):
    assert run_core("init").returncode == 0
    return lake


@pytest.mark.parametrize("as_of", ["-1", "99999999999999999999999", "0", "999999"])
def test_a_bad_as_of_is_refused_with_the_valid_range(inited_lake, as_of):
    latest = Store.open(inited_lake.url).data_version()
    done = run_core("runs", "--as-of", as_of)
    assert done.returncode == 1
    assert f"snapshot {as_of} " in done.stderr
    assert f"to {latest} (the latest)" in done.stderr, done.stderr
    for raw in ("Exception", "INT128", "Run init", "Parser"):
        assert raw not in done.stderr, done.stderr
    if as_of == "0":
        assert "before `init`" in done.stderr
    at = _app(as_of=as_of)
    errors = " ".join(e.value for e in at.error)
    assert f"to {latest} (the latest)" in errors and "Exception" not in errors, errors


def test_a_good_as_of_still_reads_that_snapshot(inited_lake):
    latest = Store.open(inited_lake.url).data_version()
    assert run_core("runs", "--as-of", str(latest)).returncode == 0


def test_the_overview_shows_the_snapshot_and_lists_them(inited_lake):
    store = Store.open(inited_lake.url)
    latest = store.data_version()
    at = _app()
    texts = " ".join(c.value for c in at.caption) + " ".join(m.value for m in at.markdown)
    assert f"snapshot {latest}" in texts.lower(), texts
    listed = next(df.value for df in at.dataframe if "snapshot_id" in df.value.columns)
    assert listed["snapshot_id"].iloc[0] == latest and "changes" in listed.columns
    assert any("items" in c for c in listed["changes"])  # what changed, by table name
    pinned = _app(as_of=str(latest - 1))
    texts = " ".join(i.value for i in pinned.info)
    assert f"Pinned to snapshot {latest - 1}" in texts


def test_a_pinned_view_offers_no_start_and_the_command_names_the_lake(inited_lake):
    latest = Store.open(inited_lake.url).data_version()
    at = _app("pages/runs.py", as_of=str(latest))
    assert [t.label for t in at.tabs] == ["Runs"]
    assert not any(b.label == "Start run" for b in at.button)
    assert any("pinned" in i.value.lower() and "start" in i.value.lower() for i in at.info)
    at = _app("pages/runs.py")
    assert "Start run" in [b.label for b in at.button]
    command = at.code[-1].value
    assert command.startswith("python -m core run ")
    assert f"--db '{inited_lake.url}'" in command
    assert "password" not in command.lower()


def test_a_pinned_results_page_offers_no_start_form(inited_lake):
    latest = Store.open(inited_lake.url).data_version()
    labels = [e.label for e in _app("pages/processbench_results.py").expander]
    assert "Start a run" in labels
    pinned = _app("pages/processbench_results.py", as_of=str(latest))
    assert "Start a run" not in [e.label for e in pinned.expander]
