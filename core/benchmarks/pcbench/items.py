"""PCBench problems: read the released records (JSONL, or a JSON array), validate every record,
store one item per problem.

The released `dataset.jsonl` (ALIENS232/PCBench) holds one object per problem; the fields the
paper's code reads (evaluation/inference.py, evaluation/eval.py of MLGroupJLU/Premise_Critique):
`pid`, `conflict_type` (one of ERROR_TYPES), `difficulty` (normal | medium | hard),
`normal_query` (the sound problem), `ill_query` (the problem with the flawed premise) and
`conflict` (`conflict_reason` for the two contradiction types, `recomposed_premise` — the wrong
step of a partial solution — for the other two); `meta_info` (e.g. `final_answer`) is kept.

Stored as: item_id = pid, prompt = ill_query, primary_category = conflict_type,
secondary_category = difficulty, gold = the flaw as the paper's judge is told it
(`conflict_place`), payload = the rest. Every item has a flaw (is_error true; no controls).

Bad input is reported as `FILE:LINE: why` for every bad record, and nothing is written: text
fields must be strings (a number or null `pid` is refused, not stored as '12345' or 'None'),
`meta_info` an object, and NaN / Infinity are not JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from core.benchmarks.pcbench import NAME
from core.engine.records import RecordProblems
from core.store import Store, replace_item_set

ERROR_TYPES = (
    "contra_infer_insert",
    "contra_premise_insert",
    "flawed_solution_completion",
    "irr_query_distraction",
)
ERROR_TYPE_LABELS = {
    "contra_infer_insert": "Contradictory inference inserted",
    "contra_premise_insert": "Contradictory premise inserted",
    "flawed_solution_completion": "Flawed solution completion",
    "irr_query_distraction": "Irrelevant query distraction",
}
DIFFICULTIES = ("normal", "medium", "hard")
FORMAT_HELP: str = (
    "PCBench records as released (`dataset.jsonl` of the Hugging Face set `ALIENS232/PCBench`): "
    "one JSON object a line (or a JSON array) with `pid`, `conflict_type` ("
    + ", ".join(f"`{t}`" for t in ERROR_TYPES)
    + "), `difficulty` (`normal`, `medium`, `hard`), `ill_query` (the problem with the flawed "
    "premise), `normal_query` (optional) and `conflict` (an object with `conflict_reason`, or "
    "`recomposed_premise` for the two solution-step types)."
)


class ImportProblem(RecordProblems):
    """One or more bad records; the message lists each as `FILE:LINE: why`."""


def conflict_place(conflict_type: str, conflict: dict[str, Any]) -> str:
    """What the paper's judge is told the flaw is (eval.py `get_conflict_place`)."""
    if conflict_type in ("flawed_solution_completion", "irr_query_distraction"):
        return f"Step '{conflict.get('recomposed_premise', '')}' in partial solution is wrong"
    return str(conflict.get("conflict_reason", ""))


