"""promptfoo results (`promptfoo eval -o out.json`, results version 3).

The file: `evalId`, `results` (`version` 3, `timestamp`, `prompts`, `results`: one
EvaluateResult per prompt × provider × test, `stats`), `config`, `metadata`
(`promptfooVersion`...). An EvaluateResult: `promptIdx`, `testIdx`, `testCase`, `prompt`
(`raw`: the rendered prompt, `label`), `vars`, `provider` (`id`, `label`), `response`
(`output`, `tokenUsage`), `error`, `success`, `score`, `latencyMs`, `namedScores`,
`gradingResult` (`pass`, `score`, `reason`, `componentResults`: each assertion's).

One run per provider × prompt (promptfoo compares several of each in one eval). The answer is
`response.output`; `correct` is `success`, `score` the result's score, `explanation` the grading
reason, `metadata` keeps namedScores and every assertion's result. Items are matched by the
rendered prompt or any of the test's variables; a test repeated (`--repeat`) is its next epoch.
The file is read as a stream (ijson), one result in memory at a time, never whole.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import ijson
from ijson.common import ObjectBuilder

from core.engine.results import Response, Result
from core.sources import Sample, SourceError, SourceRun, file_sha256

NAME = "promptfoo"
DESCRIPTION = "a promptfoo `-o` JSON"
ID_VARS = ("id", "item_id", "pid", "sample_id")  # a test variable that names the item
TOOL = "promptfoo"


def detect(path: Path, head: bytes) -> bool:
    return (
        path.is_file()
        and head.lstrip().startswith(b"{")
        and b'"results"' in head
        and (b'"evalId"' in head or b'"promptfooVersion"' in head or b'"promptIdx"' in head)
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _provider(result: dict[str, Any]) -> str:
    provider = result.get("provider")
    if isinstance(provider, dict):
        return str(provider.get("label") or provider.get("id") or "unknown")
    return str(provider or "unknown")


def _key(result: dict[str, Any]) -> str:
    test = _dict(result.get("testCase"))
    variables = _dict(result.get("vars"))
    for source in ((test.get("metadata") or {}), variables):
        for name in ID_VARS:
            if isinstance(source, dict) and source.get(name) not in (None, ""):
                return str(source[name])
    if result.get("testIdx") is None:
        raise SourceError("a result without testIdx or an id variable")
    return f"test-{result['testIdx']}"


def _sample(result: dict[str, Any], epoch: int) -> Sample:
    response = _dict(result.get("response"))
    usage = response.get("tokenUsage") or {}
    prompt = _dict(result.get("prompt"))
    variables = _dict(result.get("vars"))
    grading = _dict(result.get("gradingResult"))
    error = result.get("error")
    answer = _text(response.get("output"))
    if error and not answer:
        reply = Response.failed(str(error))
    else:
        reply = Response(
            status="ok",
            text=answer,
            prompt_tokens=usage.get("prompt"),
            completion_tokens=usage.get("completion"),
            latency_ms=result.get("latencyMs"),
            cached=bool(response.get("cached")),
        )
    score = result.get("score")
    outcome = Result(
        status="ok",
        correct=bool(result.get("success")) if result.get("success") is not None else None,
        score=float(score) if isinstance(score, int | float) else None,
        explanation=grading.get("reason"),
        metadata={
            "namedScores": result.get("namedScores") or {},
            "componentResults": grading.get("componentResults") or [],
            "failureReason": result.get("failureReason"),
            "testIdx": result.get("testIdx"),
            "promptIdx": result.get("promptIdx"),
        },
    )
    target = None
    asserts = (
        ((result.get("testCase") or {}).get("assert"))
        if isinstance(result.get("testCase"), dict)
        else None
    )
    if isinstance(asserts, list) and asserts and isinstance(asserts[0], dict):
        target = _text(asserts[0].get("value"))
    return Sample(
        key=_key(result),
        input=_text(prompt.get("raw")),
        target=target,
        response=reply,
        result=outcome,
        epoch=epoch,
        meta={"vars": variables},
        alternatives=tuple(str(v) for v in variables.values() if isinstance(v, str) and v.strip()),
    )


_LIST = "results.results"  # the EvaluateResults: streamed, never in memory together


class _Where:
    """A binary file that counts the lines and columns of what has been read from it, so a
    parse error can say where (ijson reads 64 KB at a time: the position is where reading
    had got to, at or just after the error; at the end for a cut-off file)."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.line = 1
        self.column = 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        newlines = data.count(b"\n")
        if newlines:
            self.line += newlines
            self.column = len(data) - data.rindex(b"\n") - 1
        else:
            self.column += len(data)
        return data


