"""Issue 31, point 2: a run that never got an answer (its endpoint refused every connection)
resumes with corrected connection settings — URL, key variable, concurrency — as an unfinished
judging does; its model, template and settings stay refused, and so does another URL for a
run that has answers (they would mix two servers under one name)."""

from __future__ import annotations

from dataclasses import replace

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
