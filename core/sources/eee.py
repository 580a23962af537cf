"""Every Eval Ever (github.com/evaleval/every_eval_ever, schema 0.3): the instance-level JSONL
(`InstanceLevelEvaluationLog`, one object a line) read as runs, and any run written as one
(`export --format eee`, with the aggregate `EvaluationLog` JSON beside it).

A line: `schema_version`, `evaluation_id`, `model_id`, `evaluation_name`, `sample_id`,
`interaction_type` (single_turn: `output.raw`; multi_turn / agentic: `messages`), `input`
(`raw`, `reference`), `answer_attribution` (the extracted answer), `evaluation` (`score`,
`is_correct`), optional `token_usage`, `performance`, `error`, `metadata`. One run per
(evaluation_id, model_id, evaluation_name). A sample id seen again in a run is its next epoch.

What EEE has no field for (the item's variant and epoch, a result's labels, explanation, a
`correct` that is unknown rather than false) travels in `metadata.workbench` when this program
wrote the file, so a run exported and imported back has the same results.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from core.engine.results import Response, Result
from core.sources import Sample, SourceError, SourceRun, file_sha256, json_lines

NAME = "eee"
DESCRIPTION = "an Every Eval Ever instance JSONL"
TOOL = "every_eval_ever"
SCHEMA_VERSION = "0.3.0"  # every_eval_ever/schemas/eval.schema.json "version"
REQUIRED = (
    "schema_version",
    "evaluation_id",
    "model_id",
    "evaluation_name",
    "sample_id",
    "interaction_type",
    "input",
    "answer_attribution",
    "evaluation",
)


def detect(path: Path, head: bytes) -> bool:
    return (
        path.is_file()
        and b'"evaluation_id"' in head
        and b'"sample_id"' in head
        and b'"answer_attribution"' in head
    )


# -- reading -----------------------------------------------------------------------------------


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for n, obj in json_lines(path):
        if not isinstance(obj, dict):
            raise SourceError(f"{path}:{n}: not a JSON object")
        missing = [k for k in REQUIRED if k not in obj]
        if missing:
            raise SourceError(
                f"{path}:{n}: not an Every Eval Ever instance record (missing {', '.join(missing)})"
            )
        if str(obj["sample_id"]).strip() == "":
            raise SourceError(f"{path}:{n}: empty sample_id")
        yield n, obj


def _ours(obj: dict[str, Any]) -> dict[str, Any]:
    """What this program wrote in `metadata.workbench` (a JSON string: EEE's metadata values
    are strings), or {} for another tool's file."""
    value = (
        (obj.get("metadata") or {}).get("workbench")
        if isinstance(obj.get("metadata"), dict)
        else None
    )
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _response_text(obj: dict[str, Any]) -> str | None:
    output = obj.get("output")
    if isinstance(output, dict) and isinstance(output.get("raw"), list) and output["raw"]:
        return str(output["raw"][-1])
    messages = obj.get("messages")
    if isinstance(messages, list):
        said = [m.get("content") for m in messages if isinstance(m, dict)]
        said = [m for m, x in zip(said, messages) if x.get("role") == "assistant" and m]
        return str(said[-1]) if said else None
    return None


