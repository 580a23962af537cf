"""Import results files as runs: match their samples to items, report, then write all or nothing.

`plan_file` reads a file (core.sources readers) and matches every run's samples to items, so
the counts (matched / new / ambiguous / unmatched) are known before anything is written;
`write_plans` streams one file's samples in batches through the result record's one writer
(core.engine.results.write_batch) into a stage of its own (core.sources.stage: each batch
committed to a temporary DuckDB file), then moves the staged rows into the store in one
transaction that writes the `runs` row last: a log of any size passes in bounded memory, and
the store sees the whole file or nothing of it (also when the import is killed).

Items: a sample is matched by id when the ids are the item set's own (a benchmark's released ids), else by
a hash of its normalised input text (core.sources.normalise), or becomes an item of a new set
(`new_item_set`) built from the log's inputs and targets. Verdicts whose items are not in the
store (a full set that is not shipped) keep their ids: the run names the item set, which
links them when it is imported later.

Idempotence: the run's provenance (params.source) holds the file's sha256; importing the same
file again finds the run with that sha256 and writes nothing; a different file under an
existing run name is refused.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import re
import socket
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from core.engine.results import (
    DEFAULT_JUDGING,
    RESPONSE_SCHEMA,
    RESULT_SCHEMA,
    ResultBatch,
    write_batch,
)
from core.engine.runner.checks import pid_alive
from core.registry import BENCHMARKS
from core.sources import SourceError, SourceRun, normalise, read
from core.sources.stage import ITEM_SCHEMA, Stage, staged
from core.store import Store
from core.store.item_sets import runs_using

log = logging.getLogger(__name__)

BATCH = 2000  # samples per staged batch (each committed to the stage: bounded memory)
# DuckDB's memory limit for the stage and for the store's instance while the staged rows move
# in: rows beyond it spill to its temp directory instead of staying in the process
# (docs/performance.md).
IMPORT_MEMORY_LIMIT = "256MB"
# The stage's own DuckDB instance serves nothing else: what it caches of its file is kept
# small, so the staging pass does not grow with the log (docs/performance.md).
STAGE_MEMORY_LIMIT = "32MB"
RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+=@-]{0,199}$")


@dataclass
class Options:
    fmt: str | None = None
    item_set: str | None = None
    new_item_set: str | None = None
    benchmark: str | None = None  # the benchmark of a new item set
    name: str | None = None  # the run name (a file of several runs: NAME-<model>-<task>)
    variant: str | None = None  # the benchmark variant the log's answers are (default: first)


@dataclass
class Plan:
    """What importing one run of a file would do."""

    run: SourceRun
    path: Path
    fmt: str
    run_id: str
    benchmark: str
    item_set: str
    variant: str
    samples: int = 0
    items: int = 0
    matched: int = 0
    new: int = 0  # items not (yet) in the store, kept by id; or items of the new set
    ambiguous: int = 0
    unmatched: int = 0
    item_ids: dict[str, str] | None = None  # sample key -> item id (None: the key is the id)
    builds_items: bool = False  # the items of a new set are built from the log (when written)
    unchanged: bool = False
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        state = "already imported (same file): nothing to write" if self.unchanged else ""
        parts = [
            f"run {self.run_id!r} ({self.run.tool}, model {self.run.model}, task "
            f"{self.run.task}) -> {self.benchmark} item set {self.item_set!r}: "
            f"{self.samples} samples of {self.items} items: {self.matched} matched, {self.new} new, "
            f"{self.ambiguous} ambiguous, {self.unmatched} unmatched"
        ]
        if self.run.note:
            parts.append(self.run.note)
        if state:
            parts.append(state)
        return "; ".join(parts)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "x"


def default_run_id(run: SourceRun, options: Options, several: bool) -> str:
    if options.name:
        return (
            options.name if not several else f"{options.name}-{_slug(run.model)}-{_slug(run.task)}"
        )
    if run.run_name:
        return run.run_name
    head = run.short or _slug(run.tool)[:8]
    return f"{head}-{_slug(run.model.replace('/', '-'))}-{_slug(run.task)}"[:120]


# sample key -> what item matching needs of it: a digest of its normalised input (None: the
# sample has none) and of its other texts (a document's fields). Never the texts themselves:
# a big log's inputs would stay in memory (the items of a new set are read again when written).
Keys = dict[str, tuple[bytes | None, tuple[bytes, ...]]]


def _digest(text: str | None) -> bytes:
    """What texts are matched on: 16 bytes of the sha256 of the normalised text."""
    return hashlib.sha256(normalise(text).encode("utf-8")).digest()[:16]


def _existing_run(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    row = con.execute("SELECT params FROM runs WHERE run_id = ?", [run_id]).fetchall()
    if not row:
        return None
    params = json.loads(row[0][0]) if row[0][0] else {}
    return params if isinstance(params, dict) else {}


def _items(con: duckdb.DuckDBPyConnection, item_set: str) -> pd.DataFrame:
    return con.execute("SELECT item_id, prompt FROM items WHERE item_set = ?", [item_set]).df()


def _keys(run: SourceRun) -> tuple[Keys, int, int]:
    """Every sample key with the digests of its first input (pass 1), the sample count and
    how many keys have no input text."""
    keys: Keys = {}
    n = missing = 0
    for sample in (run.index or run.samples)():
        n += 1
        if sample.key not in keys:
            text = sample.input
            keys[sample.key] = (
                None if text is None else _digest(text),
                tuple(_digest(t) for t in sample.alternatives),
            )
            missing += not (text or "").strip()
    return keys, n, missing


def _match_text(
    keys: Keys, items: pd.DataFrame, by_id: bool
) -> tuple[dict[str, str], int, int, int]:
    """(key -> item id, matched, ambiguous, unmatched) of keys against one item set."""
    ids = set(items["item_id"].astype(str))
    by_hash: dict[bytes, list[str]] = {}
    for item_id, prompt in zip(items["item_id"].astype(str), items["prompt"]):
        by_hash.setdefault(_digest(prompt), []).append(item_id)
    out: dict[str, str] = {}
    ambiguous = unmatched = 0
    for key, (text, others) in keys.items():
        if by_id or (text is None and not others):
            if key in ids:
                out[key] = key
            else:
                unmatched += 1
            continue
        found: list[str] = []
        for candidate in (text, *others):
            if candidate is not None:
                found = by_hash.get(candidate, [])
                if found:
                    break
        if len(found) == 1:
            out[key] = found[0]
        elif len(found) > 1:
            if key in found:
                out[key] = key
            else:
                ambiguous += 1
        else:
            unmatched += 1
    return out, len(out), ambiguous, unmatched


def _plan_run(
    con: duckdb.DuckDBPyConnection,
    run: SourceRun,
    path: Path,
    fmt: str,
    options: Options,
    several: bool,
) -> Plan:
    run_id = default_run_id(run, options, several)
    if not RUN_NAME_RE.match(run_id):
        raise SourceError(
            f"{path}: run name {run_id!r} is not a valid name (letters, digits, . _ : + = @ -)"
        )
    keys, n, missing = _keys(run)
    if not n:
        raise SourceError(f"{path}: no samples to import (model {run.model}, task {run.task})")
    benchmark = run.benchmark or options.benchmark
    plan = Plan(run, path, fmt, run_id, benchmark or "", "", "", samples=n, items=len(keys))
    if _same_run_there(con, plan):
        return plan
    if options.new_item_set:
        _plan_new_set(con, plan, keys, missing, options.new_item_set, benchmark)
    else:
        _plan_match(con, plan, keys, options.item_set, benchmark)
    bench = BENCHMARKS.get(plan.benchmark)
    if bench is None:
        raise SourceError(f"{path}: unknown benchmark {plan.benchmark!r}")
    variant = options.variant or bench.variants[0]
    if variant not in bench.variants:
        raise SourceError(
            f"{path}: --variant {variant!r} is not one of {bench.label}'s "
            f"({', '.join(bench.variants)})"
        )
    plan.variant = ",".join(run.variants) if run.variants else variant
    return plan


def _same_run_there(con: duckdb.DuckDBPyConnection, plan: Plan) -> bool:
    """True when the store holds this run from this same file (nothing to do); a SourceError
    when it holds another run under the name."""
    existing = _existing_run(con, plan.run_id)
    if existing is None:
        return False
    source = existing.get("source") or {}
    theirs = source.get("sha256")
    if theirs == plan.run.provenance.get("sha256") and source.get("task") == plan.run.task:
        plan.unchanged = True
        row = con.execute(
            "SELECT benchmark, item_set, setting FROM runs WHERE run_id = ?", [plan.run_id]
        ).fetchall()[0]
        plan.benchmark, plan.item_set, plan.variant = row[0], row[1], row[2] or ""
        return True
    raise SourceError(
        f"{plan.path}: the store already has a run {plan.run_id!r} from "
        f"{source.get('file') or 'another source'} (sha256 {str(theirs)[:12]}…), not from "
        f"this file (sha256 {str(plan.run.provenance.get('sha256'))[:12]}…); nothing was "
        "written. Import it under another --name."
    )


def _plan_new_set(
    con: duckdb.DuckDBPyConnection,
    plan: Plan,
    keys: Keys,
    missing: int,
    name: str,
    benchmark: str | None,
) -> None:
    """A new item set from the log's inputs and targets (the same set again is reused)."""
    path = plan.path
    if not benchmark:
        raise SourceError(
            f"{path}: --new-item-set needs --benchmark (one of {', '.join(BENCHMARKS)}): "
            "the benchmark whose analyses the new items take part in"
        )
    if missing:
        raise SourceError(
            f"{path}: {missing} sample(s) have no input text, so no item can be built "
            "from them; nothing was written"
        )
    plan.benchmark, plan.item_set = benchmark, name
    stored = {
        r[0] for r in con.execute("SELECT item_id FROM items WHERE item_set = ?", [name]).fetchall()
    }
    if not stored:
        plan.builds_items = True
        plan.new = len(keys)
        return
    owner = con.execute("SELECT benchmark FROM item_sets WHERE name = ?", [name]).fetchall()
    if not (owner and owner[0][0] == benchmark and stored == set(keys)):
        raise SourceError(
            f"{path}: item set {name!r} exists with other items; choose another "
            "--new-item-set name, or --item-set to match against it"
        )
    plan.matched = len(keys)


