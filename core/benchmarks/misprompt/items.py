"""Mis-prompt items: read a CSV / JSON / JSONL file, validate every row, write one item set.

Fields are the released export's (SPEC §1): `id, split, question, error, primary_category,
secondary_category, explanation, gold_answer`; `error` is `error` or `no_error`. An optional
`group` (the source items share) makes the metrics' intervals resample groups. The original
release's names are accepted too (`prompt` for `question`, `correct` for `no_error`, `label` for
`error`), and categories may use the tables' short names (`TextContSubjSpec`) or the long ones.

All rows are validated before anything is written; every problem is reported as
`PATH:LINE: why` (CSV line numbers follow multi-line quoted cells) and nothing is written when
there is one. The set is written in one transaction, replacing a set of the same name.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pandas as pd

from core.benchmarks.misprompt.taxonomy import PRIMARY_OF, canonical_primary, canonical_secondary
from core.engine.records import each_json_line
from core.engine.textio import InputFileError, decode, loads, read_bytes, split_lines
from core.store import ITEM_COLUMNS, ItemSetConflict, Store, replace_item_set

if TYPE_CHECKING:
    from core.registry import UploadPreview

BENCHMARK = "misprompt"
COLUMNS = [
    "id",
    "split",
    "question",
    "error",
    "primary_category",
    "secondary_category",
    "explanation",
    "gold_answer",
]
REQUIRED_COLUMNS = ("id", "question", "error")
# Optional: `group` = the source an item shares with others (items written from one passage,
# one template, one author). Items of one group are not independent: the metrics' intervals
# then resample groups, not items (docs/statistics.md). Kept in the item's payload as `group`.
OPTIONAL_COLUMNS = ("group",)
FIELD_ALIASES = {
    "prompt": "question",
    "label": "error",
    "gold": "gold_answer",
    "answer": "gold_answer",
    "ground_truth": "gold_answer",
    "primary": "primary_category",
    "secondary": "secondary_category",
}
# Fields that hold text: a JSON number, boolean, list or object there is a mistake in the file
# (it would be stored as its repr), not something to convert silently.
TEXT_FIELDS = (
    "question",
    "split",
    "primary_category",
    "secondary_category",
    "explanation",
    "gold_answer",
)
ERROR_VALUES = {
    "error": True,
    "no_error": False,
    "correct": False,
    "no error": False,
    "erroneous": True,
}
MAX_REPORTED = 50


class ItemImportError(ValueError):
    """The file has problems; `.errors` lists them as 'PATH:LINE: why' strings."""

    def __init__(self, errors: list[str], total: int | None = None) -> None:
        self.errors = errors
        self.total = total if total is not None else len(errors)
        more = self.total - len(errors)
        text = "\n".join(errors) + (f"\n… and {more} more problems" if more > 0 else "")
        super().__init__(f"{self.total} problem(s); nothing was imported:\n{text}")


@dataclass
class RawRow:
    """One record as read from the file, with the line it starts on (for error messages)."""

    line: int
    fields: dict[str, Any]


@dataclass
class ParsedItems:
    items: pd.DataFrame  # items-table columns (item_set filled on write)
    errors: list[str] = field(default_factory=list)
    total_errors: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors


# -- reading ----------------------------------------------------------------------------------


def _decode(data: bytes, label: str) -> str:
    try:
        return decode(data, label)
    except InputFileError as exc:
        raise ItemImportError([str(exc)]) from None


def _format_of(filename: str, text: str) -> str:
    suffix = Path(filename).suffix.lower()
    if suffix in (".csv", ".tsv"):
        return suffix[1:]
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "json"
    head = text.lstrip()[:1]
    if head in "[{":
        first = split_lines(text.lstrip())[0] if text.strip() else ""
        try:
            json.loads(first)
            return "jsonl" if head == "{" and len(split_lines(text.strip())) > 1 else "json"
        except (json.JSONDecodeError, RecursionError):
            return "json"
    return "csv"


def _read_csv(text: str, label: str, delimiter: str = ",") -> list[RawRow]:
    """Rows with their starting line: reader.line_num after a row is the row's *last* line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise ItemImportError([f"{label}:1: empty file"]) from None
    names = [h.strip().lower() for h in header]
    present = {FIELD_ALIASES.get(n, n) for n in names}
    missing = [c for c in REQUIRED_COLUMNS if c not in present]
    if missing:
        raise ItemImportError(
            [
                f"{label}:1: header lacks column(s) {', '.join(missing)} "
                f"(expected {', '.join(COLUMNS)})"
            ]
        )
    rows: list[RawRow] = []
    previous_end = reader.line_num
    try:
        for cells in reader:
            start = previous_end + 1
            previous_end = reader.line_num
            if not cells or all(not c.strip() for c in cells):
                continue
            if len(cells) != len(names):
                rows.append(
                    RawRow(
                        start, {"__bad__": f"{len(cells)} cells, header has {len(names)} columns"}
                    )
                )
                continue
            rows.append(RawRow(start, dict(zip(names, cells))))
    except csv.Error as exc:
        raise ItemImportError([f"{label}:{reader.line_num}: malformed CSV ({exc})"]) from exc
    return rows


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _read_jsonl(text: str, label: str) -> list[RawRow]:
    rows: list[RawRow] = []
    errors: list[str] = []
    for number, value, bad in each_json_line(text, label, column=False):
        if bad is not None:
            errors.append(bad)
            continue
        rows.append(
            RawRow(number, value if isinstance(value, dict) else {"__bad__": "not an object"})
        )
    if errors:
        raise ItemImportError(errors[:MAX_REPORTED], len(errors))
    return rows


