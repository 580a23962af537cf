"""Inspect AI eval logs (`inspect eval … --log-format eval|json`), log schema version 1 or 2.

`.eval` is a zip: `header.json` (the EvalLog without samples: eval spec, plan, results, stats,
status) or, in a log still being written or cut off, `_journal/start.json` (no status: the run
did not finish); one member per sample and epoch, `samples/{id}_epoch_{n}.json` (a re-logged
sample appears twice: the last one counts, as Inspect reads it); `summaries.json`,
`reductions.json` (per-sample scores reduced over epochs). Members may be Zstandard-compressed
(core.sources.zipread). `.json` is the whole EvalLog in one object with a `samples` array;
it is read as a stream (ijson), one sample in memory at a time, never the whole log.

Each log is one run (one task × one model). A sample becomes a response (output.completion,
its token usage, or the sample's error) and a result from its scores: the first scorer (or the
one named in the log's results) gives `score` (Inspect's value_to_float: C 1, I 0, P 0.5, N 0,
yes/true 1, no/false 0, numbers as they are), `correct` (score 1 or 0; None for partial or
other values), `answer` and `explanation`; every scorer's Score is kept whole in
`metadata.scores`. Long strings Inspect moved to `attachments` are put back.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import ijson
from ijson.common import ObjectBuilder

from core.engine.results import Response, Result
from core.sources import Sample, SourceError, SourceRun, file_sha256
from core.sources.zipread import Entry, entries, entry_stream, read_entry

NAME = "inspect"
DESCRIPTION = "an Inspect AI log (.eval, .json)"
TOOL = "inspect_ai"
SCHEMA_VERSIONS = (1, 2)
_SAMPLE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
_JOURNAL_SUMMARY = re.compile(r"^_journal/summaries/(\d+)\.json$")
_STATUS = {"success": "done", "cancelled": "cancelled", "error": "failed", "started": "interrupted"}


def detect(path: Path, head: bytes) -> bool:
    if path.suffix == ".eval":
        return True
    if path.suffix == ".json" and head.lstrip().startswith(b"{"):
        return b'"eval"' in head and (b'"task_id"' in head or b'"run_id"' in head)
    return False


# -- values ------------------------------------------------------------------------------------

_WORDS = {"c": 1.0, "i": 0.0, "p": 0.5, "n": 0.0, "yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0}


def value_to_float(value: Any) -> float | None:
    """Inspect's default value_to_float (inspect_ai.scorer._metric); None for lists/dicts."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _WORDS:
            return _WORDS[word]
        try:
            return float(word)
        except ValueError:
            return None
    return None


