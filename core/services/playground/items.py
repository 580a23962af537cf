"""The item of an exchange: typed by a person, or taken from a benchmark's stored items."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import pandas as pd

from core.services.playground.roles import playground_benchmark
from core.store import Store

# ---------------------------------------------------------------------------------------------
# Items
# ---------------------------------------------------------------------------------------------


def custom_item(
    prompt: str,
    gold: str | None = None,
    is_error: bool = True,
    primary_category: str | None = None,
    secondary_category: str | None = None,
    explanation: str | None = None,
) -> dict[str, Any]:
    """An item typed by the user; its id is derived from the text (same text, same id)."""
    prompt = (prompt or "").strip()
    if not prompt:
        raise ValueError("type a prompt first")
    digest = hashlib.sha1(prompt.encode("utf-8")).hexdigest()[:10]
    return {
        "item_set": None,
        "item_id": f"custom-{digest}",
        "prompt": prompt,
        "is_error": bool(is_error),
        "primary_category": primary_category or None,
        "secondary_category": secondary_category or None,
        "explanation": (explanation or "").strip() or None,
        "gold": (gold or "").strip() or None,
    }


def example_items(
    store: Store, benchmark: str | None = None, item_set: str | None = None
) -> pd.DataFrame:
    """Loaded items of the playground's benchmark to browse (all sets, or one), erroneous
    first."""
    name = playground_benchmark(benchmark).name
    where, params = ("AND i.item_set = ?", [name, item_set]) if item_set else ("", [name])
    return store.df(
        f"""
        SELECT i.item_set, i.item_id, i.is_error,
               coalesce(i.primary_category, '(control)') AS primary_category,
               coalesce(i.secondary_category, '(control)') AS secondary_category,
               i.prompt, i.explanation, i.gold
        FROM items i WHERE i.benchmark = ? {where}
        ORDER BY i.is_error DESC, i.primary_category, i.secondary_category, i.item_set, i.item_id
    """,
        params,
    )


def item_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """An item of `example_items` as the exchange keeps it (no NaN, controls uncategorised)."""
    keys = (
        "item_set",
        "item_id",
        "prompt",
        "is_error",
        "primary_category",
        "secondary_category",
        "explanation",
        "gold",
    )
    item = {
        k: (None if pd.isna(row.get(k)) else row.get(k))
        if not isinstance(row.get(k), str)
        else row.get(k)
        for k in keys
    }
    for k in ("primary_category", "secondary_category"):
        if item.get(k) == "(control)":
            item[k] = None
    item["is_error"] = bool(item.get("is_error", True))
    return item