def _json_error(exc: Exception, where: _Where) -> str:
    """ijson's (yajl's) message without its drawing of where (its first line), and where
    reading had got to."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0].strip()
    return f"{first}; at or before line {where.line} column {where.column}"


def _header(path: Path) -> dict[str, Any]:
    """The file without its results list, read as a stream (ijson): every other field is
    built, the list's items are skipped, so a file of any size is never in memory whole."""
    builder = ObjectBuilder()
    has_list = False
    where = _Where(io.BytesIO())
    try:
        with open(path, "rb") as handle:
            where = _Where(handle)
            for prefix, event, value in ijson.parse(where, use_float=True):
                if prefix == _LIST or prefix.startswith(_LIST + "."):
                    if prefix == _LIST and event not in ("start_array", "end_array"):
                        raise SourceError(
                            f"{path}: not a promptfoo results file (results.results is not a list)"
                        )
                    has_list = True
                    continue
                if prefix == "results" and event == "map_key" and value == "results":
                    continue
                builder.event(event, value)
    except OSError as exc:
        raise SourceError(f"{path}: not readable as JSON ({exc.strerror or exc})") from None
    except ijson.JSONError as exc:
        raise SourceError(f"{path}: not readable as JSON ({_json_error(exc, where)})") from None
    data: Any = getattr(builder, "value", None)
    inner = data.get("results") if isinstance(data, dict) else None
    if not isinstance(inner, dict) or not has_list:
        raise SourceError(f"{path}: not a promptfoo results file (no results.results list)")
    version = inner.get("version")
    if version != 3:
        raise SourceError(
            f"{path}: promptfoo results version {version!r}; this program reads version 3 "
            "(promptfoo 0.x `eval -o out.json`)"
        )
    return data


def _results(path: Path) -> Iterator[tuple[int, Any]]:
    """(index, EvaluateResult) of the file's results list, one in memory at a time."""
    i = 0
    where = _Where(io.BytesIO())
    try:
        with open(path, "rb") as handle:
            where = _Where(handle)
            for i, result in enumerate(ijson.items(where, _LIST + ".item", use_float=True)):
                yield i, result
    except OSError as exc:
        raise SourceError(f"{path}: not readable as JSON ({exc.strerror or exc})") from None
    except ijson.JSONError as exc:
        raise SourceError(
            f"{path}: results[{i}] or after: not readable as JSON ({_json_error(exc, where)})"
        ) from None


def read(path: Path) -> list[SourceRun]:
    data = _header(path)
    prompts = data["results"].get("prompts") or []
    groups: dict[tuple[str, int], int] = Counter(
        (_provider(r), int(r.get("promptIdx") or 0))
        for _, r in _results(path)
        if isinstance(r, dict)
    )
    sha = file_sha256(path)
    meta = data.get("metadata") or {}
    runs = []
    for provider, prompt_idx in groups:
        label = None
        if prompt_idx < len(prompts) and isinstance(prompts[prompt_idx], dict):
            label = prompts[prompt_idx].get("label")
        task = str(label or f"prompt-{prompt_idx}")

        def samples(group: tuple[str, int] = (provider, prompt_idx)) -> Iterator[Sample]:
            seen: Counter[str] = Counter()
            for i, result in _results(path):
                if not isinstance(result, dict):
                    continue
                if (_provider(result), int(result.get("promptIdx") or 0)) != group:
                    continue
                try:
                    key = _key(result)
                except SourceError as exc:
                    raise SourceError(f"{path}: results[{i}]: {exc}") from None
                seen[key] += 1
                yield _sample(result, seen[key])

        runs.append(
            SourceRun(
                tool=TOOL,
                task=task,
                model=provider,
                samples=samples,
                provenance={
                    "tool": TOOL,
                    "tool_version": meta.get("promptfooVersion"),
                    "file": path.name,
                    "sha256": sha,
                    "format": NAME,
                    "eval_id": data.get("evalId"),
                    "created": data["results"].get("timestamp"),
                    "prompt_idx": prompt_idx,
                    "prompt_label": label,
                },
                # never the config's providers: promptfoo copies their API keys into the file
                params={"provider": provider},
                short="pf",
            )
        )
    if not runs:
        raise SourceError(f"{path}: no results in the file")
    return runs
