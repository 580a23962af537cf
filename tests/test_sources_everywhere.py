"""Imported runs work everywhere a native run does, with no special case: Overview (the tool as
the run's source), the responses grid beside a native run on the same items, `compare` across
tools, `rescore` with this program's judge, the blind audit, export, bundles, `store copy` and
the lake (real PostgreSQL + SeaweedFS fixtures)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core.benchmarks.pcbench.metrics import metrics
from core.services import overview
from core.services.audit import audit_queue, create_audit
from core.services.grid import grid_page
from core.sources.service import Options, import_file
from core.store import Store
from tests.core_cli import run_core
from tests.fake_openai import FakeOpenAI

TOOLS = Path(__file__).parent / "data" / "tools"
PC_INSPECT = TOOLS / "inspect" / "pcbench_a.eval"
AUTHORS = Path("/work/shared/data/pcbench_authors")


def responder(body: dict) -> str:
    """A model that answers every problem, and a judge that says a response critiques the
    premise when it contains 'contradict' (so the verdicts follow the answers)."""
    text = body["messages"][-1]["content"]
    if "response_format" not in body:
        return "The problem contradicts itself." if len(text) % 2 else "The answer is 4."
    answer = text.split("### Response to be Evaluated")[-1].split("### Output Format")[0]
    verdict = "True" if "contradict" in answer.lower() else "False"
    return json.dumps({"if_find_contradiction": verdict, "basis": "scripted"})


@pytest.fixture
def mixed(initialised_store, db_path):
    """pcbench-sample with a native run (model + judge on the scripted server) and the
    Inspect log's run on the same problems."""
    with FakeOpenAI(responder=responder) as server:
        done = run_core(
            "run", "pcbench", "--items", "pcbench-sample", "--run-name", "native",
            "--variants", "proactive", "--base-url", server.url, "--model", "m",
            "--judge-base-url", server.url, "--judge-model", "j", "--quiet",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    plans, _ = import_file(initialised_store, PC_INSPECT, Options(name="inspect-a"))
    assert plans[0].item_set == "pcbench-sample"
    return initialised_store


def test_overview_names_the_tool(mixed) -> None:
    runs = overview.runs_overview(mixed).set_index("run_id")
    assert runs.loc["inspect-a", "source"] == "inspect_ai"
    assert runs.loc["native", "source"] == "workbench"
    assert runs.loc["inspect-a", "responses"] == 6


def test_grid_shows_the_imported_run_beside_the_native_one(mixed) -> None:
    page = grid_page(mixed, "pcbench", "pcbench-sample", ("native", "inspect-a"))
    frame = page.frame if hasattr(page, "frame") else page.rows
    text = frame.to_csv()
    answers = {
        r[0] for r in mixed.rows("SELECT response FROM responses WHERE run_id = 'inspect-a'")
    }
    assert any(a[:30] in text for a in answers if a)
    assert "native" in " ".join(map(str, frame.columns)) and "inspect-a" in " ".join(
        map(str, frame.columns)
    )


def test_compare_across_tools_and_rescore_with_our_judge(mixed, db_path) -> None:
    with FakeOpenAI(responder=responder) as judge:
        done = run_core(
            "rescore", "--source", "inspect-a", "--as", "ours", "--judge-base-url", judge.url,
            "--judge-model", "j", "--quiet",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        asked = [r["body"]["model"] for r in judge.chat_requests]
    assert asked == ["j"] * 6  # only the judge: the imported answers are judged as stored
    table = metrics(mixed, "inspect-a", "ours")
    overall = table[(table["error_type"] == "all") & (table["difficulty"] == "all")].iloc[0]
    answers = mixed.rows(
        "SELECT response FROM responses WHERE run_id = 'inspect-a' AND status = 'ok'"
    )
    expected = sum("contradict" in (a[0] or "").lower() for a in answers)
    assert 0 < expected < 6  # the scripted replies critique some problems, not all
    assert (overall["n"], overall["critiqued"]) == (6, expected)
    from core.services.compare_runs import load_pairs

    pairs = load_pairs(mixed, "native", "inspect-a", None)
    assert len(pairs.frame) == 6  # the six problems both answered, paired by item id
    mine = dict(mixed.rows(
        "SELECT item_id, correct FROM current_results WHERE run_id = 'inspect-a'"
    ))  # fmt: skip
    assert dict(zip(pairs.frame["item_id"], pairs.frame["correct_cand"] == 1.0)) == mine
    done = run_core("compare", "--baseline", "native", "--candidate", "inspect-a")
    assert done.returncode == 0, done.stderr
    assert "inspect-a (judging ours)" in done.stdout


def test_audit_draws_from_an_imported_run(mixed, db_path) -> None:
    with FakeOpenAI(responder=responder) as judge:
        assert run_core(
            "rescore", "--source", "inspect-a", "--as", "ours", "--judge-base-url", judge.url,
            "--judge-model", "j", "--quiet",
        ).returncode == 0  # fmt: skip
    info = create_audit(mixed, "imported-audit", ["inspect-a"], fraction=1.0)
    queue = audit_queue(mixed, info.name)
    assert len(queue) == 6 and set(queue["run_id"]) == {"inspect-a"}


def test_export_bundle_and_store_copy_carry_it(mixed, db_path, tmp_path) -> None:
    out = tmp_path / "rows.csv"
    assert run_core("export", "--source", "inspect-a", "--out", str(out)).returncode == 0
    assert len(out.read_text().strip().splitlines()) >= 7
    bundle = tmp_path / "bundle"
    assert run_core("export", "--source", "inspect-a", "--bundle", str(bundle)).returncode == 0
    other = tmp_path / "other.duckdb"
    done = run_core("import", "run", str(bundle), "--db", str(other))
    assert done.returncode == 0, done.stderr
    assert (
        Store.open(other).scalar(
            "SELECT params->>'$.source.tool' FROM runs WHERE run_id = 'inspect-a'"
        )
        == "inspect_ai"
    )
    copy = tmp_path / "copy.duckdb"
    done = run_core("store", "copy", "--from", str(db_path), "--to", str(copy))
    assert done.returncode == 0, done.stderr
    assert Store.open(copy).scalar(
        "SELECT count(*) FROM results WHERE run_id = 'inspect-a'"
    ) == mixed.scalar("SELECT count(*) FROM results WHERE run_id = 'inspect-a'")


@pytest.mark.skipif(not AUTHORS.is_dir(), reason="shared data not present")
def test_into_a_lake(lake) -> None:
    """The same files into a DuckLake: rates, idempotence, refusal."""
    store = Store.open(lake.url)
    done = run_core("init", "--db", lake.url)
    assert done.returncode == 0, done.stderr
    path = AUTHORS / "gpt-4o_eval_result.jsonl"
    first = run_core("import", "results", str(path), "--db", lake.url)
    assert first.returncode == 0, first.stderr
    table = metrics(store, "pca-gpt-4o")
    overall = table[(table["error_type"] == "all") & (table["difficulty"] == "all")]
    assert dict(zip(overall["variant"], overall["critiqued"])) == {
        "proactive": 132,
        "assisted": 689,
    }
    again = run_core("import", "results", str(path), "--db", lake.url)
    assert again.returncode == 0 and "already imported" in again.stdout
    assert store.scalar("SELECT count(*) FROM results WHERE run_id = 'pca-gpt-4o'") == 2400
    done = run_core("import", "results", str(PC_INSPECT), "--db", lake.url, "--name", "pca-gpt-4o")
    assert done.returncode == 1 and re.search("already has a run 'pca-gpt-4o'", done.stderr)
    done = run_core("import", "results", str(PC_INSPECT), "--db", lake.url)
    assert done.returncode == 0, done.stderr
    assert store.scalar("SELECT count(*) FROM responses WHERE run_id LIKE 'insp-%'") == 6
