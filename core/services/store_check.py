"""`python -m core store check [--repair]`: what is wrong in a store (a file or a lake), and what
can be fixed without losing anything.

Why: a DuckLake has no PRIMARY KEY, so a key held twice (a store written before the lake's write
guard, core/store/lake.py, or by another program) only shows when a copy into a file refuses it
with a constraint error; rows can outlive what they belong to (a result without its response, a
label of a response that is gone); and a lake's catalog can name a Parquet file its bucket lost.
The check finds all three; `--repair` fixes what is safe and says what it left:

- duplicate keys whose rows are identical (but for `created_at`): one row is kept;
- duplicate `call_cache` keys: the first cached answer is kept (any answer of one request is a
  valid answer, and readers took any one of them). Two runs' flushes on a lake commit side by
  side and may both cache one new request: readers take any row of a key, `store copy` keeps
  the first itself, so these never block a copy;
- `call_cache` rows with no key or no answer (nothing can ever read them): dropped.

Everything else (duplicates that differ, orphan rows, missing files) is reported with examples,
never changed: which row is right is a person's call. Keys are the file's PRIMARY KEYs, read from
the migrations (one definition for both backends).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any

import duckdb

from core.store import DatabaseError, Store, error_line
from core.store.lake import LAKE_ONLY_TABLES

EXAMPLES = 5


@dataclass(frozen=True)
class Orphan:
    """Rows of `table` whose `what` is missing: `where` is the SQL condition on alias `x`."""

    table: str
    what: str
    where: str


ORPHANS = (
    Orphan("responses", "run", "NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = x.run_id)"),
    Orphan(
        "results",
        "response",
        "NOT EXISTS (SELECT 1 FROM responses r WHERE r.run_id = x.run_id AND "
        "r.item_id = x.item_id AND r.variant = x.variant AND r.epoch = x.epoch)",
    ),
    Orphan("calls", "run", "NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = x.run_id)"),
    Orphan("judgings", "run", "NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = x.run_id)"),
    Orphan(
        "human_labels",
        "response",
        "NOT EXISTS (SELECT 1 FROM responses r WHERE r.run_id = x.run_id AND "
        "r.item_id = x.item_id AND r.variant = x.variant)",
    ),
    Orphan(
        "audit_samples",
        "response",
        "NOT EXISTS (SELECT 1 FROM responses r WHERE r.run_id = x.run_id AND "
        "r.item_id = x.item_id AND r.variant = x.variant)",
    ),
    Orphan("items", "item set", "NOT EXISTS (SELECT 1 FROM item_sets s WHERE s.name = x.item_set)"),
    Orphan(
        "runs",
        "item set",
        "x.kind = 'eval' AND x.item_set IS NOT NULL AND "
        "NOT EXISTS (SELECT 1 FROM item_sets s WHERE s.name = x.item_set)",
    ),
)
# rows nothing can read: safe to drop
UNREADABLE_CACHE = "key IS NULL OR response IS NULL"
# duplicates of these tables are collapsed even when their rows differ (any row is valid)
ANY_ROW_WILL_DO = ("call_cache",)


@dataclass
class Finding:
    """One kind of problem in one table: `n` rows (or files), a few examples, and whether
    --repair fixed it (`repaired`) or it is left for a person."""

    kind: str  # duplicate-identical | duplicate-differing | orphan | unreadable | missing-file
    table: str
    n: int
    detail: str
    examples: list[str] = field(default_factory=list)
    repairable: bool = False
    repaired: bool = False

    def line(self) -> str:
        state = "repaired" if self.repaired else ("repairable" if self.repairable else "left")
        more = f" e.g. {'; '.join(self.examples)}" if self.examples else ""
        return f"{self.table}: {self.n:,} {self.detail} [{state}]{more}"


_KEYS: dict[str, tuple[str, ...]] | None = None


def table_keys() -> dict[str, tuple[str, ...]]:
    """Every table's key: the PRIMARY KEYs the migrations give a file (a lake has none)."""
    global _KEYS
    if _KEYS is None:
        from core.store import migrate
        from core.store.shards import ensure_shard_table

        con = duckdb.connect()
        try:
            migrate(con)
            ensure_shard_table(con)
            rows = con.execute(
                "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
                "WHERE constraint_type = 'PRIMARY KEY' ORDER BY table_name"
            ).fetchall()
        finally:
            con.close()
        _KEYS = {str(t): tuple(str(c) for c in cols) for t, cols in rows}
    return _KEYS


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    rows = con.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_catalog = "
        "current_database() AND table_schema = current_schema() AND table_name IN (SELECT "
        "table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND "
        "table_catalog = current_database() AND table_schema = current_schema()) "
        "ORDER BY table_name, ordinal_position"
    ).fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        if table not in LAKE_ONLY_TABLES:
            out.setdefault(str(table), []).append(str(column))
    return out


