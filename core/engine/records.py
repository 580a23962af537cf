"""Checking imported records the same way in every importer: JSON Lines or a JSON array read
with each record's line, the usual field checks (a non-empty string, an index into a record's
steps), every problem as one `FILE:LINE: why` line, and an item set written in one go.

Benchmark-neutral building blocks: a package's items module names its own keys and meanings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from core.engine.textio import InputFileError, line_of, loads, split_lines

if TYPE_CHECKING:
    import pandas as pd

    from core.store import Store

T = TypeVar("T")
SHOWN = 50  # problems an error message lists; the rest are counted


class RecordProblems(ValueError):
    """One or more bad records; the message lists each as `FILE:LINE: why` (the first 50,
    then how many more). `problems` keeps them all."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        more = f"\n… and {len(problems) - SHOWN} more" if len(problems) > SHOWN else ""
        super().__init__("\n".join(problems[:SHOWN]) + more)


Records = tuple[list[tuple[int, Any]], list[str]]  # (line or row, record) each, problems


def each_json_line(
    text: str, label: str, *, column: bool = True
) -> Iterator[tuple[int, Any, str | None]]:
    """(line, record, None) for each non-blank line of JSON Lines text, or (line, None, why)
    for a line that is not JSON (`label:LINE: invalid JSON (why at column C)`; without the
    column when `column` is false), in file order."""
    for lineno, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, loads(line, label, lineno), None
        except json.JSONDecodeError as exc:
            at = f" at column {exc.colno}" if column else ""
            yield lineno, None, f"{label}:{lineno}: invalid JSON ({exc.msg}{at})"
        except InputFileError as exc:
            yield lineno, None, str(exc)


def json_lines(text: str, label: str, *, column: bool = True) -> Records:
    """The records of JSON Lines text, each with its 1-based line, and the problems of the
    lines that are not JSON (see each_json_line)."""
    out: list[tuple[int, Any]] = []
    problems: list[str] = []
    for lineno, obj, bad in each_json_line(text, label, column=column):
        if bad is None:
            out.append((lineno, obj))
        else:
            problems.append(bad)
    return out, problems


def json_records(text: str, label: str) -> Records:
    """The records of a JSON array (each with the line it starts on) or of JSON Lines."""
    if text.lstrip().startswith("["):
        try:
            return json_array(text), []
        except json.JSONDecodeError as exc:
            return [], [f"{label}:{exc.lineno}: invalid JSON ({exc.msg} at column {exc.colno})"]
    return json_lines(text, label)


def json_array(text: str, decoder: json.JSONDecoder | None = None) -> list[tuple[int, Any]]:
    """The elements of a top-level JSON array, each with the line it starts on; a
    JSONDecodeError for text that is not one."""
    decoder = decoder or json.JSONDecoder()
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


def not_an_object(obj: Any) -> list[str]:
    """The problem of a record that is not a JSON object ([] when it is one)."""
    return [] if isinstance(obj, dict) else [f"expected a JSON object, got {type(obj).__name__}"]


def non_empty_strings(obj: dict[str, Any], *keys: str) -> list[str]:
    """A problem for each of `keys` present in the record but not a non-empty string."""
    return [
        f"'{key}' must be a non-empty string"
        for key in keys
        if key in obj and not (isinstance(obj[key], str) and obj[key].strip())
    ]


def step_index(
    obj: dict[str, Any], key: str, steps: list[Any] | None, *, none: int | None = None
) -> list[str]:
    """The problem of `obj[key]` when present and not a 0-based index into `steps` (a list, or
    None when the steps are bad: then only the type and the lower bound are checked) nor the
    record's "no such step" marker `none` (None = JSON null, or an integer such as -1)."""
    if key not in obj:
        return []
    value = obj[key]
    if value is None and none is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int):
        also = "or null" if none is None else f"({none} = no wrong step)"
        return [f"'{key}' must be an integer {also}, got {json.dumps(value)}"]
    if none is None and value < 0:
        return [f"'{key}' {value} is negative (it is 0-based)"]
    if none is not None and value < none:
        return [f"'{key}' {value} is below {none} ({none} = no wrong step, else a 0-based index)"]
    if steps is not None and value >= len(steps):
        return [f"'{key}' {value} is out of range for {len(steps)} steps (it is 0-based)"]
    return []


def fields_of(obj: object, *names: str) -> dict[str, Any]:
    """{name: obj.name} for `names`, in that order: a record's payload or a task's run
    parameters written once as the list of what they hold."""
    return {name: getattr(obj, name) for name in names}


def item_rows_frame(item_set: str, benchmark: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The items table's rows of one set: each row's columns (core.store.ITEM_COLUMNS, a
    column it leaves out is NULL), `payload` a dict written as JSON (non-ASCII kept)."""
    import pandas as pd

    from core.store import ITEM_COLUMNS

    out: dict[str, list[Any]] = {"item_set": [item_set] * len(rows)}
    for column in ITEM_COLUMNS:
        out[column] = [r.get(column) for r in rows]
    out["benchmark"] = [benchmark] * len(rows)
    out["payload"] = [json.dumps(r["payload"], ensure_ascii=False) for r in rows]
    return pd.DataFrame(out)


def count_by(
    records: list[T], group: Callable[[T], str], flags: Callable[[T], dict[str, bool]]
) -> dict[str, dict[str, int]]:
    """Per group (in first-seen order), how many records raise each flag: the counts an item
    set keeps with it (e.g. `{"math": {"items": 3, "erroneous": 1}}`); every group has every
    flag of its first record, in that order."""
    out: dict[str, dict[str, int]] = {}
    for record in records:
        raised = flags(record)
        counts = out.setdefault(group(record), dict.fromkeys(raised, 0))
        for name, up in raised.items():
            counts[name] += bool(up)
    return out


@dataclass
class ImportResult:
    """What writing an item set did: its name, how many items, whether it replaced a set of the
    same name, and the counts kept with it."""

    item_set: str
    n_items: int
    replaced: bool
    info: dict[str, Any] = field(default_factory=dict)


def write_item_set(
    store: Store,
    benchmark: str,
    item_set: str,
    frame: pd.DataFrame,
    *,
    origin: str,
    info: dict[str, Any],
    problem: Callable[[list[str]], Exception] = RecordProblems,
) -> ImportResult:
    """Write `frame` as the item set in one transaction (replacing a set of that name of the
    same benchmark); a set that cannot be replaced (another benchmark's, or in use) is raised
    as `problem([why])`, the importer's own error."""
    from core.store import ItemSetConflict, replace_item_set

    def write(con: Any) -> bool:
        try:
            return replace_item_set(con, item_set, benchmark, frame, origin=origin, info=info)
        except ItemSetConflict as exc:
            raise problem([str(exc)]) from exc  # `init` looks for ItemSetInUse

    replaced = store.transaction(write)
    return ImportResult(item_set, len(frame), replaced, info)
