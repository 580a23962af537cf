"""The PCBench authors' released verdicts: `evaluation/eval_result/<model>_eval_result.jsonl`
of github.com/MLGroupJLU/Premise_Critique (MIT).

One JSON object a line: `pid` (the data set's problem id, our item id), `GPT_eval_result` with
`active` (the flawed problem as is: our `proactive`) and `passive` (with the instruction to
check the premises: our `assisted`), each `{"if_find_contradiction": "True"|"False", "basis":
the judge's reason}` (the paper's judge, o3-mini), and the answers' lengths
(`ill_answer_length`, `ill_with_hint_answer_length`: `{"all_count": tokens, ...}`, as JSON or
as a Python-literal string). The answers themselves are not released: each verdict becomes a
response row without text (its length as completion tokens) and a result in PCBench's record
(`critique` label, answer C/∅, the basis as explanation) — so `metrics pcbench --source RUN`
gives the authors' rates from their own verdicts. One run per file (one model), both variants,
as a native PCBench run asks them.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.benchmarks.pcbench import NAME as BENCHMARK
from core.benchmarks.pcbench.task import run_mode
from core.engine.results import Response, Result
from core.sources import Sample, SourceError, SourceRun, file_sha256, json_lines

NAME = "pcbench-verdicts"
DESCRIPTION = "the PCBench authors' *_eval_result.jsonl"
TOOL = "pcbench-authors"
SUFFIX = "_eval_result.jsonl"
JUDGE = "o3-mini (PCBench authors)"
# the authors' setting -> our variant, and the length field of its answer
VARIANTS = {
    "active": ("proactive", "ill_answer_length"),
    "passive": ("assisted", "ill_with_hint_answer_length"),
}


def detect(path: Path, head: bytes) -> bool:
    return path.is_file() and (
        path.name.endswith(SUFFIX) or (b'"GPT_eval_result"' in head and b'"pid"' in head)
    )


def _length(value: Any) -> int | None:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return None
    if isinstance(value, dict) and isinstance(value.get("all_count"), int):
        return int(value["all_count"])
    return None


def _verdict(obj: Any) -> tuple[bool | None, str | None]:
    if not isinstance(obj, dict):
        return None, None
    word = str(obj.get("if_find_contradiction", "")).strip().lower()
    basis = obj.get("basis")
    return ({"true": True, "false": False}.get(word), str(basis) if basis is not None else None)


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every non-empty line; a SourceError at the first bad one."""
    seen: dict[str, int] = {}
    for n, obj in json_lines(path):
        if not isinstance(obj, dict) or str(obj.get("pid", "")).strip() == "":
            raise SourceError(f"{path}:{n}: a verdict needs a JSON object with a 'pid'")
        if not isinstance(obj.get("GPT_eval_result"), dict):
            raise SourceError(f"{path}:{n}: no 'GPT_eval_result' object (not a verdict)")
        pid = str(obj["pid"]).strip()
        if pid in seen:
            raise SourceError(f"{path}:{n}: pid {pid!r} repeats line {seen[pid]}")
        seen[pid] = n
        yield n, obj


def _samples(path: Path) -> Iterator[Sample]:
    for n, obj in _lines(path):
        pid = str(obj["pid"]).strip()
        verdicts = obj["GPT_eval_result"]
        for theirs, (variant, length_field) in VARIANTS.items():
            if theirs not in verdicts:
                continue
            critique, basis = _verdict(verdicts[theirs])
            tokens = _length(obj.get(length_field))
            response = Response(
                status="ok",
                completion_tokens=tokens,
                scores={"source_line": n, "answer_released": False},
            )
            meta = {"source_line": n, "authors_setting": theirs}
            if critique is None:
                result = Result(
                    status="unparsable",
                    judge_model=JUDGE,
                    raw=json.dumps(verdicts[theirs], ensure_ascii=False),
                    parse_note="if_find_contradiction is neither True nor False",
                    metadata=meta,
                )
            else:
                result = Result(
                    status="ok",
                    judge_model=JUDGE,
                    answer="C" if critique else "∅",
                    correct=critique,
                    labels={"critique": critique},
                    explanation=basis or None,
                    metadata={**meta, "rationales": {"critique": basis or None}},
                    raw=json.dumps(verdicts[theirs], ensure_ascii=False),
                )
            yield Sample(
                key=pid, input=None, target=None, response=response, result=result, variant=variant
            )


def read(path: Path) -> list[SourceRun]:
    if not path.is_file():
        raise SourceError(f"{path}: not a file (PCBench verdicts are one JSONL file per model)")
    model = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.stem
    if not any(True for _ in _lines(path)):
        raise SourceError(f"{path}: no verdicts")
    return [
        SourceRun(
            tool=TOOL,
            task="authors-verdicts",
            model=model,
            samples=lambda: _samples(path),
            provenance={
                "tool": TOOL,
                "tool_version": "github.com/MLGroupJLU/Premise_Critique evaluation/eval_result",
                "file": path.name,
                "sha256": file_sha256(path),
                "format": NAME,
            },
            params={"judge": JUDGE, "judge_template": "pcbench/judge.v1"},
            benchmark=BENCHMARK,
            variants=("proactive", "assisted"),
            mode=run_mode(("proactive", "assisted")),
            run_name=f"pca-{model}",
            judge_model=JUDGE,
            id_is_item_id=True,
            short="pca",
        )
    ]
