"""`python -m core store copy --from SRC --to DST`: a whole store into an empty one.

Why: to move a laptop's file into the team's lake (or a lake back into a file) without losing
or doubling a row. Every table of the schema is copied (not `meta`: the destination's own
migration wrote its schema version; not the views: the destination's migration made them),
in one transaction on the destination, reading the source in one snapshot; each table's row
count is checked inside that transaction, so a mismatch or a failure (an interrupt, a full
disk) leaves the destination as it was. Written against the Store API and plain SQL, so both
backends run it.

The source is never written: one of an older schema version is refused (upgrade it with
`init` first), a destination holding any row is refused (nothing is ever overwritten or
merged; to add one run to a store that has data, use `export --bundle` and `import run`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from core.store import (
    SCHEMA_VERSION,
    DatabaseError,
    Store,
    error_line,
    parse_location,
    schema_version,
)
from core.store.lake import LAKE_ONLY_TABLES
from core.store.shards import SHARD_TABLE, ensure_shard_table

BATCH_ROWS = 50_000
# Not copied: the destination's migration writes its own (schema version, views digest, the
# change counter).
NOT_COPIED = ("meta", *LAKE_ONLY_TABLES)


class CopyError(ValueError):
    """A copy that must not happen, or that failed and was rolled back."""


@dataclass
class Copied:
    table: str
    rows_source: int
    rows_destination: int

    @property
    def ok(self) -> bool:
        return self.rows_source == self.rows_destination


def base_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The store's tables (not views), in name order."""
    return [
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
            "AND table_catalog = current_database() AND table_schema = current_schema() "
            "ORDER BY table_name"
        ).fetchall()
    ]


def open_source(db: str | Path) -> Store:
    """The source, opened read-only and never migrated (Store.open would upgrade an older
    writable file; a copy must not write to its source): one of another schema version is
    refused with what to do."""
    location = parse_location(str(db))
    if location.path is not None and not location.path.is_file():
        raise CopyError(f"--from {db}: no database there")
    source = Store.handle(location.text, read_only=True)
    source._migrated = False
    with source.connect() as con:
        version = schema_version(con, location.text)
    if version < SCHEMA_VERSION:
        raise CopyError(
            f"--from {db} has schema version {version}, this program writes {SCHEMA_VERSION}; "
            f"a copy never changes its source: run `python -m core init --db {db}` first to "
            "upgrade it, then copy"
        )
    if version > SCHEMA_VERSION:
        raise CopyError(
            f"--from {db} has schema version {version}, newer than this program's "
            f"{SCHEMA_VERSION}: update the program (git pull) and copy again"
        )
    source._migrated = True  # its version is this program's: nothing to do
    return source


def _same_store(src: str | Path, dst: str | Path) -> bool:
    a, b = parse_location(str(src)), parse_location(str(dst))
    if a.path is None or b.path is None:
        return a.text == b.text
    return a.path == b.path or (a.path.exists() and b.path.exists() and a.path.samefile(b.path))


def _insert_batch(con: duckdb.DuckDBPyConnection, table: str, cols: str, batch: pa.Table) -> None:
    con.register("_copy_batch", batch)
    try:
        con.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _copy_batch")
    finally:
        con.unregister("_copy_batch")


def _copy_tables(
    src: Store, tables: list[str], columns: dict[str, list[str]]
) -> Callable[[duckdb.DuckDBPyConnection], list[Copied]]:
    def copy(con: duckdb.DuckDBPyConnection) -> list[Copied]:
        out: list[Copied] = []
        with src.connect() as scon:
            scon.execute("BEGIN TRANSACTION")  # one snapshot of the source for every table
            try:
                for table in tables:
                    cols = ", ".join('"' + c.replace('"', '""') + '"' for c in columns[table])
                    source = f"SELECT {cols} FROM {table}"
                    if table == "call_cache":  # a lake may cache a request twice: keep the first
                        source = (
                            f"SELECT DISTINCT ON (key) {cols} FROM {table} ORDER BY key, created_at"
                        )
                    n_src = scon.execute(f"SELECT count(*) FROM ({source})").fetchall()[0][0]
                    reader = scon.execute(source).to_arrow_reader(BATCH_ROWS)
                    for batch in reader:
                        _insert_batch(con, table, cols, pa.Table.from_batches([batch]))
                    n_dst = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
                    out.append(Copied(table, int(n_src), int(n_dst)))
            finally:
                scon.execute("ROLLBACK")
        bad = [c for c in out if not c.ok]
        if bad:
            raise CopyError(
                "row counts differ after the copy ("
                + ", ".join(f"{c.table}: {c.rows_source} vs {c.rows_destination}" for c in bad)
                + "); nothing was written to the destination"
            )
        return out

    return copy


