"""Results from other tools: Inspect AI logs, lm-evaluation-harness sample files, promptfoo
outputs, Every Eval Ever instance files and a benchmark's own released formats (its authors'
verdicts, say), read as runs.

One module per format (`FORMATS`), each with `DESCRIPTION`, `detect(path, head) -> bool` (is this file mine?)
and `read(path) -> list[SourceRun]`. A reader turns a file into runs (one per model × task
where a file mixes them) whose samples are the generic result record (core.engine.results):
`Response` (the answer, where the file has one) and `Result` (correct / score / labels /
explanation / metadata), plus the run's provenance (tool, version, file name and sha256, the
log's own ids, created time, model, generation settings). Samples are produced lazily and can
be read twice: once to match them to items, once to write them, so a log of any size passes
in bounded memory. core.sources.service plans and writes them (all or nothing per file).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.engine.results import Response, Result

# format name -> module (each: NAME, detect(path, head), read(path)); then every registered
# benchmark's own formats (`Benchmark.result_formats`, e.g. a paper's released verdicts)
GENERIC_FORMATS: dict[str, str] = {
    "inspect": "core.sources.inspect",
    "lm-eval": "core.sources.lm_eval",
    "promptfoo": "core.sources.promptfoo",
    "eee": "core.sources.eee",
}


def formats() -> dict[str, str | Callable[[], Any]]:
    from core.registry import BENCHMARKS

    out: dict[str, str | Callable[[], Any]] = dict(GENERIC_FORMATS)
    for bench in BENCHMARKS.values():
        out.update(dict(bench.result_formats))
    return out


FORMATS = formats()


def described() -> str:
    """The formats as a person names them, from each reader's DESCRIPTION (help, page text):
    a benchmark's own format shows up here by being registered."""
    names = [module(fmt).DESCRIPTION for fmt in FORMATS]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


HEAD_BYTES = 64 * 1024  # what detect() sees of a file


class SourceError(ValueError):
    """A file that cannot be read as a results file: the message names the file and what is
    wrong with it; nothing was written."""


@dataclass
class Sample:
    """One answer of a log, as the generic record plus what items are matched on.

    `key`: the log's own id of the item (Inspect sample id, a benchmark's own id, lm-eval doc_id...);
    `input` / `target`: the text the model was shown and the expected answer (matching by
    text, and the items of a new item set); `variant`: None = the run's variant."""

    key: str
    input: str | None
    target: str | None
    response: Response
    result: Result | None
    epoch: int = 1
    variant: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # item payload for a new item set
    alternatives: tuple[str, ...] = ()  # other texts of the item (a document's fields) to match
    # the same answer scored otherwise (an Inspect log's other scorers): judging name -> result
    judgings: dict[str, Result] = field(default_factory=dict)


@dataclass
class SourceRun:
    """One run read from a file. `samples()` yields its samples and may be called again."""

    tool: str  # inspect_ai | lm_eval | promptfoo | every_eval_ever | a benchmark's own format
    task: str
    model: str
    samples: Callable[[], Iterator[Sample]]
    provenance: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)  # generation settings
    status: str = "done"  # done | cancelled | failed (a partial log: what completed)
    note: str | None = None  # e.g. "partial log: 40 of 100 samples completed"
    benchmark: str | None = None  # known from the format (a benchmark's own format)
    variants: tuple[str, ...] | None = None  # the variants its samples carry
    judge_model: str | None = None
    # the samples' keys, inputs and targets only, when the file has them cheaper than whole
    # samples (an Inspect log's summaries): what item matching reads
    index: Callable[[], Iterator[Sample]] | None = None
    mode: str | None = None  # runs.mode, when the reader knows it (else the benchmark's)
    run_name: str | None = None  # the reader's default run name (else tool-model-task)
    id_is_item_id: bool = False  # the sample keys are the benchmark's own item ids
    item_set: str | None = None  # the item set the ids belong to, when the file says
    short: str = ""  # prefix of the default run name


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of every non-blank line of a JSONL file, read as it streams; one
    SourceError naming the file (and line) for a line that is not JSON, an unreadable file or
    text that is not UTF-8. What a record must hold is the reader's own check."""
    try:
        with open(path, encoding="utf-8") as handle:
            for n, text in enumerate(handle, 1):
                if not text.strip():
                    continue
                try:
                    yield n, json.loads(text)
                except ValueError as exc:
                    raise SourceError(f"{path}:{n}: not JSON ({exc})") from None
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path}: not UTF-8 text ({exc.reason})") from None


_SPACE = re.compile(r"\s+")


def normalise(text: str | None) -> str:
    """The text items are matched on: Unicode NFC, runs of white space as one space, no
    leading or trailing space (tools differ in trailing newlines and wrapping, not words)."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text or "")).strip()


def text_hash(text: str | None) -> str:
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def module(fmt: str) -> Any:
    if fmt not in FORMATS:
        raise SourceError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    ref = FORMATS[fmt]
    return importlib.import_module(ref) if isinstance(ref, str) else ref()


def detect(path: Path) -> str:
    """The format of a file, recognised from its name and first bytes (a folder: lm-eval's
    output folder); a SourceError naming the file when no reader recognises it."""
    head = b""
    if path.is_file():
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    elif not path.exists():
        raise SourceError(f"{path}: no such file or folder")
    for fmt in FORMATS:
        if module(fmt).detect(path, head):
            return fmt
    raise SourceError(
        f"{path}: not a results file this program reads ({described()}); give --format to "
        "read it as one of " + ", ".join(FORMATS)
    )


def read(path: Path, fmt: str | None = None) -> tuple[str, list[SourceRun]]:
    """(format, runs) of a file."""
    fmt = fmt or detect(path)
    return fmt, module(fmt).read(path)
