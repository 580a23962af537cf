"""Issue 31, point 2: a run that never got an answer (its endpoint refused every connection)
resumes with corrected connection settings — URL, key variable, concurrency — as an unfinished
judging does; its model, template and settings stay refused, and so does another URL for a
run that has answers (they would mix two servers under one name)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from core.engine.runner import RunError, execute_run
from core.store import Store
from tests.core_cli import run_core
from tests.echo_task import EchoTask, create_item_set
from tests.fake_openai import FakeOpenAI
from tests.test_runner import prompts, spec_for

DEAD = "http://127.0.0.1:9/v1"  # nothing listens: every connection refused


def dead_spec():
    spec = spec_for(DEAD)
    return replace(spec, endpoint=replace(spec.endpoint, max_retries=0))


def test_a_run_with_no_answer_resumes_at_a_corrected_url(store: Store):
    create_item_set(store, "s", "echo", prompts(4))
    first = execute_run(store, dead_spec(), EchoTask(), progress=False)
    assert first.status == "failed"
    assert store.scalar("SELECT count(*) FROM responses WHERE status = 'ok'") == 0
    with FakeOpenAI() as server:
        again = execute_run(store, spec_for(server.url, conc=2), EchoTask(), progress=False)
        assert again.status == "done"
        assert store.scalar("SELECT count(*) FROM responses WHERE status = 'ok'") == 4
        assert (
            store.scalar("SELECT json_extract_string(params, '$.endpoint.base_urls[0]') FROM runs")
            == server.url
        )
        # now it has answers: another URL would mix two servers under one name
        with FakeOpenAI() as other, pytest.raises(RunError, match="endpoint URLs: stored"):
            execute_run(store, spec_for(other.url), EchoTask(), progress=False)


def test_the_model_of_a_run_with_no_answer_still_may_not_change(store: Store):
    create_item_set(store, "s", "echo", prompts(2))
    execute_run(store, dead_spec(), EchoTask(), progress=False)
    with FakeOpenAI() as server:
        spec = replace(spec_for(server.url), setting="other")
        with pytest.raises(RunError, match="setting: stored 'echo', now 'other'"):
            execute_run(store, spec, EchoTask(), progress=False)


def test_the_cli_resumes_a_failed_run_at_another_url(initialised_store):
    """The issue's case: `run processbench … --run-name pb-smol` at the wrong port, then the
    right one, was refused ("already exists with other settings: endpoint URLs")."""
    db = str(initialised_store.path)
    argv = ["run", "misprompt", "--items", "misprompt-sample", "--limit", "2", "--setting"]
    argv += ["zero-shot", "--model", "fake-model", "--run-name", "mp-x", "--quiet", "--db", db]
    failed = run_core(*argv, "--base-url", DEAD, "--max-retries", "0")
    assert failed.returncode == 1
    with FakeOpenAI() as server:
        done = run_core(*argv, "--base-url", server.url)
    assert "already exists with other settings" not in done.stderr, done.stderr
    assert (
        initialised_store.scalar(
            "SELECT count(*) FROM responses WHERE run_id = 'mp-x' AND status = 'ok'"
        )
        == 2
    )


# -- failed and empty runs: deleted, hidden, never picked by default --------------------------


def _two_runs(store: Store) -> None:
    """'empty' (no answer: its endpoint refused everything) and 'good' (answered), two runs
    of a registered benchmark (the Runs page lists those) through the real runner."""
    create_item_set(store, "s", "bbm", prompts(3))
    task = EchoTask(benchmark="bbm", variant="direct_trace", needs_judge=False)
    bbm: dict[str, Any] = {"benchmark": "bbm", "setting": "direct_trace"}
    execute_run(store, replace(dead_spec(), run_id="empty", **bbm), task, progress=False)
    with FakeOpenAI() as server:
        execute_run(
            store, replace(spec_for(server.url, run_id="good"), **bbm), task, progress=False
        )


def test_runs_delete_needs_yes_and_removes_the_run_whole(store: Store):
    _two_runs(store)
    db = str(store.path)
    asked = run_core("runs", "--delete", "empty", "--db", db)
    assert asked.returncode == 1 and "nothing was deleted" in asked.stderr
    assert "--delete empty --yes" in asked.stderr
    assert store.scalar("SELECT count(*) FROM runs WHERE run_id = 'empty'") == 1
    done = run_core("runs", "--delete", "empty", "--yes", "--db", db)
    assert done.returncode == 0 and done.stdout.startswith("deleted run empty (failed)")
    for table in ("runs", "responses", "results", "calls"):
        assert store.scalar(f"SELECT count(*) FROM {table} WHERE run_id = 'empty'") == 0
    assert store.scalar("SELECT count(*) FROM responses WHERE run_id = 'good'") == 3
    missing = run_core("runs", "--delete", "nope", "--yes", "--db", db)
    assert missing.returncode == 1 and "no run 'nope'" in missing.stderr


def test_a_run_in_an_audit_is_kept(store: Store):
    from core.services import run_choice

    _two_runs(store)
    store.execute(
        "INSERT INTO audit_samples (audit, position, run_id, item_id, variant) "
        "VALUES ('a', 1, 'good', '0', 'direct_trace')"
    )
    with pytest.raises(Exception, match="is in a judge audit"):
        run_choice.delete_run(store, "good")


def test_pages_never_pick_a_failed_or_empty_run_by_default(store: Store):
    from core.services import run_choice

    _two_runs(store)
    assert run_choice.default_runs(store, ["empty", "good"], 2) == ["good"]
    assert run_choice.default_run(store, ["empty"]) is None


def test_the_runs_page_hides_and_deletes_a_failed_run(store: Store):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    _two_runs(store)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/runs.py")
    at.query_params["run"] = "empty"
    at.query_params["runs_show"] = "hide failed and empty runs"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert list(at.dataframe[0].value["run_id"]) == ["good"]
    at.radio(key="w_runs_show").set_value("all runs").run()
    assert set(at.dataframe[0].value["run_id"]) == {"good", "empty"}
    at.selectbox(key="w_run").set_value("empty").run()
    assert at.button(key="delete_empty").disabled  # not before the box is ticked
    at.checkbox(key="delete_sure_empty").check().run()
    at.button(key="delete_empty").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert store.scalar("SELECT count(*) FROM runs WHERE run_id = 'empty'") == 0


def test_the_grid_opens_on_answered_runs_only(store: Store):
    """The Responses grid selects its runs by default: the empty one is not among them (the
    user may still add it)."""
    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    _two_runs(store)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/grid.py")
    at.query_params["g_bench"] = "bbm"
    at.query_params["g_set"] = "s"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="w_g_runs").value == ["good"]
    assert "empty · fake-model" in at.multiselect(key="w_g_runs").options