def copy_store(src_db: str | Path, dst_db: str | Path) -> list[Copied]:
    """Copy every table of store `src_db` into the empty store `dst_db` (created if missing),
    in one transaction; on any failure the destination is left as it was (a destination file
    this call created is removed again)."""
    if _same_store(src_db, dst_db):
        raise CopyError("--from and --to name the same store")
    src = open_source(src_db)
    _check_source(src, src_db)
    dst_path = parse_location(str(dst_db)).path  # None for a lake: nothing to remove after
    created = dst_path is not None and not dst_path.exists()
    try:
        dst = Store.open(dst_db, create=True)
        with src.connect() as scon:
            src_tables = [t for t in base_tables(scon) if t not in NOT_COPIED]
            columns = {
                t: [d[0] for d in scon.execute(f"SELECT * FROM {t} LIMIT 0").description]
                for t in src_tables
            }
        if SHARD_TABLE in src_tables:  # made on first use (core/store/shards.py): make it here
            dst.transaction(lambda con: ensure_shard_table(con, dst.is_lake), bump=False)
        with dst.connect() as dcon:
            dst_tables = set(base_tables(dcon))
            missing = [t for t in src_tables if t not in dst_tables]
            if missing:
                raise CopyError(
                    f"--to {dst_db} has no table(s) {', '.join(missing)} of the source; "
                    "nothing was written"
                )
            held = [
                (t, n)
                for t in src_tables
                if (n := dcon.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0])
            ]
        if held:
            first = ("runs", "item_sets", "items")  # what people look for first
            held.sort(
                key=lambda tn: (tn[0] not in first, first.index(tn[0]) if tn[0] in first else 0)
            )
            raise CopyError(
                f"--to {dst_db} is not empty ("
                + ", ".join(f"{t}: {n} rows" for t, n in held[:6])
                + (" …" if len(held) > 6 else "")
                + "); a copy never overwrites or merges, so nothing was written. Copy into a "
                "new store, or move single runs with `python -m core export --source RUN "
                "--bundle DIR` and `python -m core import run DIR`"
            )
        result: list[Copied] = dst.transaction(_copy_tables(src, src_tables, columns))
        return result
    except BaseException:
        if created and dst_path is not None:
            _remove_created(dst_path)
        raise


def _check_source(src: Store, src_db: str | Path) -> None:
    """`store check` on the source first: a key held twice (a file's primary key would refuse
    it) or a data file the storage lost is said as such, with what to do, instead of a
    constraint error halfway through."""
    from core.services.store_check import blocking, check_store

    found = blocking(check_store(src))
    if found:
        fixable = all(f.repairable for f in found)
        raise CopyError(
            f"--from {src_db} has problems a copy cannot carry over:\n  "
            + "\n  ".join(f.line() for f in found)
            + "\nnothing was written to the destination. "
            + (
                f"Run `python -m core store check --db '{src_db}' --repair` first, then copy."
                if fixable
                else f"See `python -m core store check --db '{src_db}'`: --repair fixes what "
                "is marked repairable; the rest needs a person's decision (or the lost files "
                "restored)."
            )
        )


def _remove_created(path: Path) -> None:
    """A destination file this copy created holds nothing worth keeping after a failure."""
    for leftover in (path, path.with_name(path.name + ".wal")):
        try:
            leftover.unlink()
        except FileNotFoundError:
            pass


def format_counts(rows: list[Copied]) -> str:
    width = max([len("table")] + [len(r.table) for r in rows])
    lines = [f"{'table':<{width}}  {'rows source':>12}  {'rows destination':>16}  ok"]
    for r in rows:
        lines.append(
            f"{r.table:<{width}}  {r.rows_source:>12,}  {r.rows_destination:>16,}  "
            + ("yes" if r.ok else "NO")
        )
    return "\n".join(lines)


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    parser.add_argument(
        "--from", dest="source", required=True, metavar="SRC", help="the store to copy (read only)"
    )
    parser.add_argument(
        "--to",
        dest="destination",
        required=True,
        metavar="DST",
        help="an empty or new store to copy into",
    )
    parser.add_argument("--db", default=None, help=argparse.SUPPRESS)  # --from / --to name them


def main(args: argparse.Namespace) -> int:
    try:
        rows = copy_store(args.source, args.destination)
    except CopyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except DatabaseError as exc:
        print(f"error: {exc}; nothing was written to the destination", file=sys.stderr)
        return 1
    except (duckdb.Error, pa.ArrowException) as exc:  # e.g. a value the destination refuses
        print(
            f"error: the copy failed ({error_line(exc)}); nothing was written to the destination",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("interrupted: nothing was written to the destination", file=sys.stderr)
        return 130
    print(format_counts(rows))
    total = sum(r.rows_destination for r in rows)
    print(f"copied {total:,} rows in {len(rows)} tables from {args.source} to {args.destination}")
    return 0
