"""lm-evaluation-harness, promptfoo and Every Eval Ever files, as the real tools wrote them
(tests/data/tools), imported through `python -m core import results` into a database file and
into a DuckLake (real PostgreSQL + SeaweedFS, tests/services.py); and each format's bad inputs:
one error naming the file (and the line, or the result), nothing of the file written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core_cli import run_core

TOOLS = Path(__file__).parent / "data" / "tools"
LME_A = TOOLS / "lm_eval" / "out" / "fixtures__fixture-model-a"
PF = TOOLS / "promptfoo" / "out.json"
EEE_MP = next((TOOLS / "eee" / "data" / "misprompt_sample").rglob("*_samples.jsonl"))


@pytest.fixture
def store_url(backend: str) -> str:
    done = run_core("init", "--db", backend)
    assert done.returncode == 0, done.stderr
    return backend


def _count(url: str, sql: str, params: list | None = None) -> int:
    from core.store import Store

    return int(Store.open(url).scalar(sql, params or []))


def _nothing(url: str) -> None:
    assert _count(url, "SELECT count(*) FROM runs") == 0
    assert _count(url, "SELECT count(*) FROM responses") == 0
    assert _count(url, "SELECT count(*) FROM results") == 0


def test_lm_eval_into_each_backend(store_url) -> None:
    """The harness's own aggregate again from the imported scores; the same folder again
    writes nothing."""
    args = ["import", "results", str(LME_A), "--db", store_url]
    done = run_core(*args, "--new-item-set", "lme", "--benchmark", "processbench")
    assert done.returncode == 0, done.stderr
    assert "imported 15 responses" in done.stdout
    results = json.loads(next(LME_A.glob("results_*.json")).read_text())
    theirs = results["results"]["processbench_first_error"]["exact_match,get-answer"]
    from core.store import Store

    ours = Store.open(store_url).scalar("SELECT avg(score) FROM results")
    assert ours == pytest.approx(theirs)
    again = run_core(*args, "--new-item-set", "lme", "--benchmark", "processbench")
    assert again.returncode == 0 and "already imported" in again.stdout
    assert _count(store_url, "SELECT count(*) FROM responses") == 15


def test_promptfoo_into_each_backend(store_url) -> None:
    done = run_core(
        "import", "results", str(PF), "--db", store_url, "--new-item-set", "pf",
        "--benchmark", "pcbench", "--variant", "proactive",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _count(store_url, "SELECT count(*) FROM runs") == 2
    data = json.loads(PF.read_text())
    successes = data["results"]["stats"]["successes"]
    assert _count(store_url, "SELECT count(*) FROM results WHERE correct") == successes == 10
    assert _count(store_url, "SELECT count(*) FROM responses") == 14


def test_eee_into_each_backend(store_url) -> None:
    """Matched by text to the store's own Mis-prompt sample."""
    done = run_core("import", "results", str(EEE_MP), "--db", store_url)
    assert done.returncode == 0, done.stderr
    assert "imported 10 responses" in done.stdout
    assert _count(store_url, "SELECT count(*) FROM runs WHERE item_set = 'misprompt-sample'") == 1


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _lm_eval_copy(tmp_path: Path, lines: list[str]) -> Path:
    """The harness's output folder with its samples file's lines replaced."""
    folder = tmp_path / LME_A.name
    folder.mkdir()
    results = next(LME_A.glob("results_*.json"))
    (folder / results.name).write_bytes(results.read_bytes())
    samples = next(LME_A.glob("samples_*.jsonl"))
    (folder / samples.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / samples.name


def _refused(url: str, path: Path, pattern: str, *extra: str) -> None:
    import re

    done = run_core("import", "results", str(path), "--db", url, *extra)
    assert done.returncode == 1, done.stdout
    assert str(path) in done.stderr and re.search(pattern, done.stderr), done.stderr
    assert "nothing of this file was written" in done.stderr
    _nothing(url)


NEW = ("--new-item-set", "x", "--benchmark", "processbench")


def test_bad_lm_eval_files(store_url, tmp_path) -> None:
    good = _lines(next(LME_A.glob("samples_*.jsonl")))
    cut = _lm_eval_copy(tmp_path, [*good[:14], good[14][: len(good[14]) // 2]])  # truncated
    _refused(store_url, cut, rf"{cut.name}:15: not JSON", *NEW)
    (tmp_path / LME_A.name).rename(tmp_path / "cut")
    nodoc = json.loads(good[6])
    del nodoc["doc_id"]
    bad = _lm_eval_copy(tmp_path, [*good[:6], json.dumps(nodoc), *good[7:]])
    _refused(store_url, bad, rf"{bad.name}:7: not an lm-evaluation-harness sample", *NEW)
    bad.write_bytes(b"\n".join(x.encode() for x in good[:3]) + b"\n\xff\xfe{}\n")
    _refused(store_url, bad, r"not UTF-8 text", *NEW)
    results = next(bad.parent.glob("results_*.json"))
    results.write_text(results.read_text()[:200])
    _refused(store_url, bad.parent, rf"{results.name}: not readable as JSON", *NEW)


def test_bad_promptfoo_files(store_url, tmp_path) -> None:
    data = json.loads(PF.read_text())
    path = tmp_path / "out.json"
    path.write_text(PF.read_text()[:5000])
    _refused(
        store_url, path, r"not readable as JSON \(.*line \d+ column \d+", "--format", "promptfoo"
    )
    older = {**data, "results": {**data["results"], "version": 2}}
    path.write_text(json.dumps(older))
    _refused(store_url, path, r"promptfoo results version 2; this program reads version 3")
    results = [dict(r) for r in data["results"]["results"]]
    results[9] = {**results[9], "vars": {"query": results[9]["vars"]["query"]}}
    del results[9]["testIdx"]
    path.write_text(json.dumps({**data, "results": {**data["results"], "results": results}}))
    _refused(
        store_url, path, r"results\[9\]: a result without testIdx or an id variable",
        "--new-item-set", "pf", "--benchmark", "pcbench",
    )  # fmt: skip


def test_bad_eee_files(store_url, tmp_path) -> None:
    good = _lines(EEE_MP)
    path = tmp_path / EEE_MP.name
    path.write_text("\n".join([*good[:4], "{not json", *good[5:]]) + "\n")
    _refused(store_url, path, rf"{path.name}:5: not JSON")
    record = json.loads(good[7])
    del record["evaluation"]
    path.write_text("\n".join([*good[:7], json.dumps(record), *good[8:]]) + "\n")
    _refused(store_url, path, rf"{path.name}:8: not an Every Eval Ever instance record")
    path.write_text("\n".join([*good[:9], json.dumps({**json.loads(good[9]), "sample_id": " "})]))
    _refused(store_url, path, rf"{path.name}:10: empty sample_id")


def test_a_failure_after_batches_were_written_leaves_nothing(store_url, tmp_path, monkeypatch):
    """All or nothing on both backends: an lm-eval file whose last line repeats a document is
    refused while its run is being written, after earlier batches went in; none stay."""
    import core.sources.service as service

    monkeypatch.setattr(service, "BATCH", 4)
    good = _lines(next(LME_A.glob("samples_*.jsonl")))
    path = _lm_eval_copy(tmp_path, [*good, good[0]])
    _refused(store_url, path, r"appears twice in run", *NEW)
    assert _count(store_url, "SELECT count(*) FROM items WHERE item_set = 'x'") == 0
