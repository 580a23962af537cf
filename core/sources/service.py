"""Import results files as runs: match their samples to items, report, then write all or nothing.

`plan_file` reads a file (core.sources readers) and matches every run's samples to items, so
the counts (matched / new / ambiguous / unmatched) are known before anything is written;
`write_plans` writes one file's runs in one transaction through the result record's one
writer (core.engine.results.write_batch), streaming the samples in batches so a log of any
size passes in bounded memory.

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
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from core.engine.results import DEFAULT_JUDGING, ResultBatch, write_batch
from core.registry import BENCHMARKS
from core.sources import SourceError, SourceRun, read, text_hash
from core.store import ITEM_COLUMNS, Store, replace_item_set

BATCH = 2000  # samples per written batch (bounded memory; one transaction per file)
# DuckDB keeps a transaction's uncommitted rows in memory up to its memory_limit (default 80% of
# RAM): a file's import, one transaction, grew with the log (~900 MB for 100,000 samples). Under
# this limit DuckDB spills them to its temp directory instead (docs/performance.md).
IMPORT_MEMORY_LIMIT = "256MB"
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
    new_items: pd.DataFrame | None = None
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


# sample key -> (input, target, item payload, other texts to match on: a document's fields)
Keys = dict[str, tuple[str | None, str | None, dict, tuple[str, ...]]]


def _existing_run(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any] | None:
    row = con.execute("SELECT params FROM runs WHERE run_id = ?", [run_id]).fetchall()
    if not row:
        return None
    params = json.loads(row[0][0]) if row[0][0] else {}
    return params if isinstance(params, dict) else {}


def _items(con: duckdb.DuckDBPyConnection, item_set: str) -> pd.DataFrame:
    return con.execute("SELECT item_id, prompt FROM items WHERE item_set = ?", [item_set]).df()


def _keys(run: SourceRun) -> tuple[Keys, int]:
    """Every sample key with its first input and target (pass 1), and the sample count."""
    keys: Keys = {}
    n = 0
    for sample in (run.index or run.samples)():
        n += 1
        if sample.key not in keys:
            keys[sample.key] = (sample.input, sample.target, sample.meta, sample.alternatives)
    return keys, n


def _match_text(
    keys: Keys, items: pd.DataFrame, by_id: bool
) -> tuple[dict[str, str], int, int, int]:
    """(key -> item id, matched, ambiguous, unmatched) of keys against one item set."""
    ids = set(items["item_id"].astype(str))
    by_hash: dict[str, list[str]] = {}
    for item_id, prompt in zip(items["item_id"].astype(str), items["prompt"]):
        by_hash.setdefault(text_hash(prompt), []).append(item_id)
    out: dict[str, str] = {}
    ambiguous = unmatched = 0
    for key, (text, _, _, others) in keys.items():
        if by_id or (text is None and not others):
            if key in ids:
                out[key] = key
            else:
                unmatched += 1
            continue
        found: list[str] = []
        for candidate in (text, *others):
            if candidate is not None:
                found = by_hash.get(text_hash(candidate), [])
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


def _new_items(keys: Keys, name: str, benchmark: str) -> pd.DataFrame:
    rows = [
        {
            "item_set": name,
            "item_id": key,
            "benchmark": benchmark,
            "is_error": None,
            "prompt": text,
            "gold": target,
            "payload": json.dumps(meta, ensure_ascii=False, default=str) if meta else None,
        }
        for key, (text, target, meta, _) in keys.items()
    ]
    return pd.DataFrame(rows)


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
    keys, n = _keys(run)
    if not n:
        raise SourceError(f"{path}: no samples to import (model {run.model}, task {run.task})")
    benchmark = run.benchmark or options.benchmark
    plan = Plan(run, path, fmt, run_id, benchmark or "", "", "", samples=n, items=len(keys))
    if _same_run_there(con, plan):
        return plan
    if options.new_item_set:
        _plan_new_set(con, plan, keys, options.new_item_set, benchmark)
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
    con: duckdb.DuckDBPyConnection, plan: Plan, keys: Keys, name: str, benchmark: str | None
) -> None:
    """A new item set from the log's inputs and targets (the same set again is reused)."""
    path = plan.path
    if not benchmark:
        raise SourceError(
            f"{path}: --new-item-set needs --benchmark (one of {', '.join(BENCHMARKS)}): "
            "the benchmark whose analyses the new items take part in"
        )
    missing = sum(1 for text, _, _, _ in keys.values() if not (text or "").strip())
    if missing:
        raise SourceError(
            f"{path}: {missing} sample(s) have no input text, so no item can be built "
            "from them; nothing was written"
        )
    plan.benchmark, plan.item_set = benchmark, name
    stored = _items(con, name)
    if not len(stored):
        plan.new_items = _new_items(keys, name, benchmark)
        plan.new = len(keys)
        return
    owner = con.execute("SELECT benchmark FROM item_sets WHERE name = ?", [name]).fetchall()
    if not (owner and owner[0][0] == benchmark and set(stored["item_id"]) == set(keys)):
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
    """The run's rows in batches: its own judging's, then (same transaction) each other
    judging's (`judgings` collects their names)."""
    batch = ResultBatch()
    others: dict[str, ResultBatch] = {}
    seen: set[tuple[str, str, int]] = set()
    for sample in plan.run.samples():
        item_id = sample.key if plan.item_ids is None else plan.item_ids.get(sample.key)
        if item_id is None:
            continue
        variant = sample.variant or plan.variant
        unit = (item_id, variant, sample.epoch)
        if unit in seen:
            raise SourceError(
                f"{plan.path}: item {sample.key!r} (epoch {sample.epoch}) appears twice in run "
                f"{plan.run_id!r}; nothing was written"
            )
        seen.add(unit)
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


