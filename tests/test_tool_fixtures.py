"""The other tools' files in tests/data/tools/ are what their README says: every input that an
importer is meant to match to a stored item is that item's stored prompt, byte for byte, under
the sample ids the README names; the new items are in no sample; the Inspect logs are Zstandard
zips; scores differ between the two scripted models. (The files themselves were written by the
real tools: tests/data/tools/make_fixtures.py.)"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tests" / "data" / "tools"
SAMPLES = ROOT / "data" / "samples"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def stored_prompts() -> dict[str, str]:
    """item id -> the prompt the store keeps for it, for the four sample sets."""
    prompts = {r["id"]: r["problem"] for r in _jsonl(SAMPLES / "processbench_sample.jsonl")}
    bbm = _jsonl(SAMPLES / "bbm_sample.jsonl")
    prompts |= {f"bbm_sample:{i}": r["input"] for i, r in enumerate(bbm, start=1)}
    prompts |= {r["pid"]: r["ill_query"] for r in _jsonl(SAMPLES / "pcbench_sample.jsonl")}
    with (SAMPLES / "misprompt_sample.csv").open(encoding="utf-8", newline="") as handle:
        prompts |= {r["id"]: r["question"] for r in csv.DictReader(handle)}
    return prompts


PROMPTS = stored_prompts()
NEW_IDS = {"new-0", "new-1", "new-2", "new-pc-1", "new-pc-2"}


def check_input(item_id: str, text: str) -> None:
    if item_id in NEW_IDS:
        assert text not in PROMPTS.values(), item_id
    else:
        assert PROMPTS[item_id] == text, item_id


def eval_members(path: Path) -> dict[str, Any]:
    """The JSON members of an Inspect .eval (Zstandard, zip method 93)."""
    zstandard = pytest.importorskip("zstandard")
    out: dict[str, Any] = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            assert info.compress_type == 93, (path.name, info.filename)
            data = zstandard.ZstdDecompressor().stream_reader(_raw(archive, info)).read()
            out[info.filename] = json.loads(data)
    return out


def _raw(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> io.BytesIO:
    """A member's compressed bytes (zipfile cannot decompress method 93 itself)."""
    assert archive.fp is not None
    archive.fp.seek(info.header_offset)
    header = archive.fp.read(30)
    name_len = int.from_bytes(header[26:28], "little")
    extra_len = int.from_bytes(header[28:30], "little")
    archive.fp.seek(info.header_offset + 30 + name_len + extra_len)
    return io.BytesIO(archive.fp.read(info.compress_size))


def test_inspect_eval_members_are_zstandard() -> None:
    for path in sorted((TOOLS / "inspect").glob("*.eval")):
        with zipfile.ZipFile(path) as archive:
            methods = {info.compress_type for info in archive.infolist()}
            names = archive.namelist()
        assert methods == {93}, path.name
        assert "header.json" in names and any(n.startswith("samples/") for n in names)


def test_inspect_json_log_inputs_are_stored_prompts() -> None:
    log = json.loads((TOOLS / "inspect" / "first_error_a.json").read_text(encoding="utf-8"))
    assert log["status"] == "success" and log["eval"]["packages"]["inspect_ai"] == "0.3.285"
    samples = log["samples"]
    assert len(samples) == 30 and {s["epoch"] for s in samples} == {1, 2}
    for sample in samples:
        check_input(sample["id"], sample["input"])
        assert set(sample["scores"]) == {"match", "first_error_index"}


@pytest.mark.parametrize(
    ("name", "status", "n_samples"),
    [
        ("first_error_a.eval", "success", 30),
        ("first_error_b.eval", "success", 30),
        ("first_error_partial_error.eval", "error", 13),
        ("misprompt_a.eval", "success", 10),
        ("pcbench_a.eval", "success", 6),
    ],
)
def test_inspect_eval_logs(name: str, status: str, n_samples: int) -> None:
    members = eval_members(TOOLS / "inspect" / name)
    assert members["header.json"]["status"] == status
    samples = [v for k, v in members.items() if k.startswith("samples/")]
    assert len(samples) == n_samples
    for sample in samples:
        check_input(sample["id"], sample["input"])


def test_inspect_log_without_ids_is_numbered_in_file_order() -> None:
    members = eval_members(TOOLS / "inspect" / "bbm_no_ids_a.eval")
    samples = [v for k, v in members.items() if k.startswith("samples/")]
    assert sorted(s["id"] for s in samples) == list(range(1, 13))
    for sample in samples:
        check_input(f"bbm_sample:{sample['id']}", sample["input"])


def test_inspect_two_models_score_differently() -> None:
    scores = {}
    for model in "ab":
        header = eval_members(TOOLS / "inspect" / f"first_error_{model}.eval")["header.json"]
        match = next(s for s in header["results"]["scores"] if s["name"] == "match")
        scores[model] = match["metrics"]["accuracy"]["value"]
    assert scores["a"] != scores["b"] and 0 < min(scores.values()) < max(scores.values()) < 1


def test_lm_eval_docs_are_stored_rows() -> None:
    stored = {r["id"]: r for r in _jsonl(SAMPLES / "processbench_sample.jsonl")}
    accuracies = []
    for folder in sorted((TOOLS / "lm_eval" / "out").iterdir()):
        (results,) = folder.glob("results_*.json")
        (samples,) = folder.glob("samples_processbench_first_error_*.jsonl")
        assert Path(results.name).stem[8:] == Path(samples.name).stem.split("_error_")[1]
        lines = _jsonl(samples)
        assert len(lines) == 15
        for line in lines:
            doc = line["doc"]
            if doc["id"] not in NEW_IDS:
                assert doc == stored[doc["id"]]
            check_input(doc["id"], doc["problem"])
        data = json.loads(results.read_text(encoding="utf-8"))
        assert data["lm_eval_version"] == "0.4.13"
        accuracies.append(data["results"]["processbench_first_error"]["exact_match,get-answer"])
        assert accuracies[-1] == sum(line["exact_match"] for line in lines) / len(lines)
    assert len(accuracies) == 2 and accuracies[0] != accuracies[1]


def test_promptfoo_vars_are_stored_prompts() -> None:
    out = json.loads((TOOLS / "promptfoo" / "out.json").read_text(encoding="utf-8"))
    assert out["metadata"]["promptfooVersion"] == "0.120.0"
    results = out["results"]
    assert results["version"] == 3 and len(results["results"]) == 14
    for result in results["results"]:
        check_input(result["vars"]["pid"], result["vars"]["query"])
        assert set(result["namedScores"]) == {"critique", "no_answer", "rubric"}
        assert len(result["gradingResult"]["componentResults"]) == 3
    assert {r["success"] for r in results["results"]} == {True, False}


def test_eee_instances_are_stored_prompts() -> None:
    files = sorted((TOOLS / "eee" / "data").rglob("*_samples.jsonl"))
    assert len(files) == 3
    for path in files:
        for line in _jsonl(path):
            assert line["schema_version"] == "0.3.0"
            item_id = line["sample_id"]
            if path.parts[-4] == "bbm_sample":
                item_id = f"bbm_sample:{item_id}"
            check_input(item_id, line["input"]["raw"])
    schema = json.loads(
        (TOOLS / "eee" / "schema" / "instance_level_eval.schema.json").read_text(encoding="utf-8")
    )
    assert {"evaluation_id", "model_id", "sample_id", "input", "evaluation"} <= set(
        schema["required"]
    )