def _key_text(values: tuple[Any, ...]) -> str:
    return "/".join("NULL" if v is None else str(v) for v in values)


def _duplicates(
    con: duckdb.DuckDBPyConnection, table: str, keys: tuple[str, ...], columns: list[str]
) -> list[Finding]:
    body = ", ".join(c for c in columns if c != "created_at")
    k = ", ".join(keys)
    rows = con.execute(
        f"SELECT {k}, count(*) AS n, count(DISTINCT to_json(struct_pack({body}))) AS kinds "
        f"FROM {table} GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL"
    ).fetchall()
    if not rows:
        return []
    width = len(keys)
    same = [r for r in rows if r[width + 1] == 1]
    differ = [r for r in rows if r[width + 1] > 1]
    out = []
    if same:
        out.append(
            Finding(
                "duplicate-identical",
                table,
                sum(int(r[width]) - 1 for r in same),
                f"extra row(s) of {len(same):,} key(s) ({k}) held more than once, identical",
                [_key_text(r[:width]) for r in same[:EXAMPLES]],
                repairable=True,
            )
        )
    if differ:
        out.append(
            Finding(
                "duplicate-differing",
                table,
                sum(int(r[width]) - 1 for r in differ),
                f"extra row(s) of {len(differ):,} key(s) ({k}) held more than once, "
                + (
                    "differing (the first cached is kept)"
                    if table in ANY_ROW_WILL_DO
                    else "differing (which one is right is your call)"
                ),
                [_key_text(r[:width]) for r in differ[:EXAMPLES]],
                repairable=table in ANY_ROW_WILL_DO,
            )
        )
    return out


def _orphans(con: duckdb.DuckDBPyConnection, have: dict[str, list[str]]) -> list[Finding]:
    out = []
    for orphan in ORPHANS:
        if orphan.table not in have:
            continue
        keys = table_keys().get(orphan.table) or ("run_id", "item_id")
        n = con.execute(f"SELECT count(*) FROM {orphan.table} x WHERE {orphan.where}").fetchall()
        if n[0][0]:
            shown = ", ".join(k for k in keys if k in have[orphan.table]) or "*"
            examples = con.execute(
                f"SELECT DISTINCT {shown} FROM {orphan.table} x WHERE {orphan.where} "
                f"ORDER BY ALL LIMIT {EXAMPLES}"
            ).fetchall()
            out.append(
                Finding(
                    "orphan",
                    orphan.table,
                    int(n[0][0]),
                    f"row(s) without their {orphan.what}",
                    [_key_text(tuple(e)) for e in examples],
                )
            )
    if "call_cache" in have:
        n = con.execute(f"SELECT count(*) FROM call_cache WHERE {UNREADABLE_CACHE}").fetchall()
        if n[0][0]:
            out.append(
                Finding(
                    "unreadable",
                    "call_cache",
                    int(n[0][0]),
                    "row(s) with no key or no answer (nothing reads them)",
                    repairable=True,
                )
            )
    return out


def _missing_files(store: Store, con: duckdb.DuckDBPyConnection) -> list[Finding]:
    """Data and delete files the lake's current snapshot names that its storage lacks."""
    if not store.is_lake:
        return []
    alias = con.execute("SELECT current_database()").fetchall()[0][0]
    named: dict[str, str] = {}
    for (table,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main'"
    ).fetchall():
        for data_file, delete_file in con.execute(
            f"SELECT data_file, delete_file FROM ducklake_list_files('{alias}', '{table}')"
        ).fetchall():
            for path in (data_file, delete_file):
                if path:
                    named[str(path)] = str(table)
    if not named:
        return []
    root = con.execute(
        f"SELECT value FROM __ducklake_metadata_{alias}.ducklake_metadata WHERE key = 'data_path'"
    ).fetchall()
    prefix = str(root[0][0]) if root else ""
    present: set[str] = set()
    if prefix:
        pattern = prefix.rstrip("/") + "/**"
        present = {str(r[0]) for r in con.execute("SELECT file FROM glob(?)", [pattern]).fetchall()}
    missing = sorted(p for p in named if p not in present)
    if not missing:
        return []
    tables = sorted({named[p] for p in missing})
    return [
        Finding(
            "missing-file",
            ", ".join(tables),
            len(missing),
            "file(s) the catalog names that the storage lacks (restore them from a backup of "
            "the bucket; their rows cannot be read)",
            missing[:EXAMPLES],
        )
    ]