def _candidates(
    con: duckdb.DuckDBPyConnection, plan: Plan, item_set: str | None, benchmark: str | None
) -> list[tuple[str, str]]:
    """(item set, benchmark) to match against: the named one, or every set (of the
    benchmark when the format knows it)."""
    if item_set:
        found = con.execute("SELECT benchmark FROM item_sets WHERE name = ?", [item_set]).fetchall()
        if found and benchmark and found[0][0] != benchmark:
            raise SourceError(
                f"{plan.path}: item set {item_set!r} holds {found[0][0]} items, these results "
                f"are {benchmark}'s; nothing was written"
            )
        if not found and not (plan.run.id_is_item_id and benchmark):
            raise SourceError(
                f"{plan.path}: no item set {item_set!r} in the store (see the Import page), or "
                "give --new-item-set NAME --benchmark B to build one from the log"
            )
        return [(item_set, found[0][0] if found else str(benchmark))]
    sql = "SELECT name, benchmark FROM item_sets"
    params: list[Any] = []
    if benchmark:
        sql += " WHERE benchmark = ?"
        params.append(benchmark)
    return [(r[0], r[1]) for r in con.execute(sql + " ORDER BY name", params).fetchall()]


def _plan_match(
    con: duckdb.DuckDBPyConnection,
    plan: Plan,
    keys: Keys,
    item_set: str | None,
    benchmark: str | None,
) -> None:
    """Match the samples to a stored item set: the named one, else the set matching most."""
    run, path = plan.run, plan.path
    candidates = _candidates(con, plan, item_set, benchmark)
    best: tuple[int, int, int, str, str, dict[str, str]] | None = None
    for name, bench in candidates:
        mapping, matched, ambiguous, unmatched = _match_text(
            keys, _items(con, name), run.id_is_item_id
        )
        score = (matched, -ambiguous, -unmatched, name, bench, mapping)
        if best is None or score[:3] > best[:3]:
            best = score
    if run.id_is_item_id and benchmark:
        # ids are the benchmark's own: verdicts of items not in the store keep their ids
        # (the run names the item set, which links them once it is imported)
        full = best[3] if best is not None and best[2] == 0 and best[0] else None
        name = item_set or full or run.item_set or benchmark
        _, matched, _, _ = _match_text(keys, _items(con, name), True)
        plan.item_set, plan.benchmark = name, benchmark
        plan.matched, plan.new = matched, len(keys) - matched
        plan.item_ids = None
        return
    if best is None or best[0] == 0:
        raise SourceError(
            f"{path}: none of its {len(keys)} items matches an item set in the store (by "
            "id or by input text); import the items first, or give --new-item-set NAME "
            f"--benchmark B (one of {', '.join(BENCHMARKS)}) to build a set from the log"
        )
    matched, neg_amb, neg_unm, name, bench, mapping = best
    plan.item_set, plan.benchmark = name, bench
    plan.matched, plan.ambiguous, plan.unmatched = matched, -neg_amb, -neg_unm
    plan.item_ids = mapping
    if plan.ambiguous or plan.unmatched:
        plan.problems.append(
            f"{path}: {plan.unmatched} sample item(s) match no item and {plan.ambiguous} "
            f"match several items of set {name!r} (best of {len(candidates)} set(s)); "
            "nothing was written. Give --item-set, or --new-item-set NAME --benchmark B"
        )


