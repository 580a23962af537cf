"""lm-evaluation-harness output (`lm_eval … --output_path DIR --log_samples`, 0.4.x).

The harness writes, per model, `results_<date>.json` (the aggregate: `results`, `configs`,
`config` with model and model_args, `lm_eval_version`, `model_name`, `git_hash`, `date`) and
one `samples_<task>_<date>.jsonl` per task: `doc_id`, `doc` (the data set's record), `target`,
`arguments` ({"gen_args_0": {"arg_0": the prompt, "arg_1": generation kwargs}}), `resps` (the
raw generations), `filtered_resps` (after the task's filter, e.g. the extracted answer),
`filter`, `metrics` (names) and each metric's value under its name, plus doc/prompt/target
hashes.

A path may be a samples file (its results file, same date, is read beside it when present),
a results file (every task's samples file of that date), or a folder holding them (every
results file in it). One run per task. The answer text is the raw generation, `answer` the
filtered one; the first metric gives `score` (and `correct` when it is 0 or 1), every metric is
kept in `metadata.metrics`. Items are matched by the prompt's text or any text field of the
document, so a task over our items' own text finds them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.engine.results import Response, Result
from core.sources import Sample, SourceError, SourceRun, file_sha256, json_lines

NAME = "lm-eval"
DESCRIPTION = "lm-evaluation-harness output (a samples_*.jsonl or its folder)"
TOOL = "lm_eval"
_SAMPLES = re.compile(r"^samples_(.+)_(\d{4}-\d{2}-\d{2}T[\d.\-]+)\.jsonl$")
_RESULTS = re.compile(r"^results_(\d{4}-\d{2}-\d{2}T[\d.\-]+)\.json$")


def detect(path: Path, head: bytes) -> bool:
    if path.is_dir():
        return any(_RESULTS.match(p.name) or _SAMPLES.match(p.name) for p in path.rglob("*.json*"))
    if _SAMPLES.match(path.name) or _RESULTS.match(path.name):
        return True
    return b'"doc_id"' in head and b'"filtered_resps"' in head


def _prompt(arguments: Any) -> str | None:
    """The prompt of the first request (a chat model's JSON message list: its user turns)."""
    first: Any = None
    if isinstance(arguments, dict) and arguments:
        args = next(iter(arguments.values()))
        first = args.get("arg_0") if isinstance(args, dict) else None
    elif isinstance(arguments, list) and arguments:
        first = arguments[0][0] if isinstance(arguments[0], list) and arguments[0] else None
    first = _first(first)  # 0.4.13 keeps a chat prompt as a one-element list
    if not isinstance(first, str):
        return None
    try:
        messages = json.loads(first)
    except ValueError:
        return first
    if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
        users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        return users[-1] if users else first
    return first


def _first(value: Any) -> Any:
    while isinstance(value, list) and value:
        value = value[0]
    return None if isinstance(value, list) else value


def _sample(n: int, obj: dict[str, Any], where: str) -> Sample:
    if obj.get("doc_id") is None:
        raise SourceError(f"{where}:{n}: a sample without a doc_id")
    doc: dict[str, Any] = obj["doc"] if isinstance(obj.get("doc"), dict) else {}
    metrics = [m for m in obj.get("metrics") or [] if m in obj]
    values = {m: obj[m] for m in metrics}
    text = _first(obj.get("resps"))
    filtered = _first(obj.get("filtered_resps"))
    result = None
    if metrics:
        value = values[metrics[0]]
        number = float(value) if isinstance(value, int | float) else None
        result = Result(
            status="ok",
            answer=None if filtered is None else str(filtered),
            correct=(number == 1.0) if number in (0.0, 1.0) else None,
            score=number,
            metadata={
                "metric": metrics[0],
                "metrics": values,
                "filter": obj.get("filter"),
                "doc_hash": obj.get("doc_hash"),
                "prompt_hash": obj.get("prompt_hash"),
            },
        )
    own = doc.get("id")  # a data set with ids of its own (ours): the item id, else doc_id
    return Sample(
        key=str(own) if isinstance(own, str | int) and str(own).strip() else str(obj["doc_id"]),
        input=_prompt(obj.get("arguments")),
        target=None if obj.get("target") is None else str(obj["target"]),
        response=Response(status="ok", text=None if text is None else str(text)),
        result=result,
        meta={"doc": doc, "doc_id": obj["doc_id"]},
        alternatives=tuple(str(v) for v in doc.values() if isinstance(v, str) and v.strip()),
    )


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, obj in json_lines(path):
        if not isinstance(obj, dict) or "doc_id" not in obj or "resps" not in obj:
            raise SourceError(f"{path}:{n}: not an lm-evaluation-harness sample (no doc_id, resps)")
        yield n, obj


def _results(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SourceError(f"{path}: not readable as JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise SourceError(f"{path}: not an lm-evaluation-harness results file (no 'results')")
    return data


def _model(results: dict[str, Any]) -> str:
    name = results.get("model_name")
    if name:
        return str(name)
    args = str((results.get("config") or {}).get("model_args") or "")
    found = re.search(r"(?:^|,)\s*(?:model|pretrained)=([^,]+)", args)
    return found.group(1) if found else str((results.get("config") or {}).get("model") or "unknown")


def _run(
    samples_path: Path, task: str, results: dict[str, Any] | None, results_path: Path | None
) -> SourceRun:
    def samples() -> Iterator[Sample]:
        for n, obj in _lines(samples_path):
            yield _sample(n, obj, str(samples_path))

    config = (results or {}).get("config") or {}
    task_config = ((results or {}).get("configs") or {}).get(task) or {}
    return SourceRun(
        tool=TOOL,
        task=task,
        model=_model(results) if results else "unknown",
        samples=samples,
        provenance={
            "tool": TOOL,
            "tool_version": (results or {}).get("lm_eval_version"),
            "file": samples_path.name,
            "sha256": file_sha256(samples_path),
            "format": NAME,
            "results_file": results_path.name if results_path else None,
            "results_sha256": file_sha256(results_path) if results_path else None,
            "git_hash": (results or {}).get("git_hash"),
            "date": (results or {}).get("date"),
            "model": config.get("model"),
            "task_version": ((results or {}).get("versions") or {}).get(task),
            "aggregate": ((results or {}).get("results") or {}).get(task),
        },
        params={
            k: v
            for k, v in {
                "model_args": config.get("model_args"),
                "gen_kwargs": config.get("gen_kwargs") or task_config.get("generation_kwargs"),
                "num_fewshot": ((results or {}).get("n-shot") or {}).get(task),
                "limit": config.get("limit"),
            }.items()
            if v not in (None, {}, "")
        },
        short="lme",
    )


def read(path: Path) -> list[SourceRun]:
    if path.is_dir():
        found = sorted(p for p in path.rglob("results_*.json") if _RESULTS.match(p.name))
        if not found:
            raise SourceError(f"{path}: no lm-evaluation-harness results_*.json in the folder")
        return [run for results in found for run in _from_results(results)]
    if _RESULTS.match(path.name):
        return _from_results(path)
    match = _SAMPLES.match(path.name)
    task, date = (match.group(1), match.group(2)) if match else (path.stem, "")
    results_path = path.with_name(f"results_{date}.json") if date else None
    results = _results(results_path) if results_path and results_path.is_file() else None
    if not results_path or not results_path.is_file():
        results_path = None
    return [_run(path, task, results, results_path)]


def _from_results(path: Path) -> list[SourceRun]:
    results = _results(path)
    date = _RESULTS.match(path.name).group(1)  # type: ignore[union-attr]
    runs = []
    for task in results["results"]:
        samples = path.with_name(f"samples_{task}_{date}.jsonl")
        if samples.is_file():
            runs.append(_run(samples, task, results, path))
    if not runs:
        raise SourceError(
            f"{path}: no samples_<task>_{date}.jsonl beside it (run lm_eval with --log_samples)"
        )
    return runs
