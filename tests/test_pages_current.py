"""AppTest: pages that stay current and explain themselves (issue 31, points 4-7, 10, 15):
Overview's links and intro from the registry, the navigation never folded, empty cells shown
empty, rounded tables, marks on published values that disagree with their rows."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core import registry
from tests.conftest import ROOT

APP = str(ROOT / "app.py")


def _page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def example():
    from tests import example_benchmark

    bench = example_benchmark.install()
    yield bench
    registry.BENCHMARKS.pop(bench.name, None)


def test_overview_links_every_results_page_and_compare(initialised_store):
    at = _page("pages/overview.py")
    links = {link.proto.label for link in at.get("page_link")}
    for bench in registry.BENCHMARKS.values():
        assert bench.page_title in links, (bench.name, links)
    assert {"Compare two runs", "Proactive vs passive", "Start or watch a run"} <= links
    intro = at.caption[0].value
    assert "three" not in intro
    for bench in registry.BENCHMARKS.values():
        assert bench.label in intro


def test_a_new_benchmark_appears_in_the_overview_and_runs_intros(initialised_store, example):
    at = _page("pages/overview.py")
    assert "Example" in at.caption[0].value
    at = _page("pages/runs.py")
    runs_intro = at.caption[0].value
    assert "three" not in runs_intro and "Example" in runs_intro and "PCBench" in runs_intro


def test_the_terminal_command_names_a_store_other_than_the_default():
    from core.services.terminal import terminal_command
    from core.store import DEFAULT_DB

    args = ["run", "bbm", "--items", "bbm-sample"]
    assert terminal_command(args, str(DEFAULT_DB), is_lake=False) == (
        "python -m core run bbm --items bbm-sample"
    )
    assert terminal_command(args, "/tmp/my file.duckdb", is_lake=False).endswith(
        "--db '/tmp/my file.duckdb'"
    )
    lake = "ducklake:postgres:dbname=evals host=db user=ehw"
    assert terminal_command(args, lake, is_lake=True).endswith(f"--db '{lake}'")


def test_the_runs_form_command_names_a_non_default_file(initialised_store, db_path):
    at = _page("pages/runs.py")
    assert f"--db {db_path}" in at.code[-1].value