def plan_file(store: Store, path: str | Path, options: Options) -> list[Plan]:
    """Read a file and plan the import of each of its runs (nothing is written)."""
    path = Path(path)
    sweep_stale_imports(store)
    fmt, runs = read(path, options.fmt)
    if not runs:
        raise SourceError(f"{path}: no runs in the file")
    with store.connect() as con:
        plans = [_plan_run(con, r, path, fmt, options, len(runs) > 1) for r in runs]
    ids = Counter(p.run_id for p in plans)
    twice = [k for k, v in ids.items() if v > 1]
    if twice:
        raise SourceError(f"{path}: two runs of the file would be named {twice[0]!r}")
    return plans


def _batches(plan: Plan, judgings: set[str]) -> Iterator[ResultBatch]:
    """The run's rows in batches: its own judging's, then each other judging's (`judgings`
    collects their names). A unit given twice is found in the stage (Stage.twice), so no set
    of every unit seen stays in memory."""
    batch = ResultBatch()
    others: dict[str, ResultBatch] = {}
    for sample in plan.run.samples():
        item_id = sample.key if plan.item_ids is None else plan.item_ids.get(sample.key)
        if item_id is None:
            continue
        variant = sample.variant or plan.variant
        key = (plan.run_id, item_id, variant)
        batch.add_response(key, sample.response, epoch=sample.epoch)
        if sample.result is not None:
            batch.add_result(key, sample.result, epoch=sample.epoch)
        for name, result in sample.judgings.items():
            judgings.add(name)
            others.setdefault(name, ResultBatch(judging=name)).add_result(
                key, result, epoch=sample.epoch
            )
        if len(batch) >= BATCH:
            yield batch
            yield from others.values()
            batch, others = ResultBatch(), {}
    if not batch.empty:
        yield batch
    yield from others.values()


