"""Every Eval Ever: `export --format eee` validates against EEE's own schemas (copied unchanged
in tests/data/tools/eee/schema), and an Inspect log exported and imported back gives the same
results (core.sources.eee)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

from core.sources import SourceError, detect
from core.sources.service import Options, import_file
from tests.core_cli import run_core

HERE = Path(__file__).parent
SCHEMAS = HERE / "data" / "tools" / "eee" / "schema"
LOGS = HERE / "data" / "tools" / "inspect"
AUTHORS = Path("/work/shared/data/pcbench_authors")


def _rows(store, run_id: str) -> list[tuple]:
    """Responses with their results under the run's current judging (what an export holds)."""
    return store.rows(
        "SELECT x.item_id, x.variant, x.epoch, x.status, x.response, x.error, x.prompt_tokens, "
        "x.completion_tokens, v.status, v.answer, v.correct, v.score, v.labels, v.explanation, "
        "v.metadata FROM responses x LEFT JOIN current_results v "
        "USING (run_id, item_id, variant, epoch) "
        "WHERE run_id = ? ORDER BY ALL",
        [run_id],
    )


def _export(run_id: str, out: Path) -> None:
    done = run_core("export", "--source", run_id, "--format", "eee", "--out", str(out))
    assert done.returncode == 0, done.stderr


def test_inspect_log_round_trip_through_eee(initialised_store, tmp_path) -> None:
    plans, _ = import_file(
        initialised_store,
        LOGS / "first_error_b.eval",
        Options(new_item_set="fe-b", benchmark="processbench"),
    )
    run_id = plans[0].run_id
    out = tmp_path / "fe_b.jsonl"
    _export(run_id, out)
    assert detect(out) == "eee"
    back, written = import_file(initialised_store, out, Options(name="fe-b-back"))
    assert written == 30 and back[0].item_set == "fe-b" and back[0].matched == 15
    assert _rows(initialised_store, "fe-b-back") == _rows(initialised_store, run_id)
    assert (
        initialised_store.scalar(
            "SELECT params->>'$.source.tool' FROM runs WHERE run_id = 'fe-b-back'"
        )
        == "every_eval_ever"
    )


def test_export_follows_the_eee_schemas(initialised_store, tmp_path) -> None:
    plans, _ = import_file(initialised_store, LOGS / "misprompt_a.eval", Options())
    out = tmp_path / "mp.jsonl"
    _export(plans[0].run_id, out)
    instance = json.loads((SCHEMAS / "instance_level_eval.schema.json").read_text())
    aggregate = json.loads((SCHEMAS / "eval.schema.json").read_text())
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 10
    for line in lines:
        jsonschema.validate(line, instance)
    summary = json.loads(out.with_suffix(".json").read_text())
    jsonschema.validate(summary, aggregate)
    assert summary["detailed_evaluation_results"]["total_rows"] == 10
    correct = [line["evaluation"]["score"] for line in lines]
    assert summary["evaluation_results"][0]["score_details"]["score"] == pytest.approx(
        sum(correct) / len(correct)
    )


@pytest.mark.skipif(not AUTHORS.is_dir(), reason="shared data not present")
def test_verdicts_without_answers_round_trip(initialised_store, tmp_path) -> None:
    """A run with labels and no answer texts (the PCBench authors' verdicts) comes back with
    its labels, explanation and rates."""
    from core.benchmarks.pcbench.metrics import metrics

    import_file(initialised_store, AUTHORS / "Qwen3-8B_eval_result.jsonl", Options())
    out = tmp_path / "qwen.jsonl"
    _export("pca-Qwen3-8B", out)
    import_file(initialised_store, out, Options(name="qwen-back"))
    assert _rows(initialised_store, "qwen-back") == _rows(initialised_store, "pca-Qwen3-8B")
    a = metrics(initialised_store, "pca-Qwen3-8B").drop(columns=["source"])
    b = metrics(initialised_store, "qwen-back").drop(columns=["source"])
    pd.testing.assert_frame_equal(a, b)


def test_bad_eee_lines_name_the_line(initialised_store, tmp_path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        '{"evaluation_id": "e", "sample_id": "1", "answer_attribution": []}\n', encoding="utf-8"
    )
    with pytest.raises(SourceError, match=r"x.jsonl:1: not an Every Eval Ever instance record"):
        import_file(initialised_store, path, Options())
    assert initialised_store.scalar("SELECT count(*) FROM runs") == 0


def test_export_eee_refuses_other_suffixes_and_two_runs(initialised_store, tmp_path) -> None:
    import_file(initialised_store, LOGS / "misprompt_a.eval", Options())
    import_file(initialised_store, LOGS / "misprompt_b.eval", Options())
    runs = [r[0] for r in initialised_store.rows("SELECT run_id FROM runs ORDER BY 1")]
    done = run_core(
        "export", "--source", runs[0], "--format", "eee", "--out", str(tmp_path / "a.csv")
    )
    assert done.returncode == 1 and "NAME.jsonl" in done.stderr
    done = run_core(
        "export", "--source", ",".join(runs), "--format", "eee", "--out", str(tmp_path / "a.jsonl")
    )
    assert done.returncode == 1 and "one run" in done.stderr


EEE_DATA = HERE / "data" / "tools" / "eee" / "data"


def test_files_of_eees_own_converter(initialised_store) -> None:
    """every_eval_ever 0.3.0 converted our Inspect log (one line per sample × epoch × scorer):
    each scorer's result is a run; its scores equal the Inspect log's own run's, item by item."""
    path = next((EEE_DATA / "misprompt_sample").rglob("*_samples.jsonl"))
    assert detect(path) == "eee"
    plans, written = import_file(initialised_store, path, Options())
    assert written == 10 and plans[0].item_set == "misprompt-sample"
    source = json.loads(
        initialised_store.scalar("SELECT params FROM runs WHERE run_id = ?", [plans[0].run_id])
    )["source"]
    assert source["eval_library"]["version"] == "inspect_ai:0.3.285"
    inspect, _ = import_file(initialised_store, LOGS / "misprompt_a.eval", Options())
    mine = dict(initialised_store.rows(
        "SELECT item_id, score FROM results WHERE run_id = ?", [plans[0].run_id]))  # fmt: skip
    theirs = dict(initialised_store.rows(
        "SELECT item_id, score FROM results WHERE run_id = ?", [inspect[0].run_id]))  # fmt: skip
    assert mine == theirs and len(mine) == 10
    first_error = next((EEE_DATA / "processbench_sample+new").rglob("*_samples.jsonl"))
    plans, written = import_file(
        initialised_store, first_error, Options(new_item_set="fe-eee", benchmark="processbench")
    )
    assert len(plans) == 2 and written == 60  # two scorers × 15 samples × 2 epochs
    assert {p.run.task for p in plans} == {
        "first_error/match:accuracy",
        "first_error/first_error_index:mean",
    }
    epochs = initialised_store.rows(
        "SELECT DISTINCT epoch FROM responses WHERE run_id = ? ORDER BY 1", [plans[0].run_id]
    )
    assert epochs == [(1,), (2,)]