def _array_positions(text: str, start: int) -> list[int]:
    """Start offsets of the elements of the JSON array beginning at text[start] == '['."""
    decoder = json.JSONDecoder()
    positions: list[int] = []
    i = start + 1
    ws = re.compile(r"[\s,]*")
    while True:
        i = ws.match(text, i).end()  # type: ignore[union-attr]  # [\s,]* always matches
        if i >= len(text) or text[i] == "]":
            return positions
        positions.append(i)
        _, i = decoder.raw_decode(text, i)


def _read_json(text: str, label: str) -> list[RawRow]:
    try:
        value = loads(text, label)
    except json.JSONDecodeError as exc:
        raise ItemImportError([f"{label}:{exc.lineno}: invalid JSON ({exc.msg})"]) from exc
    except InputFileError as exc:
        raise ItemImportError([str(exc)]) from None
    if isinstance(value, dict):
        records = next(
            (value[k] for k in ("data", "items", "rows") if isinstance(value.get(k), list)), None
        )
        if records is None:
            raise ItemImportError(
                [f'{label}:1: expected a list of items or {{"data": [...]}}']
            ) from None
        match = re.search(r'"(?:data|items|rows)"\s*:\s*\[', text)
        array_start = match.end() - 1 if match else None
    elif isinstance(value, list):
        records = value
        array_start = text.index("[")
    else:
        raise ItemImportError([f"{label}:1: expected a list of items"])
    try:
        positions = _array_positions(text, array_start) if array_start is not None else []
    except (json.JSONDecodeError, ValueError):
        positions = []
    if len(positions) != len(records):
        positions = []
    rows = []
    for k, record in enumerate(records):
        line = _line_at(text, positions[k]) if positions else 1
        rows.append(
            RawRow(line, record if isinstance(record, dict) else {"__bad__": "not an object"})
        )
    return rows


def read_rows(data: bytes, filename: str, label: str | None = None) -> list[RawRow]:
    """Parse a CSV / JSON / JSONL file's bytes into raw rows with line numbers."""
    label = label or filename
    text = _decode(data, label)
    fmt = _format_of(filename, text)
    if fmt in ("csv", "tsv"):
        return _read_csv(text, label, "\t" if fmt == "tsv" else ",")
    if fmt == "jsonl":
        return _read_jsonl(text, label)
    return _read_json(text, label)


# -- validation -------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


def _type_problems(fields: dict[str, Any]) -> list[str]:
    """Values of the wrong JSON type (CSV cells are always strings): text fields need strings,
    `id` a string or integer, `error` a string or boolean; null counts as empty."""
    why: list[str] = []
    for key, value in fields.items():
        name = FIELD_ALIASES.get(str(key).strip().lower(), str(key).strip().lower())
        if value is None:
            continue
        kind = type(value).__name__
        if name in TEXT_FIELDS and not isinstance(value, str):
            why.append(f"{key!s} must be a string, got {kind} {json.dumps(value)[:40]}")
        elif name in ("id", "group") and (
            isinstance(value, bool) or not isinstance(value, (str, int))
        ):
            why.append(f"{key!s} must be a string or an integer, got {kind}")
        elif name == "error" and not isinstance(value, (str, bool)):
            why.append(
                f"{key!s} must be 'error' or 'no_error', got {kind} {json.dumps(value)[:40]}"
            )
    return why


