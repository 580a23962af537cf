"""ProcessBench solutions: read the released records, validate every one, store one item each.

The release (Hugging Face `Qwen/ProcessBench`, one split per subset: gsm8k, math,
olympiadbench, omnimath) holds records `id, generator, problem, steps, final_answer_correct,
label`: `steps` the solution's paragraphs, `label` the 0-based index of the earliest wrong
paragraph or -1 when every paragraph is correct. The hub serves them as Parquet; `datasets`
exports them as JSON Lines or a JSON array. All three are read here.

The split is the id's prefix (`gsm8k-0` -> gsm8k), as in the release; an id without a `-`
takes the file name's stem.

Bad input is reported as `FILE:LINE: why` for every bad record (a Parquet file has no lines:
`FILE:row N`), and nothing is written while there is one.
"""

from __future__ import annotations

import io
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from core.engine.textio import (
    InputFileError,
    decode,
    line_of,
    loads,
    missing_keys,
    read_bytes,
    split_lines,
    string_list,
)
from core.store import ItemSetConflict, Store, replace_item_set

BENCHMARK = "processbench"
SPLITS = ("gsm8k", "math", "olympiadbench", "omnimath")  # the release's, in its order
REQUIRED_KEYS = ("id", "problem", "steps", "label")
PARQUET_MAGIC = b"PAR1"


class ImportProblem(ValueError):
    """One or more bad records; the message lists each as `FILE:LINE: why`."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = problems[:50]
        more = f"\n… and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__("\n".join(shown) + more)


@dataclass
class Solution:
    """One validated record."""

    item_id: str
    split: str
    problem: str
    steps: list[str]
    label: int
    generator: str | None
    final_answer_correct: bool | None
    source: str
    line: int

    def payload(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "steps": self.steps,
            "label": self.label,
            "generator": self.generator,
            "final_answer_correct": self.final_answer_correct,
            "source": self.source,
            "line": self.line,
        }


def split_of(item_id: str, filename: str) -> str:
    """`gsm8k-12` -> gsm8k; an id without '-' -> the file's stem (`math.jsonl` -> math)."""
    head, sep, _ = item_id.rpartition("-")
    return head if sep and head else Path(filename).name.split(".")[0].split("-")[0]


def check_record(obj: Any) -> list[str]:
    """Why a record is not a valid ProcessBench solution (empty list = valid)."""
    if not isinstance(obj, dict):
        return [f"expected a JSON object, got {type(obj).__name__}"]
    why = missing_keys(obj, REQUIRED_KEYS)
    if "id" in obj and not (isinstance(obj["id"], str) and obj["id"].strip()):
        why.append("'id' must be a non-empty string")
    if "problem" in obj and not (isinstance(obj["problem"], str) and obj["problem"].strip()):
        why.append("'problem' must be a non-empty string")
    steps = obj.get("steps")
    if "steps" in obj:
        steps, problems = string_list(steps, "steps")
        why += problems
    if "label" in obj:
        label = obj["label"]
        if isinstance(label, bool) or not isinstance(label, int):
            why.append(f"'label' must be an integer (-1 = no wrong step), got {json.dumps(label)}")
        elif label < -1:
            why.append(f"'label' {label} is below -1 (-1 = no wrong step, else a 0-based index)")
        elif steps is not None and label >= len(steps):
            why.append(f"'label' {label} is out of range for {len(steps)} steps (it is 0-based)")
    gen = obj.get("generator")
    if gen is not None and not isinstance(gen, str):
        why.append("'generator' must be a string")
    fac = obj.get("final_answer_correct")
    if fac is not None and not isinstance(fac, bool):
        why.append(f"'final_answer_correct' must be true or false, got {json.dumps(fac)}")
    return why


Records = tuple[list[tuple[int, Any]], list[str]]  # (line or row, record), problems


def _records_json(text: str, label: str) -> Records:
    """The records of a JSON array or of JSON Lines, each with its line; or the problems."""
    if text.lstrip().startswith("["):
        try:
            return _array(text, json.JSONDecoder()), []
        except json.JSONDecodeError as exc:
            return [], [f"{label}:{exc.lineno}: invalid JSON ({exc.msg} at column {exc.colno})"]
    out: list[tuple[int, Any]] = []
    problems: list[str] = []
    for lineno, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        try:
            out.append((lineno, loads(line, label, lineno)))
        except json.JSONDecodeError as exc:
            problems.append(f"{label}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno})")
        except InputFileError as exc:
            problems.append(str(exc))
    return out, problems


def _array(text: str, decoder: json.JSONDecoder) -> list[tuple[int, Any]]:
    """The elements of a top-level JSON array, each with the line it starts on."""
    pos = text.index("[") + 1
    out: list[tuple[int, Any]] = []
    ws = " \t\r\n"
    while True:
        while pos < len(text) and text[pos] in ws:
            pos += 1
        if pos < len(text) and text[pos] == "]":
            pos += 1
            break
        obj, end = decoder.raw_decode(text, pos)
        out.append((line_of(text, pos), obj))
        pos = end
        while pos < len(text) and text[pos] in ws:
            pos += 1
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        if pos < len(text) and text[pos] == "]":
            pos += 1
            break
        raise json.JSONDecodeError("expected ',' or ']'", text, pos)
    if text[pos:].strip():
        raise json.JSONDecodeError("extra data after the array", text, pos)
    return out


