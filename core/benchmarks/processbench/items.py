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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.engine.records import (
    ImportResult,
    RecordProblems,
    Records,
    count_by,
    fields_of,
    item_rows_frame,
    json_records,
    non_empty_strings,
    not_an_object,
    step_index,
    write_item_set,
)
from core.engine.textio import InputFileError, decode, missing_keys, read_bytes, string_list
from core.store import Store

BENCHMARK = "processbench"
SPLITS = ("gsm8k", "math", "olympiadbench", "omnimath")  # the release's, in its order
REQUIRED_KEYS = ("id", "problem", "steps", "label")
PARQUET_MAGIC = b"PAR1"


class ImportProblem(RecordProblems):
    """One or more bad records; the message lists each as `FILE:LINE: why`."""


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
        return fields_of(
            self, "split", "steps", "label", "generator", "final_answer_correct", "source", "line"
        )


def split_of(item_id: str, filename: str) -> str:
    """`gsm8k-12` -> gsm8k; an id without '-' -> the file's stem (`math.jsonl` -> math)."""
    head, sep, _ = item_id.rpartition("-")
    return head if sep and head else Path(filename).name.split(".")[0].split("-")[0]


def check_record(obj: Any) -> list[str]:
    """Why a record is not a valid ProcessBench solution (empty list = valid)."""
    if not isinstance(obj, dict):
        return not_an_object(obj)
    why = missing_keys(obj, REQUIRED_KEYS) + non_empty_strings(obj, "id", "problem")
    steps = obj.get("steps")
    if "steps" in obj:
        steps, problems = string_list(steps, "steps")
        why += problems
    why += step_index(obj, "label", steps, none=-1)
    gen = obj.get("generator")
    if gen is not None and not isinstance(gen, str):
        why.append("'generator' must be a string")
    fac = obj.get("final_answer_correct")
    if fac is not None and not isinstance(fac, bool):
        why.append(f"'final_answer_correct' must be true or false, got {json.dumps(fac)}")
    return why


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
        found, problems = json_records(text, label)
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
    rows = [
        {
            "item_id": s.item_id,
            "split": s.split,
            "is_error": s.label != -1,
            "primary_category": s.split,
            "secondary_category": s.generator,
            "prompt": s.problem,
            "gold": str(s.label),
            "payload": s.payload(),
        }
        for s in solutions
    ]
    return item_rows_frame(item_set, BENCHMARK, rows)


def set_info(solutions: list[Solution]) -> dict[str, Any]:
    """Counts per split (erroneous / correct), kept with the item set."""
    splits = count_by(
        solutions,
        lambda s: s.split,
        lambda s: {"solutions": True, "erroneous": s.label != -1, "correct": s.label == -1},
    )
    return {"splits": splits, "solutions": len(solutions)}


def store_solutions(
    store: Store, solutions: list[Solution], item_set: str, origin: str
) -> ImportResult:
    """Write the set in one transaction, replacing a ProcessBench set of the same name."""
    frame = items_frame(solutions, item_set)
    info = set_info(solutions)
    return write_item_set(
        store, BENCHMARK, item_set, frame, origin=origin, info=info, problem=ImportProblem
    )


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
