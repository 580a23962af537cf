"""lm-evaluation-harness 0.4.13 output folders and promptfoo 0.120.0 `-o out.json`, as the real
tools wrote them (tests/data/tools, README.md there), imported as runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.sources import detect
from core.sources.service import Options, import_file, plan_file

TOOLS = Path(__file__).parent / "data" / "tools"
LME = TOOLS / "lm_eval" / "out"
PF = TOOLS / "promptfoo" / "out.json"


def _samples_file(model: str) -> Path:
    return next((LME / model).glob("samples_*.jsonl"))


def test_lm_eval_folder_and_files_are_detected() -> None:
    assert detect(LME / "fixtures__fixture-model-a") == "lm-eval"
    assert detect(_samples_file("fixtures__fixture-model-a")) == "lm-eval"
    assert detect(next((LME / "fixtures__fixture-model-a").glob("results_*.json"))) == "lm-eval"


@pytest.mark.parametrize("model", ["fixtures__fixture-model-a", "fixtures__fixture-model-b"])
def test_lm_eval_run_equals_the_harness_aggregate(initialised_store, model) -> None:
    """Matched by the document's own text (the prompt is a chat template), ids from doc.id;
    the mean of the imported scores is the harness's own exact_match in results_*.json."""
    plans = plan_file(initialised_store, LME / model, Options())
    assert (plans[0].matched, plans[0].unmatched) == (12, 3)  # new-0..new-2 are in no sample
    plans, written = import_file(
        initialised_store, LME / model, Options(new_item_set="lme-items", benchmark="processbench")
    )
    assert written == 15
    run_id = plans[0].run_id
    results = json.loads(next((LME / model).glob("results_*.json")).read_text())
    theirs = results["results"]["processbench_first_error"]["exact_match,get-answer"]
    mean = initialised_store.scalar("SELECT avg(score) FROM results WHERE run_id = ?", [run_id])
    assert mean == pytest.approx(theirs)
    ids = {
        r[0]
        for r in initialised_store.rows("SELECT item_id FROM responses WHERE run_id = ?", [run_id])
    }
    assert {"gsm8k-0", "new-2"} <= ids
    row = initialised_store.rows(
        "SELECT x.response, v.answer, v.correct FROM responses x JOIN results v "
        "USING (run_id, item_id, variant, epoch) WHERE run_id = ? AND item_id = 'gsm8k-0'",
        [run_id],
    )[0]
    line = json.loads(_samples_file(model).read_text().splitlines()[0])
    assert line["doc"]["id"] == "gsm8k-0"
    assert row == (line["resps"][0][0], line["filtered_resps"][0], line["exact_match"] == 1.0)
    params = json.loads(
        initialised_store.scalar("SELECT params FROM runs WHERE run_id = ?", [run_id])
    )
    assert params["source"]["tool_version"] == "0.4.13"


def test_lm_eval_matches_the_stored_items_when_all_are_known(initialised_store, tmp_path) -> None:
    """The 12 known documents alone: matched to processbench-sample by text, no new items."""
    src = _samples_file("fixtures__fixture-model-a")
    lines = [x for x in src.read_text().splitlines() if '"new-' not in x.split('"doc":')[1][:40]]
    mine = tmp_path / src.name
    mine.write_text("\n".join(lines) + "\n")
    plans, written = import_file(initialised_store, mine, Options())
    assert written == 12 and plans[0].item_set == "processbench-sample"


def test_promptfoo_one_run_per_provider_without_api_keys(initialised_store) -> None:
    assert detect(PF) == "promptfoo"
    plans, written = import_file(
        initialised_store,
        PF,
        Options(new_item_set="pf-items", benchmark="pcbench", variant="proactive"),
    )
    assert written == 14 and len(plans) == 2
    assert {p.run.model for p in plans} == {
        "openai:chat:fixture-model-a",
        "openai:chat:fixture-model-b",
    }
    data = json.loads(PF.read_text())
    by = {(r["provider"]["id"], str(r["vars"].get("pid"))): r for r in data["results"]["results"]}
    rows = initialised_store.rows(
        "SELECT ru.model, x.item_id, x.response, v.correct, v.score, v.explanation FROM responses x "
        "JOIN runs ru USING (run_id) JOIN results v USING (run_id, item_id, variant, epoch)"
    )
    assert len(rows) == 14
    for model, item, text, correct, score, why in rows:
        theirs = by[(model, item)]
        assert text == theirs["response"]["output"]
        assert correct == theirs["success"] and score == pytest.approx(theirs["score"])
        assert why == theirs["gradingResult"]["reason"]
    assert sum(r[3] for r in rows) == data["results"]["stats"]["successes"] == 10
    dump = json.dumps(initialised_store.rows("SELECT params FROM runs")) + json.dumps(
        initialised_store.rows("SELECT metadata, explanation FROM results")
    )
    assert "apiKey" not in dump and "dummy" not in dump


def test_a_big_promptfoo_file_is_read_as_a_stream(tmp_path) -> None:
    """out.json is read with ijson, one result at a time: reading a ~20 MB file (the fixture's
    results repeated as further tests) allocates a small fraction of its size, where parsing it
    whole takes several times its size."""
    import tracemalloc

    from core.sources.promptfoo import read

    data = json.loads(PF.read_text())
    base = data["results"]["results"]
    copies = []
    for k in range(600):
        for result in base:
            test = result.get("testIdx") or 0
            copies.append({**result, "testIdx": test + 1000 * (k + 1), "vars": {}})
    data["results"]["results"] = copies
    big = tmp_path / "out.json"
    big.write_text(json.dumps(data))
    size = big.stat().st_size
    assert size > 15_000_000
    tracemalloc.start()
    try:
        runs = read(big)
        n = sum(1 for run in runs for _ in run.samples())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == len(copies)
    assert peak < size / 5, (peak, size)  # whole: several times the size
