"""Item sets of every benchmark: the list with counts, and a set as CSV (the Import page).

A benchmark whose registry entry names an `item_exporter` downloads in its own import format
(so the file round-trips through its `import` command); others as the items table's columns.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from core.registry import BENCHMARKS
from core.store import ITEM_COLUMNS, Store


def item_sets(store: Store) -> pd.DataFrame:
    """Every item set with counts (all benchmarks)."""
    return store.df(
        """
        SELECT s.name, s.benchmark, s.origin, count(i.item_id) AS items,
               count(*) FILTER (WHERE i.is_error) AS erroneous,
               count(*) FILTER (WHERE i.is_error = false) AS controls,
               s.created_at
        FROM item_sets s LEFT JOIN items i ON i.item_set = s.name
        GROUP BY ALL ORDER BY s.benchmark, s.name
        """
    )


def item_row(store: Store, item_set: str, item_id: str, columns: str) -> tuple[Any, ...] | None:
    """One item's `columns` (an SQL list written in code, e.g. "prompt, payload"), or None when
    the set has no such item (a drill-down's first read)."""
    rows = store.rows(
        f"SELECT {columns} FROM items WHERE item_set = ? AND item_id = ?", [item_set, item_id]
    )
    return tuple(rows[0]) if rows else None


def export_items_csv(store: Store, item_set: str) -> bytes:
    """One item set as CSV bytes, in its benchmark's import format where it has one."""
    benchmark = store.scalar("SELECT benchmark FROM item_sets WHERE name = ?", [item_set])
    bench = BENCHMARKS.get(str(benchmark))
    if bench is not None and bench.imports.item_exporter:
        return bench.imports.item_exporter()(store, item_set)
    cols = ", ".join(c for c in ITEM_COLUMNS if c != "payload")
    frame = store.df(f"SELECT {cols} FROM items WHERE item_set = ? ORDER BY item_id", [item_set])
    return frame.to_csv(index=False).encode()
