"""What an audit knows of a benchmark (its named labels, from the registry) and the SQL that reads
its judged labels; shared by every part of the audit package."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb

from core.registry import BENCHMARKS, Benchmark, Judged
from core.store import Store


class AuditError(ValueError):
    """Bad input for an audit (unknown runs, empty sample, invalid labels file); message says why."""


# ---------------------------------------------------------------------------------------------
# The audited benchmark's labels (from the registry)
# ---------------------------------------------------------------------------------------------

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class LabelSet:
    """The named labels of an audited benchmark: names in table order, letters, help texts.

    Names are interpolated into SQL (JSON keys, column names), so they must be identifiers.
    """

    benchmark: str
    names: tuple[str, ...]
    letters: dict[str, str] = field(default_factory=dict)
    help: dict[str, str] = field(default_factory=dict)


def is_auditable(bench: Benchmark) -> bool:
    """An LLM judge's verdicts with named labels: what people can re-label."""
    return isinstance(bench.scoring, Judged) and bench.scoring.labels is not None


def auditable_benchmarks() -> list[str]:
    return [name for name, bench in BENCHMARKS.items() if is_auditable(bench)]


def label_set(benchmark: str) -> LabelSet:
    """The labels of a benchmark, read from its registry entry (AuditError if not auditable)."""
    bench = BENCHMARKS.get(benchmark)
    if bench is None or not is_auditable(bench):
        raise AuditError(f"runs of benchmark {benchmark!r} cannot be audited (no judge labels)")
    letters = bench.label_letters()
    bad = [n for n in letters if not _NAME_RE.fullmatch(n)]
    if bad:
        raise AuditError(f"label names must be identifiers: {bad}")
    return LabelSet(benchmark, tuple(letters), letters, bench.label_help_texts())


def _benchmarks_of_runs(store: Store, runs: Sequence[str]) -> list[str]:
    if not runs:
        return []
    marks = ", ".join("?" for _ in runs)
    frame = store.df(
        f"SELECT DISTINCT benchmark FROM runs WHERE run_id IN ({marks}) ORDER BY 1", list(runs)
    )
    return [str(b) for b in frame["benchmark"]]


def label_set_of_run(store: Store, run_id: str) -> LabelSet:
    """The labels of the benchmark of one run (AuditError for an unknown run)."""
    found = _benchmarks_of_runs(store, [run_id])
    if not found:
        raise AuditError(f"unknown run {run_id!r}")
    return label_set(found[0])


def _benchmark_of_audit(store: Store, audit: str) -> str | None:
    found = store.df(
        "SELECT DISTINCT r.benchmark FROM audit_samples a JOIN runs r USING (run_id) "
        "WHERE a.audit = ? ORDER BY 1",
        [audit],
    )["benchmark"]
    return str(found.iloc[0]) if len(found) else None


def label_set_of_audit(store: Store, audit: str) -> LabelSet:
    """The labels of the benchmark an audit sampled (AuditError when it has no runs left)."""
    benchmark = _benchmark_of_audit(store, audit)
    if benchmark is None:
        raise AuditError(f"audit {audit!r} has no runs")
    return label_set(benchmark)


def _names_of_audit(store: Store, audit: str) -> tuple[str, ...]:
    """The audit's label names; () for an audit without items (nothing to label)."""
    benchmark = _benchmark_of_audit(store, audit)
    return label_set(benchmark).names if benchmark is not None else ()


def _judged(names: Sequence[str], alias: str = "v", source: str = "current_results") -> str:
    """The one place this module names the judgings it reads (a FROM/JOIN source with its alias):
    `source` (default each run's current judging: its latest finished one, core.store's
    `current_results`, the same records the results pages score) with the labels of
    `results.labels` parsed once into the struct `_labels` (read with `_label`). Audits and
    human labels name a response by (run, item, variant): a run asked K times (`--epochs`) is
    audited on its first answer, epoch 1."""
    struct = "{" + ", ".join(f'"{n}": "BOOLEAN"' for n in names) + "}"
    parsed = f"json_transform(labels, '{struct}')" if names else "NULL"
    return f"(SELECT *, {parsed} AS _labels FROM {source} WHERE epoch = 1) {alias}"


def _label(name: str, alias: str = "v") -> str:
    """A judged label as a BOOLEAN column of `_judged`."""
    return f'{alias}._labels."{name}"'


def _label_columns(names: Sequence[str], alias: str = "v") -> str:
    """`, v._labels."a" AS a, …` (empty without names), to append to a SELECT list."""
    return "".join(f', {_label(n, alias)} AS "{n}"' for n in names)


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any]) -> tuple | None:
    """First row of a query, fully consumed (DuckDB refuses new work on a half-read result)."""
    rows = con.execute(sql, list(params)).fetchall()
    return rows[0] if rows else None


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)
