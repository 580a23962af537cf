"""Item sets in the store: the one writer of items (every importer goes through
`replace_item_set`), the immutability of sets that runs use, and small shared inserts."""

from __future__ import annotations

import json
from collections.abc import Sequence

import duckdb
import pandas as pd

from core.store.database import Store, insert_frame


class ItemSetConflict(ValueError):
    """An import that must not write: the name holds another benchmark's items, runs use the
    set (ItemSetInUse), or the import yields no items (EmptyItemSet)."""


class ItemSetInUse(ItemSetConflict):
    """Runs were scored against this set: changing its items would silently change them."""

    def __init__(self, name: str, runs: list[str], suggestion: str) -> None:
        self.name, self.runs, self.suggestion = name, runs, suggestion
        shown = ", ".join(runs[:10]) + (f" … and {len(runs) - 10} more" if len(runs) > 10 else "")
        super().__init__(
            f"item set {name!r} is used by {len(runs)} run(s) ({shown}) and cannot be changed "
            f"(their results refer to its items); nothing was written. Import under another "
            f"--name, e.g. --name {suggestion}"
        )


class EmptyItemSet(ItemSetConflict):
    """An import with zero items would empty (or create an empty) set."""


def runs_using(con: duckdb.DuckDBPyConnection, name: str) -> list[str]:
    """Run ids (any kind, any status) whose results refer to item set `name`."""
    return [
        r[0]
        for r in con.execute(
            "SELECT run_id FROM runs WHERE item_set = ? ORDER BY run_id", [name]
        ).fetchall()
    ]


def _free_name(con: duckdb.DuckDBPyConnection, name: str) -> str:
    taken = {r[0] for r in con.execute("SELECT name FROM item_sets").fetchall()}
    k = 2
    while f"{name}-{k}" in taken:
        k += 1
    return f"{name}-{k}"


# The items table's columns after item_set, in order (importers build frames with them).
ITEM_COLUMNS = (
    "item_id",
    "benchmark",
    "split",
    "is_error",
    "primary_category",
    "secondary_category",
    "prompt",
    "explanation",
    "gold",
    "payload",
)


def _same_items(con: duckdb.DuckDBPyConnection, name: str, frame: pd.DataFrame) -> bool:
    """Whether `frame` holds exactly the rows stored for `name` (every items column compared as
    text; columns the frame lacks must be NULL in the database)."""
    n_stored = con.execute("SELECT count(*) FROM items WHERE item_set = ?", [name]).fetchall()[0][0]
    if n_stored != len(frame):
        return False
    cols = [c for c in ITEM_COLUMNS]
    new = ", ".join(
        f"CAST({c} AS VARCHAR)" if c in frame.columns else "CAST(NULL AS VARCHAR)" for c in cols
    )
    old = ", ".join(f"CAST({c} AS VARCHAR)" for c in cols)
    con.register("_same_items_frame", frame)
    try:
        differ = con.execute(
            f"SELECT count(*) FROM ((SELECT {new} FROM _same_items_frame EXCEPT ALL "
            f"SELECT {old} FROM items WHERE item_set = ?) UNION ALL "
            f"(SELECT {old} FROM items WHERE item_set = ? EXCEPT ALL "
            f"SELECT {new} FROM _same_items_frame))",
            [name, name],
        ).fetchall()[0][0]
    finally:
        con.unregister("_same_items_frame")
    return differ == 0


def replace_item_set(
    con: duckdb.DuckDBPyConnection,
    name: str,
    benchmark: str,
    frame: pd.DataFrame,
    *,
    origin: str | None,
    info: dict | None = None,
) -> bool:
    """Replace item set `name` by `frame`'s rows (columns named as in `items`) inside the caller's
    transaction, so an import either lands whole or not at all. Returns whether the name existed.

    The one writer of item sets, so every importer (CLI, Import page, `init`) gets its rules:
    refuses a name owned by another benchmark (no mixed sets), an empty frame (EmptyItemSet:
    an import that yields nothing never empties a set), and a set that runs use
    (ItemSetInUse: results must keep meaning what they meant) unless the rows are identical,
    in which case nothing is written (re-running `init` is a no-op)."""

    if len(frame) == 0:
        raise EmptyItemSet(
            f"the import yields no items, so item set {name!r} was not "
            "written (an existing set keeps its items)"
        )
    found = con.execute("SELECT benchmark FROM item_sets WHERE name = ?", [name]).fetchall()
    existing = found[0] if found else None
    if existing and existing[0] != benchmark:
        raise ItemSetConflict(
            f"item set {name!r} already exists for benchmark {existing[0]!r}; choose another --name"
        )
    if existing:
        used_by = runs_using(con, name)
        if used_by:
            if _same_items(con, name, frame):
                return True
            raise ItemSetInUse(name, used_by, _free_name(con, name))
    con.execute("DELETE FROM items WHERE item_set = ?", [name])
    con.execute("DELETE FROM item_sets WHERE name = ?", [name])
    con.execute(
        "INSERT INTO item_sets (name, benchmark, origin, n_items, info) VALUES (?, ?, ?, ?, ?)",
        [name, benchmark, origin, len(frame), json.dumps(info) if info is not None else None],
    )
    insert_frame(con, "items", frame)
    return existing is not None


def runs_without_judging(store: Store, run_ids: Sequence[str], judging: str) -> list[str]:
    """The runs among `run_ids` that have no judging of that name (`--judging` checks)."""
    have = {
        r[0]
        for r in store.rows(
            "SELECT run_id FROM all_judgings WHERE judging = ? AND list_contains(?, run_id)",
            [judging, list(run_ids)],
        )
    }
    return [r for r in run_ids if r not in have]
