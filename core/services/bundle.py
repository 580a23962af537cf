"""Run bundles: one run with everything it needs, as Parquet files plus `manifest.json`.

`python -m core export --source RUN --bundle DIR` writes them; `python -m core import run DIR`
brings them into any store (a DuckDB file or a team lake), so a run made on a laptop reaches
the team's store with two commands. Written only against the Store API and plain SQL that
both backends run: a lake enforces no keys, so the importer checks what is already there
itself and writes everything in one transaction.

What a bundle holds (`parts()`): the run row, its item set (the `item_sets` row and its items),
responses, every judging (`judgings` rows and all `results`), the model/judge call records
(`calls`), the people's audit labels of the run (`human_labels`) and the run's rows in the
benchmarks' cache tables (each package declares its own; recounted when stale). Not the
`call_cache` (keyed by request, shared by every run, not linked to one) nor `audit_samples` (an
audit's queue spans runs).

The manifest names the schema version, run, benchmark and item set, and for every file its
table, row count and sha256; `content` holds digests of the run (the run row, responses,
judgings, results) and of the items, which is how an import tells "the same run again" (a
no-op) from "a different run under the same name" (refused).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from core.store import SCHEMA_VERSION, Store, error_line
from core.store.schema import cache_tables

BUNDLE_FORMAT = "ehw-run-bundle"
BUNDLE_VERSION = 1
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Part:
    """One table's share of a bundle: its rows whose `key` column names the run (`of` = "run")
    or the run's item set (`of` = "item_set"). `identity`: part of what makes a run the same
    run (its parameters and results), compared when the store already has the run."""

    table: str
    key: str
    of: str
    identity: bool

    @property
    def file(self) -> str:
        return f"{self.table}.parquet"


_PARTS: tuple[Part, ...] = (
    Part("runs", "run_id", "run", True),
    Part("item_sets", "name", "item_set", False),
    Part("items", "item_set", "item_set", False),
    Part("responses", "run_id", "run", True),
    Part("judgings", "run_id", "run", True),
    Part("results", "run_id", "run", True),
    Part("calls", "run_id", "run", False),
    Part("human_labels", "run_id", "run", False),
)


def parts() -> tuple[Part, ...]:
    """The generic tables' parts, then each benchmark's cache tables (derived rows of the run,
    not part of what makes it the same run)."""
    return (*_PARTS, *(Part(table, key, "run", False) for table, key in cache_tables()))


# Columns that say where a run's process was, not what the run is.
_NOT_CONTENT: dict[str, tuple[str, ...]] = {"runs": ("pid",), "judgings": ("pid",)}


class BundleError(ValueError):
    """A bundle that cannot be written or read as asked; nothing was written."""


class BundleConflict(BundleError):
    """The store holds something the bundle would contradict (another run or item set under
    the same name); nothing was written."""


# -- digests -----------------------------------------------------------------------------------


def digest(table: pa.Table, drop: Sequence[str] = ()) -> str:
    """A hash of a table's rows, independent of their order (and of dropped columns): the same
    rows read from a file, a lake or a Parquet file give the same digest."""
    cols = sorted(c for c in table.column_names if c not in drop)
    rows = sorted(
        json.dumps([row[c] for c in cols], default=str, ensure_ascii=False)
        for row in table.select(cols).to_pylist()
    )
    h = hashlib.sha256(json.dumps(cols).encode())
    for row in rows:
        h.update(row.encode() + b"\n")
    return h.hexdigest()


def run_digest(tables: dict[str, pa.Table]) -> str:
    """The run's content: its row (less the pid), responses, judgings and results."""
    h = hashlib.sha256()
    for part in parts():
        if part.identity:
            h.update(
                f"{part.table}:{digest(tables[part.table], _NOT_CONTENT.get(part.table, ()))}\n".encode()
            )
    return h.hexdigest()