def _write_plan(con: duckdb.DuckDBPyConnection, plan: Plan) -> int:
    if _existing_run(con, plan.run_id) is not None:
        raise SourceError(
            f"{plan.path}: run {plan.run_id!r} appeared in the store meanwhile; nothing written"
        )
    if plan.new_items is not None:
        frame = plan.new_items.reindex(columns=["item_set", *ITEM_COLUMNS])
        replace_item_set(
            con,
            plan.item_set,
            plan.benchmark,
            frame,
            origin=f"{plan.run.tool}: {plan.path.name}",
            info={"built_from": plan.run.provenance},
        )
    run = plan.run
    epochs = 0
    n = 0
    judgings: set[str] = set()
    for batch in _batches(plan, judgings):
        write_batch(con, batch)
        if batch.judging == DEFAULT_JUDGING:
            n += len(batch)
        epochs = max([epochs, *(r[-1] for r in batch.responses.rows)])
    for name in sorted(judgings):
        # another scorer of the same answers: a finished judging of the run, older than the
        # run's own so the run's first scorer stays the one results show by default
        con.execute(
            "INSERT INTO judgings (run_id, judging, kind, template_id, params, status, "
            "n_planned, created_at, updated_at) VALUES (?, ?, 'parser', ?, ?, 'done', ?, "
            "current_timestamp - INTERVAL 1 SECOND, current_timestamp - INTERVAL 1 SECOND)",
            [plan.run_id, name, f"{run.tool}:{name}", json.dumps({"source": run.tool}), n],
        )
    params = {
        **run.params,
        "source": {**run.provenance, "task": run.task, "imported_at": _now()},
    }
    if epochs > 1:
        params["epochs"] = epochs
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
            n,
        ],
    )
    return n


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def write_plans(store: Store, plans: list[Plan]) -> int:
    """Write one file's planned runs in one transaction (all or nothing); returns responses
    written. Plans with problems are refused whole."""
    problems = [p for plan in plans for p in plan.problems]
    if problems:
        raise SourceError("\n".join(problems))
    todo = [p for p in plans if not p.unchanged]
    if not todo:
        return 0

    def write(con: duckdb.DuckDBPyConnection) -> int:
        return sum(_write_plan(con, plan) for plan in todo)

    with bounded_memory(store):
        written: int = store.transaction(write)
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
