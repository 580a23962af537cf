"""Item sets holding the first N items of another set, for tests whose hand-computed numbers are
those items' (`--limit N` draws a stratified sample since core/engine/sampling.py, not the first N)."""

from __future__ import annotations

from core.store import Store


def first_items(store: Store, source: str, n: int, name: str | None = None) -> str:
    """Create (once) the set `name` (default '<source>-first<n>') with the first n items of
    `source` in file order, same benchmark and info; returns its name."""
    name = name or f"{source}-first{n}"
    if store.scalar("SELECT count(*) FROM item_sets WHERE name = ?", [name]):
        return name

    def copy(con) -> None:
        con.execute(
            "INSERT INTO item_sets BY NAME SELECT * REPLACE (? AS name, ? AS n_items) "
            "FROM item_sets WHERE name = ?",
            [name, n, source],
        )
        con.execute(
            "INSERT INTO items BY NAME SELECT * REPLACE (? AS item_set) FROM ("
            "SELECT * FROM items WHERE item_set = ? ORDER BY rowid LIMIT ?)",
            [name, source, n],
        )

    store.transaction(copy)
    return name