def items_digest(tables: dict[str, pa.Table]) -> str:
    return digest(tables["items"])


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- reading a run out of a store --------------------------------------------------------------


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _read_part(
    con: duckdb.DuckDBPyConnection, part: Part, value: str | None, columns: Sequence[str] = ()
) -> pa.Table:
    cols = ", ".join(_quote(c) for c in columns) if columns else "*"
    return con.execute(
        f"SELECT {cols} FROM {part.table} WHERE {_quote(part.key)} = ? ORDER BY ALL", [value]
    ).to_arrow_table()


def read_run(store: Store, run_id: str) -> tuple[dict[str, Any], dict[str, pa.Table]]:
    """(the run's row as a dict, every part's rows), read in one snapshot."""
    with store.connect() as con:
        con.execute("BEGIN TRANSACTION")  # one snapshot for every table
        try:
            found = con.execute(
                "SELECT run_id, benchmark, item_set, status FROM runs WHERE run_id = ?", [run_id]
            ).fetchall()
            if not found:
                raise BundleError(f"unknown run {run_id!r} (see `python -m core runs`)")
            run = dict(zip(("run_id", "benchmark", "item_set", "status"), found[0]))
            tables = {
                p.table: _read_part(con, p, run_id if p.of == "run" else run["item_set"])
                for p in parts()
            }
        finally:
            con.execute("ROLLBACK")
    return run, tables


# -- writing a bundle --------------------------------------------------------------------------


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == BUNDLE_FORMAT else None


def check_bundle_dir(bundle: str | Path, run_id: str) -> bool:
    """Refuse a target that would destroy something: a file, a missing parent folder, or a
    non-empty folder that does not hold a bundle of this same run (which is replaced whole).
    Returns whether an existing bundle of the run is to be replaced."""
    path = Path(bundle).expanduser()
    if path.exists() and not path.is_dir():
        raise BundleError(f"--bundle {bundle} is a file; give a folder (new or empty)")
    if not path.resolve().parent.is_dir():
        raise BundleError(
            f"--bundle {bundle}: folder {path.resolve().parent} does not exist; create it first"
        )
    if not path.is_dir() or not any(path.iterdir()):
        return False
    manifest = _read_manifest(path)
    if manifest is None or manifest.get("run_id") != run_id:
        held = f"a bundle of run {manifest.get('run_id')!r}" if manifest else "other files"
        raise BundleError(
            f"--bundle {bundle} is not empty (it holds {held}); nothing was written. "
            "Choose a new or empty folder."
        )
    known = {MANIFEST, *(manifest.get("files") or {})}
    extra = sorted(p.name for p in path.iterdir() if p.name not in known)
    if extra:
        raise BundleError(
            f"--bundle {bundle} holds a bundle of run {run_id!r} but also other files "
            f"({', '.join(extra[:5])}); nothing was written. Choose a new or empty folder."
        )
    return True


@dataclass
class Written:
    path: Path
    manifest: dict[str, Any]
    replaced: bool