class _NotJsonValue(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON has no such values."""


def _no_constants(_name: str) -> Any:
    raise _NotJsonValue("NaN or Infinity is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def _records(text: str) -> list[tuple[int, Any, str | None]]:
    """(line, object, problem) per record: JSONL, or a JSON array whose elements are located
    by the line they start on."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        decoder = _DECODER
        pos = text.index("[") + 1
        out: list[tuple[int, Any, str | None]] = []
        while True:
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= len(text):
                return [(1, None, "JSON array is not closed")]
            if text[pos] == "]":
                return out
            line = text.count("\n", 0, pos) + 1
            try:
                obj, pos = decoder.raw_decode(text, pos)
            except _NotJsonValue as exc:
                return [*out, (line, None, str(exc))]
            except ValueError as exc:
                return [*out, (line, None, f"not JSON ({exc})")]
            out.append((line, obj, None))
    rows: list[tuple[int, Any, str | None]] = []
    for n, line_text in enumerate(text.split("\n"), 1):
        if not line_text.strip():
            continue
        try:
            rows.append((n, _DECODER.decode(line_text), None))
        except _NotJsonValue as exc:
            rows.append((n, None, str(exc)))
        except ValueError as exc:
            rows.append((n, None, f"not JSON ({exc})"))
    return rows


def _kind(value: Any, present: bool = True) -> str:
    """A wrong value as an error message names it: its JSON type (and a short number)."""
    if not present:
        return "nothing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean: {str(value).lower()}"
    if isinstance(value, int | float):
        return f"a number: {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, str):
        return "an empty string" if not value.strip() else "a string"
    return type(value).__name__


def _check(obj: Any) -> str | None:
    """Why a record is unusable, or None."""
    if not isinstance(obj, dict):
        return "needs a JSON object"
    # the release's pids are strings ("875"): a number or null would be stored as its text
    # ('12345', 'None') and one spelled 5 would collide with "5"
    if not isinstance(obj.get("pid"), str) or not obj["pid"].strip():
        return f"'pid' must be a non-empty string (got {_kind(obj.get('pid'), 'pid' in obj)})"
    for key in ("ill_query", "normal_query"):
        if key in obj and obj[key] is not None and not isinstance(obj[key], str):
            return f"'{key}' must be a string (got {_kind(obj[key])})"
    if obj.get("meta_info") is not None and not isinstance(obj["meta_info"], dict):
        return f"'meta_info' must be an object (got {_kind(obj['meta_info'])})"
    if obj.get("conflict_type") not in ERROR_TYPES:
        return f"conflict_type {obj.get('conflict_type')!r} is not one of {', '.join(ERROR_TYPES)}"
    if obj.get("difficulty") not in DIFFICULTIES:
        return f"difficulty {obj.get('difficulty')!r} is not one of {', '.join(DIFFICULTIES)}"
    if not isinstance(obj.get("ill_query"), str) or not obj["ill_query"].strip():
        return "empty or missing 'ill_query'"
    conflict = obj.get("conflict")
    if not isinstance(conflict, dict):
        return "missing 'conflict' object"
    for key in ("conflict_reason", "recomposed_premise", "original_premise"):
        if conflict.get(key) is not None and not isinstance(conflict[key], str):
            return f"'conflict.{key}' must be a string (got {_kind(conflict[key])})"
    if not conflict_place(obj["conflict_type"], conflict).strip() or (
        obj["conflict_type"] in ("flawed_solution_completion", "irr_query_distraction")
        and not str(conflict.get("recomposed_premise") or "").strip()
    ):
        key = (
            "recomposed_premise"
            if obj["conflict_type"] in ("flawed_solution_completion", "irr_query_distraction")
            else "conflict_reason"
        )
        return f"conflict.{key} is empty (the judge needs the flaw)"
    return None


def read_items(data: bytes, filename: str) -> pd.DataFrame:
    """The items of a file, or an ImportProblem listing every bad record."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportProblem([f"{filename}:1: not UTF-8 text ({exc.reason})"]) from None
    problems: list[str] = []
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for line, obj, problem in _records(text):
        problem = problem or _check(obj)
        if problem:
            problems.append(f"{filename}:{line}: {problem}")
            continue
        pid = str(obj["pid"]).strip()
        if pid in seen:
            problems.append(f"{filename}:{line}: pid {pid!r} repeats line {seen[pid]}")
            continue
        seen[pid] = line
        conflict = obj["conflict"]
        payload = {k: v for k, v in obj.items() if k not in ("pid", "ill_query", "conflict_type")}
        rows.append(
            {
                "item_id": pid,
                "benchmark": NAME,
                "is_error": True,
                "primary_category": obj["conflict_type"],
                "secondary_category": obj["difficulty"],
                "prompt": obj["ill_query"],
                "explanation": str(conflict.get("conflict_reason") or "") or None,
                "gold": conflict_place(obj["conflict_type"], conflict),
                "payload": json.dumps(payload, ensure_ascii=False),
            }
        )
    if not rows and not problems:
        problems.append(f"{filename}:1: no records")
    if problems:
        raise ImportProblem(problems)
    return pd.DataFrame(rows)


def import_bytes(store: Store, data: bytes, filename: str, name: str) -> int:
    """Import a file as item set `name` (the CLI's `import pcbench` and the Import page)."""
    frame = read_items(data, Path(filename).name).assign(item_set=name)
    store.transaction(lambda con: replace_item_set(con, name, NAME, frame, origin=filename))
    return len(frame)


def import_builtin(store: Store, path: Path, name: str) -> int:
    """`init` hook: (re)load the shipped sample under its fixed name."""
    return import_bytes(store, path.read_bytes(), path.name, name)
