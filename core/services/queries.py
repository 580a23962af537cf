"""Query shapes every benchmark's data access repeats, written once: a benchmark's item sets,
rows in natural item-id order, a stored JSON value read back, and the check that a metrics
source is one of its runs (with the judging asked for). Benchmark-neutral: a package passes its
own name, wording and error class."""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd

from core.store import Store, runs_without_judging


def natural_key(item_id: object) -> tuple:
    """A sort key comparing the numbers in an id as numbers (`x-2` before `x-10`, `f:2` before
    `f:10`)."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(item_id)))


def natural_order(frame: pd.DataFrame, column: str = "item_id") -> pd.DataFrame:
    """The rows sorted by `column` in natural order (see natural_key), reindexed."""
    order = sorted(range(len(frame)), key=lambda k: natural_key(frame[column].iloc[k]))
    return frame.iloc[order].reset_index(drop=True)


def json_value(value: Any) -> Any:
    """A stored JSON column's value as Python: text is parsed, None and parsed values pass."""
    return json.loads(value) if isinstance(value, str) else value


def benchmark_item_sets(store: Store, benchmark: str) -> pd.DataFrame:
    """A benchmark's item sets by name: name, origin, n_items, info, created_at."""
    return store.df(
        "SELECT name, origin, n_items, info, created_at FROM item_sets "
        "WHERE benchmark = ? ORDER BY name",
        [benchmark],
    )


def check_run_source(
    store: Store,
    source: str,
    known: list[str],
    judging: str | None,
    *,
    known_as: str = "known sources",
    none_yet: str = "",
    error: type[Exception] = ValueError,
) -> None:
    """Raise `error` unless `source` is one of the `known` runs and, when `judging` is named,
    has that judging: `unknown source 'x'; <known_as>: a, b` (`none_yet` when there is none),
    or `run 'x' has no judging 'j' (see `rescore`)`."""
    if source not in known:
        listing = ", ".join(known) or none_yet
        raise error(f"unknown source {source!r}; {known_as}: {listing}")
    if judging is not None and runs_without_judging(store, [source], judging):
        raise error(f"run {source!r} has no judging {judging!r} (see `rescore`)")


def item_with_payload(
    store: Store, item_set: str, item_id: str, columns: str
) -> tuple[dict[str, Any], tuple[Any, ...]] | None:
    """An item's payload (a dict, {} when empty) and its `columns` (an SQL list written in
    code, e.g. "prompt, split"): what a drill-down starts from; None when the set has no such
    item."""
    rows = store.rows(
        f"SELECT payload, {columns} FROM items WHERE item_set = ? AND item_id = ?",
        [item_set, item_id],
    )
    if not rows:
        return None
    payload, *values = rows[0]
    return json_value(payload) or {}, tuple(values)