def _attach(value: Any, attachments: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments.get(value[len("attachment://") :], value)
    return value


def content_text(content: Any, attachments: dict[str, str]) -> str:
    """A ChatMessage's content as text (a list of content parts: their text parts joined)."""
    if isinstance(content, str):
        return str(_attach(content, attachments))
    if isinstance(content, list):
        parts = [
            str(_attach(part.get("text", ""), attachments))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return "\n".join(parts)
    return ""


def input_text(value: Any, attachments: dict[str, str]) -> str:
    """The sample's input as the model was given it: the string, or its user messages."""
    if isinstance(value, str):
        return str(_attach(value, attachments))
    if isinstance(value, list):
        return "\n\n".join(
            content_text(m.get("content"), attachments)
            for m in value
            if isinstance(m, dict) and m.get("role") == "user"
        )
    return ""


def _target(value: Any) -> str | None:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return None if value is None else str(value)


def judging_name(scorer: str) -> str:
    """The judging an extra scorer's results are kept under (the judging-name alphabet)."""
    return ("scorer:" + re.sub(r"[^A-Za-z0-9._:+=@-]+", "-", scorer))[:80]


def _result(name: str, scores: dict[str, Any], attachments: dict[str, str]) -> Result:
    score = scores[name] or {}
    value = score.get("value")
    number = value_to_float(value)
    return Result(
        status="ok",
        judge_model=None,
        answer=None if score.get("answer") is None else str(score.get("answer")),
        correct=(number == 1.0) if number in (0.0, 1.0) else None,
        score=number,
        explanation=_attach(score.get("explanation"), attachments),
        metadata={"scorer": name, "value": value, "scores": scores},
    )


def to_sample(data: Any, where: str, primary: str | None) -> Sample:
    if not isinstance(data, dict) or "epoch" not in data and "id" not in data:
        raise SourceError(f"{where}: not an Inspect sample (no id, epoch)")
    if data.get("id") is None or str(data.get("id")).strip() == "":
        raise SourceError(f"{where}: a sample without an id (cannot be matched to an item)")
    attachments = data.get("attachments") or {}
    output = data.get("output") or {}
    text = output.get("completion")
    if not text and output.get("choices"):
        message = (output["choices"][0] or {}).get("message") or {}
        text = content_text(message.get("content"), attachments)
    text = _attach(text, attachments)
    usage = output.get("usage") or {}
    error = data.get("error")
    messages = data.get("messages")
    choices = output.get("choices") or [{}]
    info = {
        "stop_reason": (choices[0] or {}).get("stop_reason"),
        "inspect_uuid": data.get("uuid"),
        "total_time": data.get("total_time"),
    }
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        response = Response.failed(str(message or "error"), scores=info)
    else:
        response = Response(
            status="ok",
            text=text if isinstance(text, str) else None,
            prompt_tokens=usage.get("input_tokens"),
            completion_tokens=usage.get("output_tokens"),
            latency_ms=(
                1000 * float(data["total_time"])
                if isinstance(data.get("total_time"), int | float)
                else None
            ),
            messages=[
                {"role": m.get("role"), "content": content_text(m.get("content"), attachments)}
                for m in messages
                if isinstance(m, dict)
            ]
            if isinstance(messages, list)
            else None,
            scores=info,
        )
    scores = data.get("scores") or {}
    result = None
    others: dict[str, Result] = {}
    if isinstance(scores, dict) and scores:
        name = str(primary if primary in scores else next(iter(scores)))
        result = _result(name, scores, attachments)
        # every other scorer: a judging of its own (`metrics --judging scorer:NAME`)
        others = {
            judging_name(other): _result(other, scores, attachments)
            for other in scores
            if other != name
        }
    return Sample(
        key=str(data["id"]),
        epoch=int(data.get("epoch") or 1),
        input=input_text(data.get("input"), attachments),
        target=_target(data.get("target")),
        response=response,
        result=result,
        meta={
            "inspect_id": data["id"],
            **({"choices": data["choices"]} if data.get("choices") else {}),
        },
        judgings=others,
    )


# -- the log -----------------------------------------------------------------------------------


def _json(raw: bytes, where: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise SourceError(f"{where}: not JSON ({exc})") from None


def _check_header(header: Any, path: Path) -> dict[str, Any]:
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise SourceError(f"{path}: not an Inspect AI log (no 'eval' spec)")
    version = header.get("version")
    if version not in SCHEMA_VERSIONS:
        raise SourceError(
            f"{path}: Inspect log schema version {version!r}; this program reads versions "
            f"{', '.join(map(str, SCHEMA_VERSIONS))}. Convert it with Inspect's own "
            "`inspect log convert`, or update this program."
        )
    spec = header["eval"]
    if not spec.get("task") or not spec.get("model"):
        raise SourceError(f"{path}: the log's eval spec names no task or model")
    return header


def _primary(header: dict[str, Any]) -> str | None:
    scores = (header.get("results") or {}).get("scores") or []
    return scores[0].get("name") if scores and isinstance(scores[0], dict) else None


def _run(path: Path, header: dict[str, Any], samples: Any, n_done: int | None) -> SourceRun:
    spec = header["eval"]
    status = header.get("status") or "started"
    results = header.get("results") or {}
    total = results.get("total_samples") or (spec.get("dataset") or {}).get("samples")
    note = None
    if status != "success":
        note = (
            f"partial log (status {status}): {n_done if n_done is not None else '?'} "
            f"sample(s) completed" + (f" of {total}" if total else "") + ", imported as they are"
        )
    plan = header.get("plan") or {}
    params = {
        "generate_config": spec.get("model_generate_config") or {},
        "plan_config": plan.get("config") or {},
        "task_args": spec.get("task_args") or {},
        "epochs": (spec.get("config") or {}).get("epochs"),
        "scorers": [s.get("name") for s in (results.get("scores") or []) if isinstance(s, dict)],
    }
    return SourceRun(
        tool=TOOL,
        task=str(spec["task"]),
        model=str(spec["model"]),
        samples=samples,
        provenance={
            "tool": TOOL,
            "tool_version": (spec.get("packages") or {}).get("inspect_ai"),
            "file": path.name,
            "sha256": file_sha256(path),
            "format": NAME,
            "log_schema_version": header.get("version"),
            "eval_id": spec.get("eval_id"),
            "run_id": spec.get("run_id"),
            "task_id": spec.get("task_id"),
            "created": spec.get("created"),
            "status": status,
            "dataset": (spec.get("dataset") or {}).get("name"),
            "model": spec.get("model"),
            "model_base_url": spec.get("model_base_url"),
        },
        params={k: v for k, v in params.items() if v not in (None, {}, [])},
        status=_STATUS.get(str(status), "interrupted"),
        note=note,
        short="insp",
    )


def _summary_chunk(handle: IO[bytes], entry: Entry, path: Path) -> Iterator[tuple[int, Any]]:
    """A journal summary chunk's entries, streamed (a chunk holds every sample of a flush: a
    big log written with a large buffer has big chunks)."""
    i = 0
    try:
        stream = entry_stream(handle, entry, path)
        for i, summary in enumerate(ijson.items(stream, "item", use_float=True)):
            yield i, summary
    except ijson.JSONError as exc:
        raise SourceError(
            f"{path}: {entry.name}[{i}] or after: not JSON ({_json_error(exc)})"
        ) from None


def _eval_header(path: Path, others: dict[str, Entry]) -> dict[str, Any]:
    with open(path, "rb") as handle:

        def member(name: str) -> Any:
            return _json(read_entry(handle, others[name], path), f"{path}: {name}")

        if "header.json" in others:
            header = member("header.json")
        elif "_journal/start.json" in others:
            header = {**member("_journal/start.json"), "status": "started"}
        elif "start.json" in others:  # logs of Inspect before the header/journal layout
            header = member("start.json")
            if "results.json" in others:
                header.update(member("results.json"))
            else:
                header["status"] = "started"
        else:
            raise SourceError(
                f"{path}: a zip but not an Inspect .eval log (no header.json or "
                "_journal/start.json)"
            )
    return _check_header(header, path)


def _sample_entries(path: Path, last: dict[str, int]) -> Iterator[tuple[tuple[str, int], Entry]]:
    """((id, epoch), directory record) of each sample member (a re-logged one: its last)."""
    for k, entry in enumerate(entries(path)):
        m = _SAMPLE.match(entry.name)
        if m and last.get(entry.name, k) == k:
            yield (m.group(1), int(m.group(2))), entry


def _index(
    path: Path,
    others: dict[str, Entry],
    journal: list[str],
    last: dict[str, int],
    primary: str | None,
) -> Iterator[Sample]:
    """The samples' ids, epochs, inputs and targets from the journal's summary chunks
    (written with each flush of samples, a fraction of their size, streamed), then whole
    sample members for any sample no chunk lists."""
    present = {key for key, _ in _sample_entries(path, last)}
    with open(path, "rb") as handle:
        for member in journal:
            for i, summary in _summary_chunk(handle, others[member], path):
                if not isinstance(summary, dict) or summary.get("id") is None:
                    raise SourceError(f"{path}: {member}[{i}]: a sample without an id")
                key = (str(summary["id"]), int(summary.get("epoch") or 1))
                if key not in present:  # no such member, or listed already
                    continue
                present.discard(key)
                yield Sample(
                    key=key[0],
                    epoch=key[1],
                    input=input_text(summary.get("input"), {}),
                    target=_target(summary.get("target")),
                    response=Response(),
                    result=None,
                )
        if present:
            for key, entry in _sample_entries(path, last):
                if key in present:
                    data = _json(read_entry(handle, entry, path), f"{path}: {entry.name}")
                    yield to_sample(data, f"{path}: {entry.name}", primary)


def _read_eval(path: Path) -> list[SourceRun]:
    """The log's directory is read as a stream (core.sources.zipread.entries), never whole:
    the members other than samples are kept, of the samples only which are re-logged (the
    last record of a name counts, as Inspect reads it)."""
    others: dict[str, Entry] = {}
    names: set[str] = set()
    last: dict[str, int] = {}  # a re-logged sample member: the index of its last record
    for k, entry in enumerate(entries(path)):
        if _SAMPLE.match(entry.name):
            if entry.name in names:
                last[entry.name] = k
            names.add(entry.name)
        else:
            others[entry.name] = entry
    n_done = len(names)
    del names
    header = _eval_header(path, others)
    primary = _primary(header)
    journal = sorted(
        (n for n in others if _JOURNAL_SUMMARY.match(n)),
        key=lambda n: int(_JOURNAL_SUMMARY.match(n).group(1)),  # type: ignore[union-attr]
    )

    def index() -> Iterator[Sample]:
        return _index(path, others, journal, last, primary)

    def samples() -> Iterator[Sample]:
        with open(path, "rb") as handle:
            for _, entry in _sample_entries(path, last):
                data = _json(read_entry(handle, entry, path), f"{path}: {entry.name}")
                yield to_sample(data, f"{path}: {entry.name}", primary)

    run = _run(path, header, samples, n_done)
    if journal:
        run.index = index
    return [run]


def _json_error(exc: Exception) -> str:
    """ijson's (yajl's) message without its drawing of where: the first line."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0].strip()


def _json_header(path: Path) -> tuple[Any, bool]:
    """(the log without its samples, has a `samples` array) of a `.json` log, read as a
    stream: the header fields are built, the samples array is skipped, and reading stops at
    the samples when the fields that matter came before them (Inspect writes version,
    status, eval, plan, results, stats first), so the log is never in memory whole."""
    builder = ObjectBuilder()
    has_samples = False
    skipping = 0  # depth inside the samples value being skipped
    key_is_samples = False
    depth = 0
    try:
        with open(path, "rb") as handle:
            for _, event, value in ijson.parse(handle, use_float=True):
                if depth == 0 and event != "start_map":
                    return value, False  # a top-level value that is not an object
                if skipping:
                    skipping += event in ("start_map", "start_array")
                    skipping -= event in ("end_map", "end_array")
                    continue
                if key_is_samples:
                    key_is_samples = False
                    if event != "start_array":
                        raise SourceError(f"{path}: 'samples' is not a list")
                    has_samples = True
                    skipping = 1
                    header = builder.value
                    if "eval" in header and "version" in header:
                        return header, True
                    continue
                if depth == 1 and event == "map_key" and value == "samples":
                    key_is_samples = True
                    continue
                depth += event in ("start_map", "start_array")
                depth -= event in ("end_map", "end_array")
                builder.event(event, value)
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror or exc}") from None
    except ijson.JSONError as exc:
        raise SourceError(f"{path}: not JSON ({_json_error(exc)})") from None
    if depth:
        raise SourceError(f"{path}: not JSON (the file ends inside the log: truncated?)")
    return builder.value, has_samples


def _json_samples(path: Path) -> Iterator[tuple[int, Any]]:
    """(index, sample) of a `.json` log's samples array, one sample in memory at a time."""
    i = 0
    try:
        with open(path, "rb") as handle:
            for i, data in enumerate(ijson.items(handle, "samples.item", use_float=True)):
                yield i, data
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror or exc}") from None
    except ijson.JSONError as exc:
        raise SourceError(
            f"{path}: samples[{i}] or after: not JSON ({_json_error(exc)}); the file is "
            "damaged or truncated"
        ) from None


def _read_json(path: Path) -> list[SourceRun]:
    log, has_samples = _json_header(path)
    header = _check_header(log, path)
    primary = _primary(header)

    def samples() -> Iterator[Sample]:
        if has_samples:
            for i, data in _json_samples(path):
                yield to_sample(data, f"{path}: samples[{i}]", primary)

    n_done = None
    if header.get("status") != "success" and has_samples:
        n_done = sum(1 for _ in _json_samples(path))  # a partial log's note only
    return [_run(path, header, samples, n_done if has_samples else 0)]


def read(path: Path) -> list[SourceRun]:
    if path.suffix == ".eval" or (path.is_file() and zipfile.is_zipfile(path)):
        return _read_eval(path)
    return _read_json(path)
