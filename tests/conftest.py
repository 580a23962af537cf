"""Shared fixtures. Helpers for servers and browsers live in tests/fake_openai.py and tests/browser.py."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.declared import wire_store  # noqa: E402
from core.store import Store  # noqa: E402

wire_store()  # the store learns the benchmarks' views and caches (core/declared.py)

# The files that take longest (docs/performance.md, "The test suite"), longest first. test.sh
# runs two workers with --dist loadfile --no-loadscope-reorder, which hand out whole files in
# the order below: a long file handed out last (xdist's own order is by test count, which put
# test_quality.py's cold mypy run, minutes long, at the very end) keeps one worker busy while
# the other idles. Started first, it runs beside the rest. Update the list when a file grows.
SLOW_FILES_FIRST = (
    "test_quality.py",  # mypy over core/, pages/, tests/, bench/ (a cold cache: minutes)
    "test_rescore.py",
    "test_browser_playground_audit.py",
    "test_runs_follow.py",
    "test_browser_misprompt.py",
    "test_runs_browser.py",
    "test_browser_smoke.py",
    "test_misprompt_run.py",  # the local SmolLM2 model end to end
    "test_faults.py",
    "test_bbm_browser.py",
    "test_runner.py",  # both backends, real processes
    "test_moving_data.py",
    "test_fresh_views.py",
    "test_compare_runs.py",
    "test_sampling.py",
    "test_published_setup.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow files first (SLOW_FILES_FIRST), then the others by falling number of tests
    (xdist's own heuristic); a file's tests keep their order. The same order on every worker."""
    rank = {name: i for i, name in enumerate(SLOW_FILES_FIRST)}
    per_file: dict[str, int] = {}
    for item in items:
        per_file[item.path.name] = per_file.get(item.path.name, 0) + 1
    items.sort(
        key=lambda item: (
            rank.get(item.path.name, len(rank)),
            -per_file[item.path.name],
            item.path.name,
        )
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """Keep each phase's report on the item (item.rep_setup, rep_call): the browser fixtures
    take a screenshot in their teardown only when the test failed (tests/browser.py)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def db_path(tmp_path, monkeypatch) -> Path:
    """A fresh database file; EHW_DB points at it so the app and CLI use it too."""
    path = tmp_path / "results.duckdb"
    monkeypatch.setenv("EHW_DB", str(path))
    return path


def copy_of(template: Path, db_path: Path) -> Store:
    """The store at db_path as a copy of a file prepared once per test process or module (the
    fixtures below and the test modules' own templates): copying and opening costs ~0.06 s
    where building the content again costs more."""
    import shutil

    shutil.copyfile(template, db_path)
    return Store.open(db_path)


@pytest.fixture(scope="session")
def _empty_template(tmp_path_factory) -> Path:
    """A new store of the current schema, made once per test process: creating one runs every
    migration (~0.14 s of CPU), copying and opening it ~0.06 s."""
    path = tmp_path_factory.mktemp("empty") / "empty.duckdb"
    Store.open(path)
    return path


@pytest.fixture
def store(db_path, _empty_template) -> Store:
    """A new, empty store at db_path (a copy of the same file Store.open would create)."""
    return copy_of(_empty_template, db_path)


@pytest.fixture(scope="session")
def _initialised_template(tmp_path_factory) -> Path:
    """`init` once per test session (published tables + the three samples, ~1 s); each test
    gets its own copy of the file below, so tests stay independent."""
    from core.services.setup import init

    path = tmp_path_factory.mktemp("template") / "initialised.duckdb"
    init(Store.open(path))
    return path


@pytest.fixture
def initialised_store(db_path, _initialised_template) -> Store:
    return copy_of(_initialised_template, db_path)


@pytest.fixture(scope="session")
def _two_runs_template(tmp_path_factory) -> Path:
    """tests/audit_fixtures.two_runs written once per test process (~0.3-0.5 s of CPU: eight
    transactions and their DataFrames); `two_runs_store` copies the file."""
    from tests.audit_fixtures import two_runs

    path = tmp_path_factory.mktemp("two-runs") / "two_runs.duckdb"
    two_runs(Store.open(path))
    return path


@pytest.fixture
def two_runs_store(db_path, _two_runs_template) -> Store:
    """`store` holding audit_fixtures.two_runs (items, run-a and run-b judged): each test its
    own copy of one prepared file, as if it had called two_runs(store) itself."""
    return copy_of(_two_runs_template, db_path)


@pytest.fixture(scope="session")
def _all_runs_template(tmp_path_factory) -> Path:
    """tests/grid_fixtures.all_runs written once per test process (~0.7 s of CPU: six runs of
    three benchmarks, row by row); `all_runs_store` copies the file."""
    from tests.grid_fixtures import all_runs

    path = tmp_path_factory.mktemp("all-runs") / "all_runs.duckdb"
    all_runs(Store.open(path))
    return path


@pytest.fixture
def all_runs_store(db_path, _all_runs_template) -> Store:
    """`store` holding grid_fixtures.all_runs (the response grid's hand-made runs): each test
    its own copy of one prepared file, as if it had called all_runs(store) itself."""
    return copy_of(_all_runs_template, db_path)


def _scan_streamlit_components_once() -> None:
    """Each new AppTest scans every installed distribution's metadata for Streamlit components
    (~0.25 s of CPU; the suite creates ~100 AppTests, ~25 s). The installed packages do not
    change during a test session: the first scan's result serves the later ones."""
    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(
        manifest_scanner.scan_component_manifests
    )


_scan_streamlit_components_once()


def _compile_each_script_once() -> None:
    """AppTest gives every run a new ScriptCache, so each `at.run()` read, parsed (Streamlit's
    magic rewrites the AST) and compiled app.py and the page again: 2-40 ms of CPU per run
    (pages/judge_audit.py ~40 ms of a ~200 ms rerun), on every one of the suite's AppTest runs.
    A Streamlit server keeps one cache for all its sessions; the tests keep one per process,
    keyed by the file's path, mtime and size (a script changed on disk is compiled again)."""
    from streamlit import config
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    compiled: dict[tuple, Any] = {}
    original = ScriptCache.get_bytecode

    @functools.wraps(original)
    def get_bytecode(self: ScriptCache, script_path: str) -> Any:
        path = os.path.abspath(script_path)
        try:
            stat = os.stat(path)
        except OSError:
            return original(self, script_path)  # its own error for a missing file
        key = (path, stat.st_mtime_ns, stat.st_size, config.get_option("runner.magicEnabled"))
        code = compiled.get(key)
        if code is None:
            code = compiled[key] = original(self, script_path)
        return code

    ScriptCache.get_bytecode = get_bytecode  # type: ignore[method-assign]


_compile_each_script_once()


def _route_every_apptest_run_through_app_py() -> None:
    """A `streamlit run` server routes every session's run through app.py (its st.navigation)
    once the first session left Streamlit's legacy `pages/` mode (pages/ui/common.py's
    leave_legacy_page_mode, at that module's first import). AppTest puts every run back into
    that mode, so only a process's first AppTest ran app.py and the later ones ran the page
    file alone — without app.py's database notice, error guard and per-rerun attachment.
    Here every AppTest run starts where a server's later sessions are."""
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    @functools.wraps(original)
    def init(self: PagesManager, *args: Any, **kwargs: Any) -> None:
        PagesManager.uses_pages_directory = False
        original(self, *args, **kwargs)

    PagesManager.__init__ = init  # type: ignore[method-assign]


_route_every_apptest_run_through_app_py()


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    """st.cache_data/resource survive between AppTest runs in one process: clear them."""
    yield
    if "streamlit" in sys.modules:
        import streamlit as st

        st.cache_data.clear()
        st.cache_resource.clear()


# -- the team store: real PostgreSQL + S3 servers (tests/services.py), one pair per worker ------


@pytest.fixture(scope="session")
def _lake_servers():
    """PostgreSQL and SeaweedFS started side by side (initdb and start ~2 s; weed ~3.5 s, most
    of it its master's raft bootstrap), once per worker; both stop at the end."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.services import S3, postgres, seaweed_s3

    servers = (postgres(), seaweed_s3())
    with ThreadPoolExecutor(len(servers)) as pool:
        starting = [pool.submit(server.__enter__) for server in servers]
    with contextlib.ExitStack() as stack:
        failed = None
        for server, future in zip(servers, starting):
            if future.exception() is None:
                stack.push(server.__exit__)  # stopped at the end, even if the other failed
            else:
                failed = failed or future.exception()
        if failed is not None:
            raise failed
        pg, s3 = (future.result() for future in starting)
        assert isinstance(s3, S3)
        s3.create_bucket("lake")
        yield pg, s3


@pytest.fixture(scope="session")
def pg_cluster(_lake_servers):
    return _lake_servers[0]


@pytest.fixture(scope="session")
def s3_server(_lake_servers):
    return _lake_servers[1]


@pytest.fixture(scope="session")
def _lake_template(pg_cluster, s3_server):
    """An empty store of the current schema, made once per worker: each test's lake is a copy
    of its catalog database (CREATE DATABASE … TEMPLATE, ~0.1 s instead of ~3 s of DDL)."""
    from tests.services import empty_lake_template

    return empty_lake_template(pg_cluster, s3_server)


@pytest.fixture
def lake(pg_cluster, s3_server, _lake_template, monkeypatch):
    """A fresh DuckLake (its own catalog database); EHW_DB, EHW_DATA_PATH and the AWS_*
    variables point at it, as they would on a lab machine."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    made = _lake_template.copy()
    monkeypatch.setenv("EHW_DB", made.url)
    monkeypatch.setenv("EHW_DATA_PATH", made.data_path)
    yield made
    made.release()


@pytest.fixture(params=["file", "lake"])
def backend(request, tmp_path, monkeypatch) -> str:
    """The store's location on each backend (a file path or a ducklake: URL), with EHW_DB set:
    guarantees that must hold on both take this instead of db_path."""
    if request.param == "file":
        path = tmp_path / "results.duckdb"
        monkeypatch.setenv("EHW_DB", str(path))
        return str(path)
    return str(request.getfixturevalue("lake").url)
