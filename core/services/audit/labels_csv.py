"""Human labels as CSV: export, and an import validated row by row and written all or nothing."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb
import pandas as pd

from core.services.audit.labelsets import AuditError, _now, _one, auditable_benchmarks, label_set
from core.store import HUMAN_LABEL_COLUMNS, HUMAN_LABEL_KEYS, Store, upsert_rows

LABEL_CSV_COLUMNS = (
    "run_id",
    "item_id",
    "variant",
    "annotator",
    "label",
    "value",
    "judge_value",
    "note",
    "created_at",
)


# ---------------------------------------------------------------------------------------------
# CSV export / import
# ---------------------------------------------------------------------------------------------


def export_labels_csv(store: Store, audit: str | None = None) -> str:
    """All human labels (or an audit's) as CSV text, one row per (response, annotator, label)."""
    if audit is None:
        frame = store.df(
            f"SELECT {', '.join(LABEL_CSV_COLUMNS)} FROM human_labels "
            "ORDER BY run_id, item_id, variant, annotator, label"
        )
    else:
        frame = store.df(
            f"""
            SELECT {", ".join("h." + c for c in LABEL_CSV_COLUMNS)} FROM human_labels h
            JOIN audit_samples a ON a.run_id = h.run_id AND a.item_id = h.item_id
                 AND a.variant = h.variant AND a.audit = ?
            ORDER BY a.position, h.annotator, h.label""",
            [audit],
        )
    if "created_at" in frame:
        frame["created_at"] = pd.to_datetime(frame["created_at"]).dt.strftime(
            "%Y-%m-%dT%H:%M:%S.%f"
        )
    for col in ("value", "judge_value"):
        frame[col] = frame[col].map(lambda v: "" if pd.isna(v) else ("true" if v else "false"))
    return frame.to_csv(index=False)


_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


def _parse_bool(text: str) -> bool | None:
    t = (text or "").strip().lower()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise ValueError(f"'{text}' is not a boolean (use true/false)")


@dataclass
class ImportResult:
    written: int
    skipped_older: int
    rows: int


def _parse_time(raw: str) -> datetime | None:
    """An ISO 8601 date-time as naive UTC (None when empty); ValueError names the text."""
    if not raw:
        return None
    try:
        stamp = pd.Timestamp(raw)
        if stamp.tzinfo is not None:
            stamp = stamp.tz_convert("UTC").tz_localize(None)
        return stamp.to_pydatetime()
    except (ValueError, TypeError):
        raise ValueError(f"created_at '{raw}' is not a date-time (ISO 8601)") from None


@dataclass
class _LabelCheck:
    """What an import checks a row against: the judged responses and each run's label names
    (`any_names`, every auditable benchmark's, for a row whose response is unknown)."""

    verdict_keys: set[tuple[str, str, str]]
    names_of_run: dict[str, tuple[str, ...]]
    any_names: tuple[str, ...]


def _label_check(store: Store) -> _LabelCheck:
    keys = {
        (str(r[0]), str(r[1]), str(r[2]))
        for r in store.rows("SELECT run_id, item_id, variant FROM current_results")
    }
    auditable = {b: label_set(b).names for b in auditable_benchmarks()}
    runs = store.rows("SELECT run_id, benchmark FROM runs")
    any_names = tuple(dict.fromkeys(n for names in auditable.values() for n in names))
    return _LabelCheck(keys, {str(r): auditable.get(str(b), ()) for r, b in runs}, any_names)


def _parse_label_row(
    record: Mapping[str, str | None], check: _LabelCheck
) -> tuple[dict[str, Any], list[str]]:
    """One CSV row as a `human_labels` row, and its problems (the row is unusable if any)."""
    problems: list[str] = []
    key = (record.get("run_id") or "", record.get("item_id") or "", record.get("variant") or "")
    names = check.any_names
    if not all(key):
        problems.append("run_id, item_id and variant must be set")
    elif key not in check.verdict_keys:
        problems.append(
            f"no judged response for run '{key[0]}', item '{key[1]}', "
            f"variant '{key[2]}' in this database"
        )
    else:
        names = check.names_of_run.get(key[0], ())
    annotator = (record.get("annotator") or "").strip()
    if not annotator:
        problems.append("annotator is empty")
    label = (record.get("label") or "").strip()
    if not names:
        problems.append(f"run '{key[0]}' is of a benchmark without judge labels")
    elif label not in names:
        problems.append(f"label '{label}' is not one of {', '.join(names)}")
    row: dict[str, Any] = {"run_id": key[0], "item_id": key[1], "variant": key[2]}
    row |= {"annotator": annotator, "label": label, "value": None, "judge_value": None}
    for col in ("value", "judge_value"):
        raw = record.get(col) or ""
        if col == "value" or raw.strip():  # judge_value is optional
            try:
                row[col] = _parse_bool(raw if col == "value" else raw.strip())
            except ValueError as exc:
                problems.append(f"{col}: {exc}")
    row["note"] = (record.get("note") or "").strip() or None
    try:
        row["created_at"] = _parse_time((record.get("created_at") or "").strip())
    except ValueError as exc:
        problems.append(str(exc))
    return row, problems


def _write_imported(
    parsed: Sequence[Mapping[str, Any]], now: datetime
) -> Callable[[duckdb.DuckDBPyConnection], tuple[int, int]]:
    """The import's transaction: each row unless the saved label is newer (last write wins)."""
    columns = ("run_id", "item_id", "variant", "annotator", "label")

    def write(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
        written = skipped = 0
        for row in parsed:
            stamp = row["created_at"] or now
            existing = _one(
                con,
                "SELECT created_at FROM human_labels WHERE run_id = ? AND item_id = ? AND "
                "variant = ? AND annotator = ? AND label = ?",
                [row[c] for c in columns],
            )
            if existing is not None and existing[0] is not None and existing[0] > stamp:
                skipped += 1
                continue
            upsert_rows(
                con,
                "human_labels",
                HUMAN_LABEL_COLUMNS,
                HUMAN_LABEL_KEYS,
                [
                    [
                        *(row[c] for c in columns),
                        row["value"],
                        row["judge_value"],
                        row["note"],
                        stamp,
                    ]
                ],
            )
            written += 1
        return written, skipped

    return write


def import_labels_csv(store: Store, text: str | bytes) -> ImportResult:
    """Validate every row first (errors name the line), then write all rows in one transaction.

    A row replaces an existing label of the same (response, annotator, label) unless the
    database's copy is newer (its created_at later than the row's): last write wins.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8-sig")
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    required = ["run_id", "item_id", "variant", "annotator", "label", "value"]
    missing = [c for c in required if c not in header]
    if missing:
        raise AuditError(
            f"line 1: missing column(s) {', '.join(missing)}; expected "
            f"{', '.join(LABEL_CSV_COLUMNS)}"
        )
    check = _label_check(store)
    parsed: list[dict[str, Any]] = []
    errors: list[str] = []
    seen: dict[tuple, int] = {}
    start_line = 2
    for record in reader:
        line = start_line
        start_line = reader.line_num + 1
        row, problems = _parse_label_row(record, check)
        full_key = tuple(row[c] for c in ("run_id", "item_id", "variant", "annotator", "label"))
        if not problems and full_key in seen:
            problems.append(f"duplicate of line {seen[full_key]} (same response, annotator, label)")
        if problems:
            errors.append(f"line {line}: " + "; ".join(problems))
            continue
        seen[full_key] = line
        parsed.append(row)
    if errors:
        shown = errors[:20]
        more = f"\n… and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise AuditError("labels file not imported (nothing written):\n" + "\n".join(shown) + more)
    if not parsed:
        raise AuditError("labels file has no rows")
    written, skipped = store.transaction(_write_imported(parsed, _now()))
    return ImportResult(written=written, skipped_older=skipped, rows=len(parsed))
