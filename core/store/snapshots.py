"""A DuckLake's snapshots: the list people pin a view to (`?as_of=`, `--as-of`), and the check
that refuses a snapshot the lake does not have before anything is attached at it.

Why: DuckDB's own errors for a bad snapshot were raw ("ParserException: syntax error at or
near '-'" for -1, an INT128 cast error past 2⁶³, "No snapshot found at version 999999"), and
snapshot 0 — the empty catalog before `init` made the tables — read as "No store … Run init
first" on a lake that has one (issue 31, point 10)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from core.store.errors import DatabaseError

if TYPE_CHECKING:
    from core.store.location import Location


class _Located(Protocol):
    """What the snapshot list needs of a store: its lake URL (None for a DuckDB file). Taken as
    a protocol so that this module, which the store itself calls to check a snapshot, does not
    import the store back."""

    @property
    def url(self) -> str | None: ...


SCHEMA_TABLE = "main.meta"  # made by the store's first migration: the store exists from then on


def _rows(location: Location) -> pd.DataFrame:
    """ducklake_snapshots() of the lake at `location`, read through its latest (unpinned)
    attachment."""
    import duckdb

    from core.store.lake import lake_for

    lake = lake_for(location, None, None)
    cur = lake._con.cursor()
    try:
        rows = cur.execute(
            # the time as text: a TIMESTAMPTZ fetched into Python needs pytz (not installed)
            "SELECT snapshot_id, snapshot_time::VARCHAR, changes "
            f"FROM ducklake_snapshots('{lake.alias}') ORDER BY snapshot_id"
        ).fetchall()
        return pd.DataFrame(rows, columns=["snapshot_id", "snapshot_time", "changes"])
    except duckdb.Error as exc:
        raise DatabaseError(f"cannot list the snapshots of {location.text}: {exc}") from None
    finally:
        cur.close()


def first_usable(frame: pd.DataFrame) -> int:
    """The first snapshot at which the store's tables exist (the one that created `meta`)."""
    for snapshot, changes in zip(frame["snapshot_id"], frame["changes"]):
        if SCHEMA_TABLE in (dict(changes or {}).get("tables_created") or []):
            return int(snapshot)
    return int(frame["snapshot_id"].min()) if len(frame) else 0


def check_snapshot(location: Location, as_of: int) -> None:
    """Refuse (DatabaseError, with the valid range) a snapshot id the lake cannot be read at:
    negative, past its latest, or before `init` made its tables."""
    frame = _rows(location)
    if frame.empty:
        raise DatabaseError(f"{location.text} has no snapshots: run `python -m core init` first.")
    first, last = first_usable(frame), int(frame["snapshot_id"].max())
    if first <= as_of <= last and as_of in set(frame["snapshot_id"]):
        return
    why = (
        "is before `init` made the store's tables"
        if 0 <= as_of < first
        else "is not a snapshot of this store"
    )
    raise DatabaseError(
        f"snapshot {as_of} {why}: pick one from {first} to {last} (the latest). The Overview "
        "page lists them with their time and what changed."
    )


def describe_changes(changes: Any, names: dict[str, str] | None = None) -> str:
    """'tables created: items, runs, … · inserted into: results (2 tables)': one snapshot's
    `changes` map as a line people read (table ids named where `names` knows them)."""
    names = names or {}
    parts = []
    for kind, values in dict(changes or {}).items():
        shown = [names.get(str(v), str(v)).removeprefix("main.") for v in values or []]
        label = str(kind).replace("_", " ")
        head = ", ".join(sorted(dict.fromkeys(shown))[:6])
        more = f" (+{len(set(shown)) - 6} more)" if len(set(shown)) > 6 else ""
        parts.append(f"{label}: {head}{more}")
    return " · ".join(parts)


def snapshot_list(store: _Located, limit: int = 500) -> pd.DataFrame:
    """The lake's snapshots, newest first (at most `limit`): snapshot_id, time, changes (text),
    usable (whether a view can be pinned to it). Empty for a DuckDB file (it keeps none)."""
    if store.url is None:
        return pd.DataFrame(columns=["snapshot_id", "time", "changes", "usable"])
    from core.store.location import parse_location

    location = parse_location(store.url)
    frame = _rows(location)
    first = first_usable(frame)
    names = _table_names(location)
    frame = frame.sort_values("snapshot_id", ascending=False).head(limit)
    return pd.DataFrame(
        {
            "snapshot_id": frame["snapshot_id"].astype(int),
            "time": [re.sub(r"\.\d+", "", str(t)) for t in frame["snapshot_time"]],
            "changes": [describe_changes(c, names) for c in frame["changes"]],
            "usable": frame["snapshot_id"] >= first,
        }
    ).reset_index(drop=True)


def _table_names(location: Location) -> dict[str, str]:
    """table id -> name, for the ids `changes` lists (inserts name tables by id)."""
    import duckdb

    from core.store.lake import lake_for

    lake = lake_for(location, None, None)
    cur = lake._con.cursor()
    try:
        rows = cur.execute(
            "SELECT table_id, table_name FROM "
            f"__ducklake_metadata_{lake.alias}.ducklake_table WHERE end_snapshot IS NULL"
        ).fetchall()
    except duckdb.Error:
        return {}
    finally:
        cur.close()
    return {str(i): str(n) for i, n in rows}