@dataclass
class _Staged:
    """What a plan's staging found: responses, epochs, other judgings, items of a new set."""

    n: int = 0
    epochs: int = 0
    judgings: set[str] = field(default_factory=set)
    items: int = 0


def _stage_items(stage: Stage, plan: Plan, built: dict[str, set[str]]) -> int:
    """The new item set's items, from the log's inputs and targets (each key's first sample),
    staged in batches; returns how many. `built`: item set -> keys staged by the file's runs
    so far (two runs of a file, e.g. promptfoo's providers, build one set of the same tests)."""
    seen: set[str] = set()
    rows: list[tuple[Any, ...]] = []
    again = built.get(plan.item_set)
    for sample in (plan.run.index or plan.run.samples)():
        if sample.key in seen:
            continue
        seen.add(sample.key)
        if again is not None:
            continue
        meta = sample.meta
        payload = json.dumps(meta, ensure_ascii=False, default=str) if meta else None
        rows.append(
            (plan.item_set, sample.key, plan.benchmark, sample.input, sample.target, payload)
        )
        if len(rows) >= BATCH:
            stage.add_items(rows)
            rows = []
    stage.add_items(rows)
    if again is not None and again != seen:
        raise SourceError(
            f"{plan.path}: the file's runs would build item set {plan.item_set!r} from "
            "different items; import it with --item-set or one run at a time"
        )
    built[plan.item_set] = seen
    return len(seen)


def _stage_plan(stage: Stage, plan: Plan, built: dict[str, set[str]]) -> _Staged:
    """Stream the run's samples into the stage, batch by batch (each committed there)."""
    out = _Staged()
    if plan.builds_items:
        out.items = _stage_items(stage, plan, built)
    for k, batch in enumerate(_batches(plan, out.judgings), 1):
        write_batch(stage.connection, batch)
        if batch.judging == DEFAULT_JUDGING:
            out.n += len(batch)
        out.epochs = max([out.epochs, *(r[-1] for r in batch.responses.rows)])
        log.info("staged batch %d of run %s: %d samples so far", k, plan.run_id, out.n)
    twice = stage.twice(plan.run_id)
    if twice is not None:
        raise SourceError(
            f"{plan.path}: item {twice[0]!r} (epoch {twice[1]}) appears twice in run "
            f"{plan.run_id!r}; nothing was written"
        )
    return out