def _normalise_fields(fields: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in fields.items():
        name = str(key).strip().lower()
        name = FIELD_ALIASES.get(name, name)
        if name not in out or not out[name]:
            out[name] = (
                _text(value) if not isinstance(value, bool) else ("error" if value else "no_error")
            )
    return out


def _categories(
    f: dict[str, str], is_error: bool | None, problems: list[str]
) -> tuple[str | None, str | None]:
    """(primary, secondary) in canonical spelling for one row, appending what is wrong to
    `problems` (split from validate_rows to keep each check readable)."""
    primary_raw = f.get("primary_category", "")
    secondary_raw = f.get("secondary_category", "")
    primary: str | None = None
    secondary: str | None = None
    if is_error:
        if not secondary_raw:
            problems.append("erroneous item without secondary_category")
        else:
            secondary = canonical_secondary(secondary_raw)
            if secondary is None:
                problems.append(
                    f"unknown secondary_category {secondary_raw!r} (see the "
                    "taxonomy: e.g. 'Spelling Errors', 'TextContSubjSpec')"
                )
        if primary_raw:
            primary = canonical_primary(primary_raw)
            if primary is None:
                problems.append(f"unknown primary_category {primary_raw!r}")
            elif secondary and PRIMARY_OF[secondary] != primary:
                problems.append(
                    f"secondary_category {secondary!r} belongs to "
                    f"{PRIMARY_OF[secondary]!r}, not {primary!r}"
                )
        elif secondary:
            primary = PRIMARY_OF[secondary]
        if not f.get("gold_answer"):
            problems.append("erroneous item without gold_answer (the judge needs it)")
    elif is_error is False and (primary_raw or secondary_raw):
        problems.append(
            f"no_error item must have empty categories, got {primary_raw or secondary_raw!r}"
        )
    return primary, secondary


def validate_rows(rows: Iterable[RawRow], label: str) -> ParsedItems:
    """Check every row; return the items frame and the problems (capped at MAX_REPORTED)."""
    errors: list[str] = []
    records: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for row in rows:
        where = f"{label}:{row.line}"
        if "__bad__" in row.fields:
            errors.append(f"{where}: {row.fields['__bad__']}")
            continue
        typed = _type_problems(row.fields)
        if typed:
            errors.extend(f"{where}: {p}" for p in typed)
            continue
        f = _normalise_fields(row.fields)
        problems: list[str] = []
        item_id = f.get("id", "")
        if not item_id:
            problems.append("missing id")
        elif item_id in seen:
            problems.append(f"duplicate id {item_id!r} (first on line {seen[item_id]})")
        else:
            seen[item_id] = row.line
        question = f.get("question", "")
        if not question:
            problems.append("empty question")
        label_value = f.get("error", "").lower()
        if label_value not in ERROR_VALUES:
            problems.append(f"error must be 'error' or 'no_error', got {f.get('error', '')!r}")
        is_error = ERROR_VALUES.get(label_value)
        primary, secondary = _categories(f, is_error, problems)
        if problems:
            errors.extend(f"{where}: {p}" for p in problems)
            continue
        records.append(
            {
                "item_id": item_id,
                "benchmark": BENCHMARK,
                "split": f.get("split") or None,
                "is_error": bool(is_error),
                "primary_category": primary,
                "secondary_category": secondary,
                "prompt": question,
                "explanation": f.get("explanation") or None,
                "gold": f.get("gold_answer") or None,
                "payload": json.dumps(
                    {str(k): v for k, v in row.fields.items()}
                    | ({"group": f.get("group") or None} if "group" in f else {}),
                    ensure_ascii=False,
                    default=str,
                ),
            }
        )
    frame = pd.DataFrame.from_records(records, columns=list(ITEM_COLUMNS))
    if not records and not errors:
        errors.append(f"{label}: no items in the file")
    return ParsedItems(frame, errors[:MAX_REPORTED], len(errors))


def parse_bytes(data: bytes, filename: str, label: str | None = None) -> ParsedItems:
    """Read and validate without writing (the Import page's preview)."""
    label = label or filename
    try:
        rows = read_rows(data, filename, label)
    except ItemImportError as exc:
        return ParsedItems(pd.DataFrame(), exc.errors, exc.total)
    return validate_rows(rows, label)


# -- writing ----------------------------------------------------------------------------------


def write_item_set(store: Store, items: pd.DataFrame, name: str, origin: str) -> int:
    """Replace item set `name` with `items` in one transaction."""
    frame = items.copy()
    frame.insert(0, "item_set", name)
    n_error = int(frame["is_error"].sum()) if len(frame) else 0
    info = {
        "n_error": n_error,
        "n_control": int(len(frame) - n_error),
        "secondary_counts": {
            str(k): int(v)
            for k, v in frame.loc[frame["is_error"], "secondary_category"].value_counts().items()
        },
    }

    def write(con: duckdb.DuckDBPyConnection) -> int:
        try:
            replace_item_set(con, name, BENCHMARK, frame, origin=origin, info=info)
        except ItemSetConflict as exc:
            raise ItemImportError([str(exc)]) from exc  # `init` looks for ItemSetInUse
        return len(frame)

    return store.transaction(write)


def import_bytes(
    store: Store, data: bytes, filename: str, name: str, origin: str | None = None
) -> int:
    """Validate an uploaded file and write it as item set `name`; raises ItemImportError."""
    parsed = parse_bytes(data, filename)
    if not parsed.ok:
        raise ItemImportError(parsed.errors, parsed.total_errors)
    return write_item_set(store, parsed.items, name, origin or filename)


def import_file(store: Store, path: str | Path, name: str | None = None) -> int:
    path = Path(path)
    try:
        data = read_bytes(path)
    except InputFileError as exc:
        raise ItemImportError([str(exc)]) from None
    parsed = parse_bytes(data, path.name, str(path))
    if not parsed.ok:
        raise ItemImportError(parsed.errors, parsed.total_errors)
    return write_item_set(store, parsed.items, name or path.stem, str(path))


def import_builtin(store: Store, path: str | Path, name: str) -> int:
    """`init` hook: (re)load the shipped sample under its fixed name."""
    path = Path(path)
    parsed = parse_bytes(path.read_bytes(), path.name, str(path))
    if not parsed.ok:
        raise ItemImportError(parsed.errors, parsed.total_errors)
    return write_item_set(store, parsed.items, name, "builtin")


def default_set_name(path: str | Path) -> str:
    return Path(path).stem


# -- queries used by pages and runs -----------------------------------------------------------


def load_items(store: Store, item_set: str) -> pd.DataFrame:
    return store.df("SELECT * FROM items WHERE item_set = ? ORDER BY item_id", [item_set])


def export_items_csv(store: Store, item_set: str) -> bytes:
    """A Mis-prompt item set in the import format (round-trips through `import misprompt`)."""
    frame = load_items(store, item_set)
    out = (
        pd.DataFrame(
            {
                "id": frame["item_id"],
                "split": frame["split"],
                "question": frame["prompt"],
                "error": frame["is_error"].map({True: "error", False: "no_error"}),
                "primary_category": frame["primary_category"],
                "secondary_category": frame["secondary_category"],
                "explanation": frame["explanation"],
                "gold_answer": frame["gold"],
            }
        )
        if len(frame)
        else pd.DataFrame(columns=COLUMNS)
    )
    return out.to_csv(index=False).encode()


FORMAT_HELP: str = (
    'CSV (header row), JSON (a list, or `{"data": [...]}`) or JSONL with the released '
    "export's fields: `" + "`, `".join(COLUMNS) + "`.\n\n"
    "- `error` is `error` or `no_error` (control questions; the original `correct` is "
    "accepted).\n- Categories follow the paper's taxonomy; the tables' short names such "
    "as `TextContSubjSpec` and the long names are both accepted. The primary category "
    "may be left empty; if given it must be the secondary's.\n- Erroneous items need a "
    "`gold_answer` (the judge compares against it); controls must have no category."
)


def preview_upload(data: bytes, filename: str) -> UploadPreview:
    """The Import page's preview: problems, or counts and the first items per category."""
    from core.benchmarks.misprompt.taxonomy import display_name
    from core.registry import UploadPreview

    parsed = parse_bytes(data, filename)
    if not parsed.ok:
        return UploadPreview(False, parsed.errors, parsed.total_errors)
    items = parsed.items
    n_err = int(items["is_error"].sum())
    counts = (
        items[items["is_error"]]
        .groupby(["primary_category", "secondary_category"])
        .size()
        .rename("items")
        .reset_index()
    )
    counts["secondary_category"] = counts["secondary_category"].map(display_name)
    preview = items[
        ["item_id", "split", "is_error", "primary_category", "secondary_category", "prompt", "gold"]
    ].head(50)
    return UploadPreview(
        True,
        summary=f"{len(items)} items read from {filename}: {n_err} "
        f"erroneous, {len(items) - n_err} controls.",
        frames=[("Preview", preview), ("Erroneous items per category", counts)],
    )
