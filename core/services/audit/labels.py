"""People's labels of an audit's items: saved in one transaction with optimistic concurrency,
read back per audit, item and annotator, and an annotator's progress through the queue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import duckdb
import pandas as pd

from core.services.audit.labelsets import (
    AuditError,
    _judged,
    _label,
    _names_of_audit,
    _now,
    _one,
    label_set_of_run,
)
from core.store import HUMAN_LABEL_COLUMNS, HUMAN_LABEL_KEYS, Store, upsert_rows

# ---------------------------------------------------------------------------------------------
# Human labels
# ---------------------------------------------------------------------------------------------


class LabelConflict(AuditError):
    """The annotator's saved labels for this item changed since the page read them.

    `theirs` is what is saved now, `mine` what this save would write (both {label: value,
    '_note': note}); nothing was written. The page asks: overwrite, or keep theirs.
    """

    def __init__(self, theirs: dict[str, Any], mine: dict[str, Any]) -> None:
        labels = [k for k in dict.fromkeys([*mine, *theirs]) if k != "_note"]
        changed = [l for l in (*labels, "_note") if theirs.get(l) != mine.get(l)]
        super().__init__(
            "these labels were changed elsewhere (another tab or session of the same "
            "annotator) since this item was shown: " + ", ".join(changed or ["—"])
        )
        self.theirs, self.mine = theirs, mine


def _snapshot(rows: Iterable[Sequence[Any]]) -> dict[str, Any]:
    """(label, value, note) rows → {label: value, '_note': note} (the comparable saved state)."""
    rows = list(rows)
    out: dict[str, Any] = {label: bool(value) for label, value, _ in rows}
    notes = [n for _, _, n in rows if n]
    out["_note"] = notes[0] if notes else ""
    return out


_ITEM_LABELS_SQL = (
    "SELECT label, value, note FROM human_labels WHERE run_id = ? AND item_id = ? "
    "AND variant = ? AND annotator = ?"
)


def same_labels(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Equal saved states: every label of either (absent = unset) and the note."""
    a, b = a or {}, b or {}
    labels = {*a, *b} - {"_note"}
    return all(a.get(k) == b.get(k) for k in labels) and (a.get("_note") or "") == (
        b.get("_note") or ""
    )


def save_labels(
    store: Store,
    run_id: str,
    item_id: str,
    variant: str,
    annotator: str,
    labels: Mapping[str, bool],
    note: str | None = None,
    judge_values: Mapping[str, bool | None] | None = None,
    at: datetime | None = None,
    expected: Mapping[str, Any] | None = None,
) -> int:
    """One annotator's labels for one response, in one transaction.

    Without `expected` the last write wins per label (imports, scripts). With `expected` — the
    `item_labels` state the page read when it showed the item — the save compares it with what
    is saved now inside the write transaction and raises LabelConflict (writing nothing) if they
    differ: another tab of the same annotator saved in between. `judge_values={}` stores no
    judge value (a response nobody judged, e.g. a playground exchange judged by a person).
    """
    annotator = (annotator or "").strip()
    if not annotator:
        raise AuditError("an annotator name is required to save labels")
    names = label_set_of_run(store, run_id).names
    unknown = [k for k in labels if k not in names]
    if unknown:
        raise AuditError(f"unknown label(s) {unknown}; expected some of {list(names)}")
    if not labels:
        return 0
    stamp = at or _now()
    note = (note or "").strip() or None

    def write(con: duckdb.DuckDBPyConnection) -> int:
        if expected is not None:
            theirs = _snapshot(
                con.execute(_ITEM_LABELS_SQL, [run_id, item_id, variant, annotator]).fetchall()
            )
            if not same_labels(theirs, expected):
                mine = {**{k: bool(v) for k, v in labels.items()}, "_note": note or ""}
                raise LabelConflict(theirs, mine)
        current = judge_values
        if current is None:
            row = _one(
                con,
                f"SELECT {', '.join(_label(n) for n in names)} FROM {_judged(names)} "
                "WHERE run_id = ? AND item_id = ? AND variant = ?",
                [run_id, item_id, variant],
            )
            if row is None:
                raise AuditError(f"no verdict for run {run_id}, item {item_id}, variant {variant}")
            current = dict(zip(names, row))
        rows: list[list[Any]] = []
        for label, value in labels.items():
            judged = current.get(label)
            rows.append(
                [
                    run_id,
                    item_id,
                    variant,
                    annotator,
                    label,
                    bool(value),
                    None if judged is None else bool(judged),
                    note,
                    stamp,
                ]
            )
        upsert_rows(con, "human_labels", HUMAN_LABEL_COLUMNS, HUMAN_LABEL_KEYS, rows)
        return len(labels)

    return store.transaction(write)