# -- moving the stage into the store ----------------------------------------------------------
#
# A file store: the staged rows move in committed chunks of MOVE_ROWS (one transaction holding
# all of them kept every row in the process: ~0.5 GB more at 50,000 samples), under a marker
# row in `meta` (`import_in_progress:<run_id>`: pid, host, item set it builds); the item set's
# row, the judgings and the `runs` row are written last, in the transaction that drops the
# marker, so no run (nor new item set) is visible before all of its rows are there. A failed
# move deletes what it committed; a killed one leaves the marker, and the next import into the
# store (sweep_stale_imports: its process is gone) deletes those rows first. A lake moves in one
# transaction (DuckLake writes each insert's Parquet files as it goes).

MOVE_ROWS = 20000  # staged rows per committed chunk of the move (a file store)
MARKER = "import_in_progress:"


def _marker(plan: Plan) -> tuple[str, str]:
    value = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "file": plan.path.name,
        "item_set": plan.item_set if plan.builds_items else None,
        "started": _now(),
    }
    return MARKER + plan.run_id, json.dumps(value)


def _discard(con: duckdb.DuckDBPyConnection, run_id: str, item_set: str | None) -> None:
    """Delete what an unfinished import of `run_id` committed (never a finished run's rows:
    only while the store has no `runs` row of that name), and its marker."""
    if not con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchall():
        for table in ("responses", "results", "judgings"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        if (
            item_set
            and not con.execute("SELECT 1 FROM item_sets WHERE name = ?", [item_set]).fetchall()
        ):
            con.execute("DELETE FROM items WHERE item_set = ?", [item_set])
    con.execute("DELETE FROM meta WHERE key = ?", [MARKER + run_id])


def sweep_stale_imports(store: Store) -> list[str]:
    """Delete the rows of imports whose process died mid-way (their marker's pid is gone on
    this host); returns their run ids. A marker of another host's import is left alone."""
    if store.is_lake or store.read_only or not store.exists():
        return []
    here = socket.gethostname()
    stale: list[tuple[str, str | None]] = []
    for key, value in store.rows("SELECT key, value FROM meta WHERE key LIKE ?", [MARKER + "%"]):
        try:
            info = json.loads(value)
        except ValueError:
            info = {}
        pid = info.get("pid")
        if info.get("host") == here and isinstance(pid, int) and not pid_alive(pid):
            stale.append((key[len(MARKER) :], info.get("item_set")))
    if stale:

        def clean(con: duckdb.DuckDBPyConnection) -> None:
            for run_id, item_set in stale:
                _discard(con, run_id, item_set)

        store.transaction(clean)
        log.info("removed the rows of %d killed import(s): %s", len(stale), stale)
    return [r for r, _ in stale]


Step = Callable[[duckdb.DuckDBPyConnection], Any]


def _chunk(stage: Stage, table: str, start: int) -> Step:
    """One committed chunk of the move: staged rows [start, start + MOVE_ROWS) of `table`."""
    schema = {"items": ITEM_SCHEMA, "responses": RESPONSE_SCHEMA, "results": RESULT_SCHEMA}
    cols = ", ".join(schema[table].names)

    def step(con: duckdb.DuckDBPyConnection) -> None:
        _attach(con, stage)
        con.execute(
            f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {stage.alias}.{table} "
            "WHERE rowid >= ? AND rowid < ?",
            [start, start + MOVE_ROWS],
        )

    return step


def _attach(con: duckdb.DuckDBPyConnection, stage: Stage) -> None:
    con.execute(f"ATTACH IF NOT EXISTS '{stage.path}' AS {stage.alias} (READ_ONLY)")


def _begin(con: duckdb.DuckDBPyConnection, stage: Stage, todo: list[Plan]) -> None:
    """The move's first transaction: the names are still free; a marker per run."""
    _attach(con, stage)
    checked: set[str] = set()
    for plan in todo:
        busy = con.execute("SELECT 1 FROM meta WHERE key = ?", [MARKER + plan.run_id]).fetchall()
        if busy or _existing_run(con, plan.run_id) is not None:
            raise SourceError(
                f"{plan.path}: run {plan.run_id!r} appeared in the store meanwhile (or is "
                "being imported); nothing written"
            )
        if plan.builds_items and plan.item_set not in checked:
            _check_new_set(con, plan)
            checked.add(plan.item_set)
        con.execute("INSERT INTO meta VALUES (?, ?)", list(_marker(plan)))


def _move(store: Store, stage: Stage, todo: list[Plan], done: list[_Staged]) -> int:
    """The staged runs into the store (see above); returns responses written."""
    steps: list[Step] = [lambda con: _begin(con, stage, todo)]
    for table in ("items", "responses", "results"):
        n = stage.sizes[table]
        steps += [_chunk(stage, table, start) for start in range(0, n, MOVE_ROWS)]

    def finish(con: duckdb.DuckDBPyConnection) -> int:
        return sum(_finish_plan(con, plan, d) for plan, d in zip(todo, done))

    if store.is_lake:

        def whole(con: duckdb.DuckDBPyConnection) -> int:
            for step in steps:
                step(con)
            return finish(con)

        return int(store.transaction(whole))
    begun = False  # our markers are in: what fails from here on is undone
    try:
        for k, step in enumerate(steps):
            store.transaction(step)
            begun = True
            log.info("moved chunk %d of %d of %s into the store", k, len(steps) - 1, stage.alias)
        return int(store.transaction(finish))
    except BaseException:
        if not begun:  # nothing committed (another import's marker may be what stopped us)
            raise

        def undo(con: duckdb.DuckDBPyConnection) -> None:
            for plan in todo:
                if con.execute(
                    "SELECT 1 FROM meta WHERE key = ?", [MARKER + plan.run_id]
                ).fetchall():
                    _discard(con, plan.run_id, plan.item_set if plan.builds_items else None)

        with contextlib.suppress(Exception):
            store.transaction(undo)
        raise


def _check_new_set(con: duckdb.DuckDBPyConnection, plan: Plan) -> None:
    """The new item set's name is still free (or an empty set no run uses)."""
    name = plan.item_set
    found = con.execute("SELECT benchmark FROM item_sets WHERE name = ?", [name]).fetchall()
    held = con.execute("SELECT count(*) FROM items WHERE item_set = ?", [name]).fetchall()
    if held[0][0] or (found and (found[0][0] != plan.benchmark or runs_using(con, name))):
        raise SourceError(
            f"{plan.path}: item set {name!r} appeared in the store meanwhile; nothing was "
            "written. Choose another --new-item-set name"
        )


def _finish_plan(con: duckdb.DuckDBPyConnection, plan: Plan, done: _Staged) -> int:
    """The rows that make a moved run visible, in the move's last transaction: the new item
    set's row, the other judgings, and the `runs` row; the marker goes."""
    run = plan.run
    if _existing_run(con, plan.run_id) is not None:
        raise SourceError(
            f"{plan.path}: run {plan.run_id!r} appeared in the store meanwhile; nothing written"
        )
    if plan.builds_items:
        con.execute("DELETE FROM item_sets WHERE name = ?", [plan.item_set])
        con.execute(
            "INSERT INTO item_sets (name, benchmark, origin, n_items, info) VALUES (?, ?, ?, ?, ?)",
            [
                plan.item_set,
                plan.benchmark,
                f"{run.tool}: {plan.path.name}",
                done.items,
                json.dumps({"built_from": run.provenance}, default=str),
            ],
        )
    for name in sorted(done.judgings):
        # another scorer of the same answers: a finished judging of the run, older than the
        # run's own so the run's first scorer stays the one results show by default
        con.execute(
            "INSERT INTO judgings (run_id, judging, kind, template_id, params, status, "
            "n_planned, created_at, updated_at) VALUES (?, ?, 'parser', ?, ?, 'done', ?, "
            "current_timestamp - INTERVAL 1 SECOND, current_timestamp - INTERVAL 1 SECOND)",
            [plan.run_id, name, f"{run.tool}:{name}", json.dumps({"source": run.tool}), done.n],
        )
    params = {
        **run.params,
        "source": {**run.provenance, "task": run.task, "imported_at": _now()},
    }
    if done.epochs > 1:
        params["epochs"] = done.epochs
    con.execute(
        "INSERT INTO runs (run_id, benchmark, kind, item_set, model, endpoint, setting, mode, "
        "judge_model, template_id, params, weak_model, status, n_planned) "
        "VALUES (?, ?, 'eval', ?, ?, ?, ?, ?, ?, ?, ?, false, ?, ?)",
        [
            plan.run_id,
            plan.benchmark,
            plan.item_set,
            run.model,
            f"imported: {run.tool}",
            plan.variant,
            run.mode or BENCHMARKS[plan.benchmark].mode,
            run.judge_model,
            run.params.get("judge_template"),
            json.dumps(params, ensure_ascii=False, default=str),
            run.status,
            done.n,
        ],
    )
    con.execute("DELETE FROM meta WHERE key = ?", [MARKER + plan.run_id])
    return done.n


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def write_plans(store: Store, plans: list[Plan]) -> int:
    """Write one file's planned runs, all or nothing; returns responses written. Plans with
    problems are refused whole. The samples are staged first (core.sources.stage), then
    moved into the store (_move: the runs row last)."""
    problems = [p for plan in plans for p in plan.problems]
    if problems:
        raise SourceError("\n".join(problems))
    todo = [p for p in plans if not p.unchanged]
    if not todo:
        return 0
    with staged(STAGE_MEMORY_LIMIT) as stage:
        built: dict[str, set[str]] = {}
        done = [_stage_plan(stage, plan, built) for plan in todo]
        stage.close()
        log.info("moving the staged rows of %s into the store", todo[0].path.name)
        with store.session():
            try:
                with bounded_memory(store):
                    written = _move(store, stage, todo, done)
            finally:
                with store.connect() as con:
                    con.execute(f"DETACH DATABASE IF EXISTS {stage.alias}")
    log.info("imported %s: %d responses", todo[0].path.name, written)
    return written


@contextlib.contextmanager
def bounded_memory(store: Store) -> Iterator[None]:
    """DuckDB's memory_limit lowered to IMPORT_MEMORY_LIMIT while a file store's import
    writes and commits, then back to DuckDB's default (nothing else here sets it): its
    uncommitted rows spill to disk instead of growing with the log. (A lake writes each
    batch's Parquet files as it goes.)"""
    if store.is_lake:
        yield
        return
    with store.connect() as con:
        con.execute(f"SET memory_limit = '{IMPORT_MEMORY_LIMIT}'")
    try:
        yield
    finally:
        with store.connect() as con:
            con.execute("RESET memory_limit")


def import_file(store: Store, path: str | Path, options: Options) -> tuple[list[Plan], int]:
    """Plan and write one file (the CLI's and the Import page's one call)."""
    plans = plan_file(store, path, options)
    return plans, write_plans(store, plans)


PLAN_COLUMNS = [
    "run_id",
    "tool",
    "model",
    "task",
    "benchmark",
    "item_set",
    "samples",
    "items",
    "matched",
    "new",
    "ambiguous",
    "unmatched",
    "note",
]


def plans_frame(plans: list[Plan]) -> pd.DataFrame:
    """One row per planned run (the Import page's preview and the CLI's counts)."""
    return pd.DataFrame(
        [
            {
                "run_id": p.run_id,
                "tool": p.run.tool,
                "model": p.run.model,
                "task": p.run.task,
                "benchmark": p.benchmark,
                "item_set": p.item_set,
                "samples": p.samples,
                "items": p.items,
                "matched": p.matched,
                "new": p.new,
                "ambiguous": p.ambiguous,
                "unmatched": p.unmatched,
                "note": "; ".join(
                    x for x in (p.run.note, "already imported" if p.unchanged else None) if x
                ),
            }
            for p in plans
        ],
        columns=PLAN_COLUMNS,
    )


def import_upload(
    store: Store, data: bytes, filename: str, options: Options, *, write: bool
) -> tuple[list[Plan], int]:
    """An uploaded file (the Import page): kept under its own name in a temporary folder (the
    name tells the format: `<model>_eval_result.jsonl`, `samples_<task>_<date>.jsonl`...)
    while it is planned and, with `write`, imported."""
    import tempfile

    name = Path(filename).name or "upload"
    with tempfile.TemporaryDirectory(prefix="ehw-upload-") as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        plans = plan_file(store, path, options)
        for plan in plans:
            plan.path = Path(name)  # messages name the user's file, not the temporary copy
        if not write:
            return plans, 0
        for plan in plans:
            plan.path = path
        written = write_plans(store, plans)
        for plan in plans:
            plan.path = Path(name)
        return plans, written
