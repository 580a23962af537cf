"""Reading user-supplied text files the same way in every importer.

Why one module: the importers used `str.splitlines()`, which also breaks lines at U+2028,
U+2029, U+0085, form feed and vertical tab, so valid files (a question with a U+2028 inside)
were cut mid-record and rejected. Here lines end at "\\n" only (a trailing "\\r" is dropped),
NUL bytes are refused, and every problem is one line naming the file (and the line when there
is one): a folder, a missing or unreadable file, text that is not UTF-8, JSON nested too deep.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Nesting depth reported as the culprit when json's recursive decoder gives up (RecursionError);
# a legitimate items file nests 2-3 levels.
MAX_JSON_DEPTH = 100


class InputFileError(ValueError):
    """A problem with an input file; the message is `PATH[:LINE]: why`."""


def split_lines(text: str) -> list[str]:
    """Lines ending at "\\n" only (so U+2028, U+0085, form feed stay inside their line)."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def line_of(text: str, pos: int) -> int:
    """1-based line of character offset `pos`."""
    return text.count("\n", 0, pos) + 1


def nul_line(text: str) -> int | None:
    """Line of the first NUL character, None when there is none."""
    pos = text.find("\x00")
    return None if pos < 0 else line_of(text, pos)


def where(label: str, line: int | None) -> str:
    return f"{label}:{line}" if line else label


def read_bytes(path: str | Path, label: str | None = None) -> bytes:
    """A file's bytes, or InputFileError saying why not (missing, folder, unreadable)."""
    p = Path(path)
    label = label or str(p)
    if p.is_dir():
        raise InputFileError(f"{label}: is a folder, not a file")
    if not p.exists():
        raise InputFileError(f"{label}: no such file")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise InputFileError(f"{label}: cannot read ({exc.strerror or exc})") from None


def decode(data: bytes, label: str, *, fmt: Callable[[str, int | None], str] = where) -> str:
    """UTF-8 text (a BOM is dropped); refuses undecodable bytes and NUL, naming the line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputFileError(
            f"{fmt(label, line)}: not UTF-8 text (byte 0x{data[exc.start]:02x}"
            f" at offset {exc.start})"
        ) from None
    bad = nul_line(text)
    if bad is not None:
        raise InputFileError(
            f"{fmt(label, bad)}: contains a NUL byte (a binary file, or "
            "UTF-16 text?); save it as UTF-8 text"
        )
    return text


def read_text(
    path: str | Path, label: str | None = None, *, fmt: Callable[[str, int | None], str] = where
) -> str:
    p = Path(path)
    label = label or str(p)
    return decode(read_bytes(p, label), label, fmt=fmt)


def _depth_exceeds(text: str, limit: int) -> int | None:
    """Offset where bracket nesting (outside strings) first exceeds `limit`, else None."""
    depth = 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return i
        elif ch in "]}":
            depth -= 1
    return None


def loads(text: str, label: str, first_line: int = 1) -> Any:
    """json.loads that reports nesting too deep for the decoder (RecursionError) as a clear
    error naming the line where it gets too deep, instead of a traceback.
    JSONDecodeError passes through."""
    try:
        return json.loads(text)
    except RecursionError:
        pos = _depth_exceeds(text, MAX_JSON_DEPTH)
        line = first_line + (line_of(text, pos) - 1 if pos is not None else 0)
        raise InputFileError(
            f"{label}:{line}: JSON nested too deeply (more than {MAX_JSON_DEPTH} levels)"
        ) from None


def missing_keys(obj: dict, required: tuple[str, ...]) -> list[str]:
    """A record's problem when it lacks required keys ([] when it has them all)."""
    missing = [k for k in required if k not in obj]
    return ["missing key(s) " + ", ".join(missing)] if missing else []


def string_list(value: Any, key: str) -> tuple[list[str] | None, list[str]]:
    """(the value, []) when it is a non-empty list of strings, else (None, [why]): the check
    of a record's steps, shared by the importers of step-by-step traces."""
    if not isinstance(value, list) or not value:
        return None, [f"'{key}' must be a non-empty list of strings"]
    bad = next((i for i, s in enumerate(value) if not isinstance(s, str)), None)
    if bad is not None:
        return None, [f"'{key}'[{bad}] is not a string"]
    return value, []