def check_store(store: Store, *, repair: bool = False) -> list[Finding]:
    """Every finding (see the module docstring); with `repair`, the safe ones fixed in one
    transaction, marked `repaired`."""
    with store.connect() as con:
        have = _tables(con)
        found: list[Finding] = []
        for table, columns in have.items():
            keys = table_keys().get(table)
            if keys and all(k in columns for k in keys):
                found += _duplicates(con, table, keys, columns)
        found += _orphans(con, have)
        found += _missing_files(store, con)
    if repair and any(f.repairable for f in found):
        fixable = [f for f in found if f.repairable]
        store.transaction(lambda con: _repair(con, fixable, have))
        for f in fixable:
            f.repaired = True
    return found


def _repair(
    con: duckdb.DuckDBPyConnection, findings: list[Finding], have: dict[str, list[str]]
) -> None:
    """Collapse duplicates (one row per key: the earliest) and drop unreadable cache rows; what
    is repaired is decided again inside the transaction, on what the store holds now."""
    for f in findings:
        if f.kind == "unreadable":
            con.execute(f"DELETE FROM call_cache WHERE {UNREADABLE_CACHE}")
            continue
        keys = table_keys()[f.table]
        columns = have[f.table]
        body = ", ".join(c for c in columns if c != "created_at")
        k = ", ".join(keys)
        having = "count(*) > 1"
        if f.kind == "duplicate-identical":
            having += f" AND count(DISTINCT to_json(struct_pack({body}))) = 1"
        dup = f"SELECT ({k}) FROM {f.table} GROUP BY {k} HAVING {having}"
        order = "created_at" if "created_at" in columns else k
        keep = con.execute(
            f"SELECT DISTINCT ON ({k}) * FROM {f.table} WHERE ({k}) IN ({dup}) "
            f"ORDER BY {k}, {order}"
        ).to_arrow_table()
        if keep.num_rows == 0:
            continue
        con.register("_keep", keep)
        try:
            con.execute(f"DELETE FROM {f.table} WHERE ({k}) IN (SELECT ({k}) FROM _keep)")
            cols = ", ".join(keep.column_names)
            con.execute(f"INSERT INTO {f.table} ({cols}) SELECT {cols} FROM _keep")
        finally:
            con.unregister("_keep")


def blocking(findings: list[Finding]) -> list[Finding]:
    """What would stop a copy: keys held twice (a file's key refuses them; not the cache's,
    which a copy collapses itself) and missing files (their rows cannot be read). Orphans copy
    as they are."""
    return [
        f
        for f in findings
        if (f.kind.startswith("duplicate") and f.table not in ANY_ROW_WILL_DO)
        or f.kind == "missing-file"
    ]


def report(findings: list[Finding]) -> str:
    if not findings:
        return "no problems found"
    return "\n".join(f.line() for f in findings)


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    parser.add_argument(
        "--repair",
        action="store_true",
        help="fix what is safe (identical duplicate rows, duplicate or unreadable cache rows); "
        "report the rest",
    )


def main(args: argparse.Namespace) -> int:
    try:
        store = Store.open(args.db, create=False)
        findings = check_store(store, repair=args.repair)
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except duckdb.Error as exc:
        print(f"error: the check failed ({error_line(exc)})", file=sys.stderr)
        return 1
    print(f"store {store.display}:")
    print(report(findings))
    left = [f for f in findings if not f.repaired]
    if findings and not left:
        print("every problem found was repaired")
    elif left and not args.repair and any(f.repairable for f in left):
        print("run again with --repair to fix what is marked repairable")
    return 1 if left else 0