def _records_parquet(data: bytes, label: str) -> Records:
    """The rows of a Parquet file as plain Python values (1-based row numbers); or why not."""
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(io.BytesIO(data)).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
        return [], [f"{label}: not a readable Parquet file ({exc})"]
    return list(enumerate(rows, start=1)), []


def read_records(
    path: Path, label: str | None = None
) -> tuple[list[tuple[str, int, Any]], list[str]]:
    """(where, line or row, record) of one file, and its problems (an unreadable file or
    records)."""
    label = label or str(path)
    try:
        data = read_bytes(path, label)
    except InputFileError as exc:
        return [], [str(exc)]
    if data[:4] == PARQUET_MAGIC:
        found, problems = _records_parquet(data, label)
        unit = "row "
    else:
        try:
            text = decode(data, label)
        except InputFileError as exc:
            return [], [str(exc)]
        found, problems = _records_json(text, label)
        unit = ""
    pairs = [(f"{label}:{unit}{n}", n, rec) for n, rec in found]
    if not pairs and not problems:
        return [], [f"{label}: no records"]
    return pairs, problems  # the readable records are still checked: every bad line is named


def read_solutions(paths: list[Path], labels: list[str] | None = None) -> list[Solution]:
    """Parse and validate all files; raise ImportProblem listing every bad record."""
    solutions: list[Solution] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for k, path in enumerate(paths):
        label = labels[k] if labels else str(path)
        pairs, bad = read_records(path, label)
        problems += bad
        for where, line, obj in pairs:
            why = check_record(obj)
            if not why and obj["id"] in seen:
                why.append(f"id {obj['id']!r} repeats {seen[obj['id']]}")
            if why:
                problems.append(f"{where}: " + "; ".join(why))
                continue
            seen[obj["id"]] = where
            solutions.append(
                Solution(
                    item_id=obj["id"],
                    split=split_of(obj["id"], path.name),
                    problem=obj["problem"],
                    steps=list(obj["steps"]),
                    label=int(obj["label"]),
                    generator=obj.get("generator"),
                    final_answer_correct=obj.get("final_answer_correct"),
                    source=Path(label).name,
                    line=line,
                )
            )
    if problems:
        raise ImportProblem(problems)
    return solutions


def items_frame(solutions: list[Solution], item_set: str) -> pd.DataFrame:
    """Rows for the items table: the split is `split` and `primary_category` (what --limit
    stratifies over), `is_error` = a wrong step exists, `gold` = the label as text."""
    return pd.DataFrame(
        {
            "item_set": [item_set] * len(solutions),
            "item_id": [s.item_id for s in solutions],
            "benchmark": [BENCHMARK] * len(solutions),
            "split": [s.split for s in solutions],
            "is_error": [s.label != -1 for s in solutions],
            "primary_category": [s.split for s in solutions],
            "secondary_category": [s.generator for s in solutions],
            "prompt": [s.problem for s in solutions],
            "explanation": [None] * len(solutions),
            "gold": [str(s.label) for s in solutions],
            "payload": [json.dumps(s.payload(), ensure_ascii=False) for s in solutions],
        }
    )


def set_info(solutions: list[Solution]) -> dict[str, Any]:
    """Counts per split (erroneous / correct), kept with the item set."""
    splits: dict[str, dict[str, int]] = {}
    for s in solutions:
        d = splits.setdefault(s.split, {"solutions": 0, "erroneous": 0, "correct": 0})
        d["solutions"] += 1
        d["erroneous" if s.label != -1 else "correct"] += 1
    return {"splits": splits, "solutions": len(solutions)}


@dataclass
class ImportResult:
    item_set: str
    n_items: int
    replaced: bool
    info: dict[str, Any] = field(default_factory=dict)


def store_solutions(
    store: Store, solutions: list[Solution], item_set: str, origin: str
) -> ImportResult:
    """Write the set in one transaction, replacing a ProcessBench set of the same name."""
    frame = items_frame(solutions, item_set)
    info = set_info(solutions)

    def write(con: duckdb.DuckDBPyConnection) -> bool:
        try:
            return replace_item_set(con, item_set, BENCHMARK, frame, origin=origin, info=info)
        except ItemSetConflict as exc:
            raise ImportProblem([str(exc)]) from exc  # `init` looks for ItemSetInUse

    replaced = store.transaction(write)
    return ImportResult(item_set, len(frame), replaced, info)


def import_files(store: Store, paths: list[Path], name: str | None = None) -> ImportResult:
    """Validate everything first, then write everything at once."""
    solutions = read_solutions(paths)
    if name is None:
        stems = sorted({p.name.split(".")[0] for p in paths})
        name = "processbench-" + "+".join(stems) if len(stems) <= 3 else "processbench-files"
    return store_solutions(store, solutions, name, ", ".join(str(p) for p in paths))


def import_builtin(store: Store, path: Path, name: str) -> int:
    """`init` hook: (re)load the shipped sample under its fixed name; returns the item count."""
    return store_solutions(store, read_solutions([path]), name, "builtin").n_items


def import_bytes(store: Store, data: bytes, filename: str, name: str) -> int:
    """The Import page's upload, validated and written like `import processbench`; problems
    name the uploaded file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_bytes(data)
        solutions = read_solutions([path], [Path(filename).name])
        return store_solutions(store, solutions, name, Path(filename).name).n_items