def export_bundle(store: Store, run_id: str, bundle: str | Path) -> Written:
    """Write run `run_id` as a bundle in folder `bundle`: every file is written into a new
    folder beside it, which then takes the target's place, so a reader (or a failure) never
    sees half a bundle."""
    target = Path(bundle).expanduser()
    check_bundle_dir(target, run_id)
    run, tables = read_run(store, run_id)
    replace = check_bundle_dir(target, run_id)  # again: the folder may have changed meanwhile
    parent = target.resolve().parent
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent))
    try:
        files: dict[str, Any] = {}
        for part in parts():
            pq.write_table(tables[part.table], tmp / part.file)
            files[part.file] = {
                "table": part.table,
                "rows": tables[part.table].num_rows,
                "sha256": _file_sha256(tmp / part.file),
            }
        manifest = {
            "format": BUNDLE_FORMAT,
            "format_version": BUNDLE_VERSION,
            "schema_version": SCHEMA_VERSION,
            "run_id": run_id,
            "benchmark": run["benchmark"],
            "item_set": run["item_set"],
            "status": run["status"],
            "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "files": files,
            "content": {"run": run_digest(tables), "items": items_digest(tables)},
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; a bundle is an ordinary folder
        _swap_in(tmp, target, replace)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Written(target, manifest, replace)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _swap_in(tmp: Path, target: Path, replace: bool) -> None:
    """Put the finished folder `tmp` at `target` (an empty folder there is removed first; an
    old bundle of the same run is moved aside, then deleted once the new one is in place)."""
    old: Path | None = None
    if replace:
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
    elif target.is_dir():
        target.rmdir()  # empty (checked), so nothing is lost
    try:
        os.replace(tmp, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# -- reading a bundle --------------------------------------------------------------------------


@dataclass
class Bundle:
    path: Path
    manifest: dict[str, Any]
    tables: dict[str, pa.Table] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return str(self.manifest["run_id"])

    @property
    def item_set(self) -> str | None:
        value = self.manifest.get("item_set")
        return None if value is None else str(value)

    def key_value(self, part: Part) -> str | None:
        return self.run_id if part.of == "run" else self.item_set


def read_bundle(directory: str | Path) -> Bundle:
    """Read and check a bundle whole before anything is written: the manifest, every file's
    sha256 and row count, and that every row belongs to the bundle's run (or its item set).
    Any problem is one BundleError naming the file."""
    path = Path(directory).expanduser()
    bundle = Bundle(path, _manifest(path, directory))
    for part in parts():
        bundle.tables[part.table] = _read_file(bundle, part)
    runs = bundle.tables["runs"]
    if runs.num_rows != 1:
        raise BundleError(f"{path / 'runs.parquet'}: {runs.num_rows} run rows, a bundle holds one")
    row = runs.to_pylist()[0]
    if row.get("item_set") != bundle.item_set or row.get("benchmark") != bundle.manifest.get(
        "benchmark"
    ):
        raise BundleError(
            f"{path / 'runs.parquet'}: the run's item set or benchmark is not the manifest's"
        )
    if bundle.item_set is not None and bundle.tables["item_sets"].num_rows != 1:
        raise BundleError(f"{path / 'item_sets.parquet'}: the run's item set row is missing")
    content = bundle.manifest.get("content") or {}
    if content.get("run") != run_digest(bundle.tables) or content.get("items") != items_digest(
        bundle.tables
    ):
        raise BundleError(f"{path / MANIFEST}: its content digests do not match the files")
    return bundle


def _manifest(path: Path, directory: str | Path) -> dict[str, Any]:
    """The bundle's manifest, checked: format, schema version, run and the files it lists."""
    if not path.is_dir():
        raise BundleError(
            f"{directory}: no such folder (a bundle is a folder from `export --bundle`)"
        )
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(
            f"{path / MANIFEST}: missing, so {directory} is not a run bundle "
            "(write one with `python -m core export --source RUN --bundle DIR`)"
        ) from None
    except (OSError, ValueError) as exc:
        raise BundleError(f"{path / MANIFEST}: not readable as JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{path / MANIFEST}: not a run bundle's manifest")
    if manifest.get("format_version") != BUNDLE_VERSION:
        raise BundleError(
            f"{path / MANIFEST}: bundle format version {manifest.get('format_version')!r}; "
            f"this program reads version {BUNDLE_VERSION}"
        )
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise BundleError(
            f"{path / MANIFEST}: the bundle was written by a store of schema version "
            f"{manifest.get('schema_version')!r}, this program's is {SCHEMA_VERSION}; export it "
            "again with the same version of the program as the store you import into"
        )
    if not isinstance(manifest.get("run_id"), str) or not isinstance(manifest.get("files"), dict):
        raise BundleError(f"{path / MANIFEST}: no run_id or files")
    files = set(manifest["files"])
    wanted = {p.file for p in parts()}
    if files != wanted:
        missing, extra = sorted(wanted - files), sorted(files - wanted)
        raise BundleError(
            f"{path / MANIFEST}: lists other files than a bundle holds"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(extra)}" if extra else "")
        )
    return manifest


def _read_file(bundle: Bundle, part: Part) -> pa.Table:
    """One part's file: present, its sha256 and row count the manifest's, its rows the run's."""
    entry = bundle.manifest["files"][part.file]
    entry = entry if isinstance(entry, dict) else {}
    file = bundle.path / part.file
    if not file.is_file():
        raise BundleError(f"{file}: missing (the manifest lists it)")
    actual = _file_sha256(file)
    if actual != entry.get("sha256"):
        raise BundleError(
            f"{file}: damaged or changed since the export (its sha256 is {actual[:16]}…, the "
            f"manifest says {str(entry.get('sha256'))[:16]}…); nothing was written. Export the "
            "run again."
        )
    try:
        table = pq.read_table(file)
    except (OSError, pa.ArrowException) as exc:
        raise BundleError(f"{file}: not a readable Parquet file ({exc})") from None
    if table.num_rows != entry.get("rows"):
        raise BundleError(f"{file}: {table.num_rows} rows, the manifest says {entry.get('rows')}")
    _check_rows(file, part, table, bundle.key_value(part))
    return table


def _check_rows(file: Path, part: Part, table: pa.Table, value: str | None) -> None:
    """Every row names the bundle's run (or item set): a bundle never writes other runs' rows."""
    if part.key not in table.column_names:
        raise BundleError(f"{file}: no column {part.key}")
    values = set(table.column(part.key).to_pylist())
    if values - {value}:
        others = ", ".join(repr(v) for v in sorted(values - {value}, key=str))
        raise BundleError(f"{file}: rows of another run or item set ({others[:200]})")


# -- importing a bundle ------------------------------------------------------------------------


@dataclass
class Imported:
    run_id: str
    unchanged: bool
    items_reused: bool = False
    rows: dict[str, int] = field(default_factory=dict)


def _table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [r[0] for r in con.execute(f"SELECT * FROM {table} LIMIT 0").description]


def _columns(con: duckdb.DuckDBPyConnection, bundle: Bundle, part: Part) -> list[str]:
    """The bundle file's columns, each one the store's table has (so only known names ever
    reach the SQL)."""
    have = set(_table_columns(con, part.table))
    cols = bundle.tables[part.table].column_names
    unknown = [c for c in cols if c not in have]
    if unknown:
        raise BundleError(
            f"{bundle.path / part.file}: columns the store's {part.table} table lacks "
            f"({', '.join(unknown[:5])})"
        )
    return cols


def _plan(con: duckdb.DuckDBPyConnection, bundle: Bundle) -> tuple[bool, bool]:
    """(the run is already there with the same content, the item set is there and the same),
    or BundleConflict when the store holds something else under the bundle's names."""
    run_id = bundle.run_id
    by_table = {p.table: p for p in parts()}
    there = con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchall()[0][0]
    if there:
        mine = {
            p.table: _read_part(con, p, run_id, _columns(con, bundle, p))
            for p in parts()
            if p.identity
        }
        differ = [
            p.table
            for p in parts()
            if p.identity
            and digest(mine[p.table], _NOT_CONTENT.get(p.table, ()))
            != digest(bundle.tables[p.table], _NOT_CONTENT.get(p.table, ()))
        ]
        if not differ:
            return True, True
        raise BundleConflict(
            f"the store already has a run {run_id!r} with other content (differs in "
            f"{', '.join(differ)}): a different run under the same name, or this run changed "
            "since one of the two was exported (resumed, re-judged). Nothing was written."
        )
    for part in parts():
        if part.of == "run":
            left = con.execute(
                f"SELECT count(*) FROM {part.table} WHERE {_quote(part.key)} = ?", [run_id]
            ).fetchall()[0][0]
            if left:
                raise BundleConflict(
                    f"the store has no run {run_id!r} but {left} row(s) of it in table "
                    f"{part.table} (left by a deleted run?); nothing was written"
                )
    name = bundle.item_set
    if name is None:
        return False, True
    found = con.execute("SELECT benchmark FROM item_sets WHERE name = ?", [name]).fetchall()
    n_items = con.execute("SELECT count(*) FROM items WHERE item_set = ?", [name]).fetchall()[0][0]
    if not found and not n_items:
        return False, False
    benchmark = bundle.manifest.get("benchmark")
    if found and found[0][0] != benchmark:
        raise BundleConflict(
            f"the store's item set {name!r} belongs to benchmark {found[0][0]!r}, the bundle's "
            f"to {benchmark!r}; nothing was written"
        )
    mine_items = _read_part(con, by_table["items"], name, _columns(con, bundle, by_table["items"]))
    if not found or digest(mine_items) != items_digest(bundle.tables):
        raise BundleConflict(
            f"the store has an item set {name!r} with other items than the bundle's "
            f"({mine_items.num_rows} stored, {bundle.tables['items'].num_rows} in the bundle); "
            "the run's results refer to its own items, so nothing was written. Import into "
            "another store, or rename the store's item set."
        )
    return False, True


def import_bundle(store: Store, directory: str | Path | Bundle) -> Imported:
    """Bring a bundle into `store`: checked whole first, then one transaction. The same run
    again is a no-op; another run or item set under the bundle's names is refused."""
    bundle = directory if isinstance(directory, Bundle) else read_bundle(directory)
    with store.connect() as con:
        same, _ = _plan(con, bundle)
    if same:
        return Imported(bundle.run_id, unchanged=True, items_reused=True)

    def write(con: duckdb.DuckDBPyConnection) -> Imported:
        same, reuse = _plan(con, bundle)  # again, inside the transaction
        if same:
            return Imported(bundle.run_id, unchanged=True, items_reused=True)
        done = Imported(bundle.run_id, unchanged=False, items_reused=reuse)
        for part in parts():
            if part.of == "item_set" and reuse:
                continue
            table = bundle.tables[part.table]
            cols = ", ".join(_quote(c) for c in _columns(con, bundle, part))
            if table.num_rows:
                con.register("_bundle_part", table)
                try:
                    con.execute(
                        f"INSERT INTO {part.table} ({cols}) SELECT {cols} FROM _bundle_part"
                    )
                finally:
                    con.unregister("_bundle_part")
            stored = con.execute(
                f"SELECT count(*) FROM {part.table} WHERE {_quote(part.key)} = ?",
                [bundle.key_value(part)],
            ).fetchall()[0][0]
            if stored != table.num_rows:
                raise BundleError(
                    f"{part.table}: {stored} rows after the import, the bundle has "
                    f"{table.num_rows}; nothing was written"
                )
            done.rows[part.table] = table.num_rows
        return done

    result: Imported = store.transaction(write)
    return result


# -- CLI: `import run DIR` ---------------------------------------------------------------------


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    parser.add_argument("bundle", metavar="DIR", help="a folder written by `export --bundle`")


def main(args: argparse.Namespace) -> int:
    try:
        bundle = read_bundle(
            args.bundle
        )  # before the store is opened: a bad bundle touches nothing
        store = Store.open(args.db, create=True)
        result = import_bundle(store, bundle)
    except BundleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (duckdb.Error, pa.ArrowException) as exc:  # e.g. a value the store refuses
        print(
            f"error: the import failed ({error_line(exc)}); nothing was written",
            file=sys.stderr,
        )
        return 1
    if result.unchanged:
        print(
            f"run {result.run_id!r} is already in the store with the same content: "
            "nothing was written"
        )
        return 0
    items = "reused (the same items were already there)" if result.items_reused else "added"
    print(f"imported run {result.run_id!r} from {args.bundle}; item set {items}")
    for table, n in result.rows.items():
        print(f"  {table:<13} {n:>8} rows")
    return 0