def _epoch(value: Any, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None if value is None else float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _sample(n: int, obj: dict[str, Any], epoch: int) -> Sample:
    ours = _ours(obj)
    inp = obj.get("input") or {}
    evaluation = obj.get("evaluation") or {}
    attribution = obj.get("answer_attribution") or []
    extracted = (
        attribution[-1].get("extracted_value")
        if attribution and isinstance(attribution[-1], dict)
        else None
    )
    usage = obj.get("token_usage") or {}
    performance = obj.get("performance") or {}
    status = ours.get("response_status") or ("failed" if obj.get("error") else "ok")
    response = Response(
        status=status,
        text=_response_text(obj),
        error=obj.get("error"),
        prompt_tokens=usage.get("input_tokens", ours.get("prompt_tokens")),
        completion_tokens=usage.get("output_tokens", ours.get("completion_tokens")),
        latency_ms=performance.get("latency_ms", ours.get("latency_ms")),
        scores=ours.get("response_scores"),
    )
    if ours.get("result_status") is None and ours:
        result = None  # a response the workbench had not judged
    else:
        result = Result(
            status=ours.get("result_status") or "ok",
            judge_model=ours.get("judge_model"),
            answer=ours.get("answer", extracted),
            correct=ours["correct"] if "correct" in ours else bool(evaluation.get("is_correct")),
            score=ours["score"] if "score" in ours else _float(evaluation.get("score")),
            labels=ours.get("labels"),
            explanation=ours.get("explanation"),
            metadata=ours.get("result_metadata")
            or {
                "eee_line": n,
                "extraction_method": (attribution[-1] or {}).get("extraction_method")
                if attribution
                else None,
            },
        )
    reference = inp.get("reference")
    target = "\n".join(map(str, reference)) if isinstance(reference, list) else reference
    return Sample(
        key=str(obj["sample_id"]),
        input=inp.get("raw"),
        target=target or None,
        response=response,
        result=result,
        epoch=_epoch(ours.get("epoch") or (obj.get("metadata") or {}).get("epoch"), epoch),
        variant=ours.get("variant"),
    )


def read(path: Path) -> list[SourceRun]:
    if not path.is_file():
        raise SourceError(f"{path}: not a file")
    groups: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for _, obj in _lines(path):
        group = groups.setdefault(_group(obj), {"n": 0, "first": obj})
        group["n"] += 1
    if not groups:
        raise SourceError(f"{path}: no instance records")
    sha = file_sha256(path)
    aggregate = _aggregate_beside(path)
    runs = []
    several = len({k[3] for k in groups}) > 1
    for key, group in groups.items():
        evaluation_id, model_id, evaluation_name, result_id = key
        ours = _ours(group["first"])

        def samples(group_key: tuple[str, str, str, str] = key) -> Iterator[Sample]:
            seen: Counter[str] = Counter()
            for n, obj in _lines(path):
                if _group(obj) != group_key:
                    continue
                sid = str(obj["sample_id"])
                seen[sid] += 1
                yield _sample(n, obj, seen[sid])

        library = (aggregate or {}).get("eval_library") or {}
        runs.append(
            SourceRun(
                tool=TOOL,
                task=f"{evaluation_name}/{result_id}" if several else evaluation_name,
                model=model_id,
                samples=samples,
                provenance={
                    "tool": TOOL,
                    "tool_version": str(group["first"].get("schema_version")),
                    "file": path.name,
                    "sha256": sha,
                    "format": NAME,
                    "evaluation_id": evaluation_id,
                    "evaluation_name": evaluation_name,
                    "evaluation_result_id": result_id or None,
                    "eval_library": library or None,
                    "origin": ours.get("provenance"),
                },
                params=dict(ours.get("params") or {}),
                judge_model=ours.get("run_judge_model"),
                short="eee",
                # a file this program wrote names its benchmark, item set and variants
                benchmark=ours.get("benchmark"),
                item_set=ours.get("item_set"),
                id_is_item_id=bool(ours.get("item_set") and ours.get("benchmark")),
                variants=tuple(str(ours["setting"]).split(",")) if ours.get("setting") else None,
            )
        )
    return runs


def _group(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    """The run a line belongs to: EEE writes one line per sample × epoch × scorer, so each
    evaluation result (a scorer's metric) of a model on a task is a run."""
    return (
        str(obj["evaluation_id"]),
        str(obj["model_id"]),
        str(obj["evaluation_name"]),
        str(obj.get("evaluation_result_id") or ""),
    )


def _aggregate_beside(path: Path) -> dict[str, Any] | None:
    """The aggregate EvaluationLog written beside the instances (x.json for x.jsonl, or
    <uuid>.json for <uuid>_samples.jsonl as EEE's converters name them)."""
    candidates = [path.with_suffix(".json")]
    if path.stem.endswith("_samples"):
        candidates.insert(0, path.with_name(path.stem[: -len("_samples")] + ".json"))
    other = next((c for c in candidates if c != path and c.is_file()), None)
    if other is None:
        return None
    try:
        data = json.loads(other.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# -- writing (`export --format eee`) -----------------------------------------------------------


def sample_hash(raw: str, reference: list[str]) -> str:
    """EEE's cross-adapter join key (reference/instance-level.md, the openeval recipe)."""
    text = json.dumps({"raw": raw, "reference": reference}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _none(value: Any) -> Any:
    if value is None:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):
        return value.item()
    return value


def _json_value(value: Any) -> Any:
    value = _none(value)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def instance_lines(
    frame: pd.DataFrame, run: dict[str, Any], judging: str
) -> Iterator[dict[str, Any]]:
    """EEE instance records of a run's rows (responses joined to their result and item)."""
    evaluation_id = f"error-handling-workbench/{run['run_id']}"
    name = run["task"]
    for row in frame.to_dict("records"):
        raw = _none(row["prompt"]) or _user_text(_json_value(row["messages"])) or ""
        gold = _none(row["gold"])
        reference = [str(gold)] if gold is not None else []
        score = _none(row["score"])
        correct = _none(row["correct"])
        answer = _none(row["answer"])
        text = _none(row["response"])
        line: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "evaluation_id": evaluation_id,
            "model_id": run["model"] or "unknown",
            "evaluation_name": name,
            "evaluation_result_id": f"{run['run_id']}:{judging}",
            "sample_id": str(row["item_id"]),
            "sample_hash": sample_hash(raw, reference),
            "interaction_type": "single_turn",
            "input": {"raw": raw, "reference": reference},
            "output": {"raw": [] if text is None else [text]},
            "answer_attribution": [
                {
                    "turn_idx": 0,
                    "source": "output.raw",
                    "extracted_value": "" if answer is None else str(answer),
                    "extraction_method": _none(row["judge_model"])
                    or f"workbench:{run['benchmark']}",
                    "is_terminal": True,
                }
            ],
            "evaluation": {
                "score": float(score) if score is not None else (1.0 if correct else 0.0),
                "is_correct": bool(correct) if correct is not None else False,
            },
            "metadata": {
                "workbench": _dumps(
                    {
                        "run_id": run["run_id"],
                        "benchmark": run["benchmark"],
                        "item_set": run["item_set"],
                        "setting": run.get("setting"),
                        "variant": row["variant"],
                        "epoch": int(row["epoch"]),
                        "judging": judging,
                        "response_status": row["response_status"],
                        "response_scores": _json_value(row["scores"]),
                        "prompt_tokens": _none(row["prompt_tokens"]),
                        "completion_tokens": _none(row["completion_tokens"]),
                        "latency_ms": _none(row["latency_ms"]),
                        "result_status": _none(row["result_status"]),
                        "judge_model": _none(row["judge_model"]),
                        "answer": answer,
                        "correct": correct,
                        "score": score,
                        "labels": _json_value(row["labels"]),
                        "explanation": _none(row["explanation"]),
                        "result_metadata": _json_value(row["metadata"]),
                        "run_judge_model": run.get("judge_model"),
                        "provenance": run.get("source"),
                        "params": run.get("params"),
                    }
                )
            },
        }
        prompt_tokens, completion_tokens = (
            _none(row["prompt_tokens"]),
            _none(row["completion_tokens"]),
        )
        if prompt_tokens is not None and completion_tokens is not None:
            line["token_usage"] = {
                "input_tokens": int(prompt_tokens),
                "output_tokens": int(completion_tokens),
                "total_tokens": int(prompt_tokens) + int(completion_tokens),
            }
        latency = _none(row["latency_ms"])
        if latency is not None and latency >= 0:
            line["performance"] = {"latency_ms": float(latency)}
        if _none(row["error"]):
            line["error"] = str(row["error"])
        yield line


def _dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _user_text(messages: Any) -> str:
    if not isinstance(messages, list):
        return ""
    return "\n\n".join(
        str(m.get("content") or "")
        for m in messages
        if isinstance(m, dict) and m.get("role") == "user"
    )
