"""Issue 31, point 1: a run or a judging whose units failed shows the stored reasons, grouped
with counts and an example — `python -m core runs RUN --errors`, the Runs page (its table and
the watched run), a run's drill-down on the results pages and the Responses grid."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from core.services import failures
from core.store import Store
from tests.conftest import ROOT, copy_of
from tests.core_cli import run_core, run_misprompt
from tests.fake_openai import FakeOpenAI

APP = str(ROOT / "app.py")
UNPARSEABLE = "unparseable judge output after one repair retry"
DEAD = "http://127.0.0.1:9/v1"  # nothing listens: every model call is refused


@pytest.fixture(scope="module")
def _failed_template(tmp_path_factory, _initialised_template):
    """Two runs of the Mis-prompt sample: `judge-bad` (every answer judged in prose, so every
    verdict fails unparseable), `dead` (no model at its URL, every answer failed)."""
    path = copy_of(_initialised_template, tmp_path_factory.mktemp("failed") / "f.duckdb").path
    with FakeOpenAI(responder=lambda body: "Sure, here is my answer, no JSON at all.") as server:
        done = run_misprompt(
            path, server.url, "--items", "misprompt-sample", "--limit", "4",
            "--setting", "zero-shot", "--run-name", "judge-bad", "--max-retries", "0",
        )  # fmt: skip
        assert done.returncode == 1, done
    done = run_misprompt(
        path, DEAD, "--items", "misprompt-sample", "--limit", "3", "--setting", "zero-shot",
        "--run-name", "dead", "--max-retries", "0",
    )  # fmt: skip
    assert done.returncode == 1, done
    return path


@pytest.fixture
def failed_store(_failed_template, db_path) -> Store:
    return copy_of(_failed_template, db_path)


def test_the_reasons_are_grouped_with_counts_and_an_example(failed_store):
    groups = failures.run_failures(failed_store, "judge-bad")
    judging = [g for g in groups if g.stage == "judging"]
    assert len(judging) == 1 and judging[0].count == 4
    assert judging[0].reason.startswith(UNPARSEABLE)
    assert judging[0].example.startswith(UNPARSEABLE) and judging[0].item_id
    assert not [g for g in groups if g.stage == "response"]
    dead = failures.run_failures(failed_store, "dead")
    answers = [g for g in dead if g.stage == "response"]
    assert sum(g.count for g in answers) == 3
    assert any("127.0.0.1:9" in g.example for g in answers)
    assert [g for g in dead if g.stage == "call"]  # the attempts, with the model's role


def test_reasons_mask_what_is_the_items_own():
    one = failures.reason_of("bad reply 'The capital of France is Paris, said the model.'")
    two = failures.reason_of("bad reply 'Completely different text from another item here'")
    assert one == two == "bad reply '…'"
    assert failures.reason_of("HTTP 503 after 5 attempts") == "HTTP 503 after 5 attempts"
    assert failures.reason_of(None) == "(no reason stored)"
    assert len(failures.reason_of("x" * 1000)) == failures.MAX_REASON


def test_runs_errors_in_the_cli(failed_store):
    done = run_core("runs", "judge-bad", "--errors", "--db", str(failed_store.path))
    assert done.returncode == 0, done
    assert "verdicts that failed: 4" in done.stdout
    assert f"     4 × {UNPARSEABLE}" in done.stdout and "e.g. item " in done.stdout
    done = run_core("runs", "--errors", "dead", "--format", "json", "--db", str(failed_store.path))
    rows = json.loads(done.stdout)
    assert sum(r["count"] for r in rows if r["stage"] == "response") == 3
    missing = run_core("runs", "nope", "--errors", "--db", str(failed_store.path))
    assert missing.returncode == 1 and "error: no run 'nope'" in missing.stderr


def _runs_page(run: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("pages/runs.py")
    at.query_params["run"] = run
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_runs_page_shows_why_a_run_failed(failed_store):
    at = _runs_page("judge-bad")
    table = at.dataframe[0].value
    row = table[table["run_id"] == "judge-bad"].iloc[0]
    assert row["why"].startswith(UNPARSEABLE)  # the table says why, beside "failed"
    reasons = next(df.value for df in at.dataframe if "reason" in df.value.columns)
    assert list(reasons["count"]) == [4] and reasons["reason"][0].startswith(UNPARSEABLE)
    assert any("4 verdicts failed" in e.value for e in at.error)


def test_the_grid_drilldown_shows_the_stored_reason(failed_store):
    item = failed_store.scalar("SELECT min(item_id) FROM responses WHERE run_id = 'judge-bad'")
    at = AppTest.from_file(APP, default_timeout=60)
    at.switch_page("pages/grid.py")
    for k, v in {
        "g_bench": "misprompt",
        "g_set": "misprompt-sample",
        "g_runs": "judge-bad,dead",
        "g_item": item,
    }.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [t.value for t in at.text]
    assert any(t.startswith(f"judge failed: {UNPARSEABLE}") for t in texts)
    reasons = next(df.value for df in at.dataframe if "reason" in df.value.columns)
    assert set(reasons["run_id"]) == {"judge-bad", "dead"}


def test_a_failed_judging_shows_its_reasons(failed_store):
    reply = "no JSON"
    with FakeOpenAI(responder=lambda body: reply) as judge:
        done = run_core(
            "rescore", "--source", "judge-bad", "--judge-base-url", judge.url, "--judge-model",
            "j2", "--as", "again", "--max-retries", "0", "--quiet", "--db", str(failed_store.path),
        )  # fmt: skip
    assert done.returncode == 1
    groups = failures.run_failures(failed_store, "judge-bad", judging="again", calls=False)
    assert [(g.stage, g.count) for g in groups] == [("judging", 4)]
    done = run_core(
        "runs", "judge-bad", "--errors", "--judging", "again", "--db", str(failed_store.path)
    )
    assert f"4 × {UNPARSEABLE}" in done.stdout and "(judging again)" in done.stdout
    at = _runs_page("judge-bad")  # its judgings panel says why, under the judgings table
    assert any(e.label == "Why 4 verdicts of judging again failed" for e in at.expander)