def annotators(store: Store, audit: str | None = None) -> list[str]:
    """Everyone who saved labels (on an audit's items, given `audit`)."""
    if audit is None:
        frame = store.df("SELECT DISTINCT annotator FROM human_labels ORDER BY 1")
    else:
        frame = store.df(
            """
            SELECT DISTINCT h.annotator FROM human_labels h JOIN audit_samples a
              ON a.run_id = h.run_id AND a.item_id = h.item_id AND a.variant = h.variant
            WHERE a.audit = ? ORDER BY 1""",
            [audit],
        )
    return list(frame["annotator"])


def audit_labels(store: Store, audit: str) -> pd.DataFrame:
    """Human labels on an audit's items, with the judge's current value for the same label."""
    names = _names_of_audit(store, audit)
    judge = (
        "CASE h.label " + " ".join(f"WHEN '{l}' THEN {_label(l)}" for l in names) + " END"
        if names
        else "NULL"
    )
    return store.df(
        f"""
        SELECT a.position, h.run_id, h.item_id, h.variant, h.annotator, h.label, h.value,
               h.judge_value AS judge_value_shown, h.note, h.created_at,
               coalesce(r.model, r.endpoint) AS model, {judge} AS judge_value
        FROM human_labels h
        JOIN audit_samples a ON a.run_id = h.run_id AND a.item_id = h.item_id
             AND a.variant = h.variant AND a.audit = ?
        JOIN runs r ON r.run_id = h.run_id
        LEFT JOIN {_judged(names)} ON v.run_id = h.run_id AND v.item_id = h.item_id
             AND v.variant = h.variant
        ORDER BY a.position, h.annotator, h.label
    """,
        [audit],
    )


def item_labels(
    store: Store, run_id: str, item_id: str, variant: str, annotator: str
) -> dict[str, Any]:
    """This annotator's saved labels for one response: {label: value, '_note': note}."""
    return _snapshot(store.rows(_ITEM_LABELS_SQL, [run_id, item_id, variant, annotator]))


def queue_progress(store: Store, audit: str, annotator: str, n_labels: int) -> dict[str, Any]:
    """`progress` and `next_position` in one query, for the label view that shows both after
    every save: {"total", "done", "next"} (next None = all done). `n_labels`: the audit's label
    count, which the caller holds (its LabelSet), so the audit's benchmark is not looked up
    again. One read instead of five, each of which attached the file in a fragment's rerun
    (issue 31, point 9)."""
    total, done, nxt = store.rows(
        """
        WITH h AS (SELECT run_id, item_id, variant, count(DISTINCT label) AS n FROM human_labels
                   WHERE annotator = ? GROUP BY ALL)
        SELECT count(*), count(*) FILTER (WHERE coalesce(h.n, 0) >= ?),
               min(a.position) FILTER (WHERE coalesce(h.n, 0) < ?)
        FROM audit_samples a LEFT JOIN h
          ON a.run_id = h.run_id AND a.item_id = h.item_id AND a.variant = h.variant
        WHERE a.audit = ?
    """,
        [annotator, n_labels, n_labels, audit],
    )[0]
    return {"total": int(total), "done": int(done), "next": None if nxt is None else int(nxt)}


def progress(store: Store, audit: str, annotator: str) -> dict[str, int]:
    """How many sampled items this annotator has fully labelled (all the benchmark's labels)."""
    q = queue_progress(store, audit, annotator, len(_names_of_audit(store, audit)))
    return {"total": q["total"], "done": q["done"]}


def next_position(store: Store, audit: str, annotator: str) -> int | None:
    """Queue resume: the first sampled item this annotator has not fully labelled (None = done)."""
    q = queue_progress(store, audit, annotator, len(_names_of_audit(store, audit)))
    return q["next"]
