"""Drawing an audit: the candidate runs, a seeded sample stratified by run and category, and the
stored audit (its sample in queue order and what it was drawn from)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from core.services.audit.labelsets import (
    AuditError,
    _benchmarks_of_runs,
    _judged,
    _label_columns,
    _names_of_audit,
    _one,
    auditable_benchmarks,
    label_set,
)
from core.store import Store, upsert_rows

DEFAULT_FRACTION = 0.10
CONTROL_CATEGORY = "(control)"
AUDIT_META_PREFIX = "audit:"


# ---------------------------------------------------------------------------------------------
# Sampling (pure part + storage)
# ---------------------------------------------------------------------------------------------


def stratum_sizes(counts: Mapping[Any, int], fraction: float) -> dict[Any, int]:
    """round(fraction × N) per stratum (half up), at least 1, at most N."""
    if not 0 < fraction <= 1:
        raise AuditError(f"sample fraction must be in (0, 1], got {fraction}")
    return {
        key: min(n, max(1, int(math.floor(fraction * n + 0.5))))
        for key, n in counts.items()
        if n > 0
    }


def stratified_sample(
    pool: pd.DataFrame,
    fraction: float = DEFAULT_FRACTION,
    seed: int = 0,
    strata: Sequence[str] = ("run_id", "category"),
) -> pd.DataFrame:
    """A seeded sample of `pool` rows, stratified; returned in queue order (`position` 0, 1, …).

    Strata are run × category: two runs of one model (say proactive and passive) each get their
    share, where model × category let one run take most of a shared stratum.

    Deterministic for a given pool content, fraction and seed, whatever the pool's row order:
    the pool is sorted by (run_id, item_id, variant) first. The queue is shuffled across strata
    so an annotator does not see all of one run in a row.
    """
    if pool.empty:
        return pool.assign(position=pd.Series(dtype="int64"))
    rng = np.random.default_rng(seed)
    ordered = pool.sort_values(["run_id", "item_id", "variant"]).reset_index(drop=True)
    groups = ordered.groupby(list(strata), sort=True, dropna=False)
    sizes = stratum_sizes({key: len(idx) for key, idx in groups.indices.items()}, fraction)
    chosen: list[int] = []
    for key, idx in sorted(groups.indices.items(), key=lambda kv: str(kv[0])):
        picked = rng.choice(np.asarray(idx), size=sizes[key], replace=False)
        chosen.extend(int(i) for i in picked)
    order = rng.permutation(len(chosen))
    sample = ordered.iloc[[chosen[i] for i in order]].reset_index(drop=True)
    sample["position"] = np.arange(len(sample), dtype="int64")
    return sample


def judgings_of_audit(store: Store, runs: Sequence[str]) -> pd.DataFrame:
    """Per run of an audit: the judging whose labels people are compared with (run, judging,
    judge model, judge template)."""
    if not runs:
        return pd.DataFrame(columns=["run_id", "judging", "judge_model", "template_id"])
    marks = ", ".join("?" for _ in runs)
    return store.df(
        "SELECT a.run_id, a.judging, a.judge_model, a.template_id FROM all_judgings a "
        "JOIN current_judgings c USING (run_id, judging) "
        f"WHERE a.run_id IN ({marks}) ORDER BY a.run_id",
        list(runs),
    )


def auditable_runs(store: Store, include_playground: bool = False) -> pd.DataFrame:
    """Runs of auditable benchmarks (`is_auditable`) with at least one judged response (the
    audit's candidates), with their benchmark."""
    kind_filter = "" if include_playground else "AND coalesce(r.kind, 'eval') <> 'playground'"
    names = auditable_benchmarks()
    marks = ", ".join("?" for _ in names) or "NULL"
    return store.df(
        f"""
        SELECT r.run_id, r.model, r.setting, r.mode, r.judge_model, r.item_set,
               coalesce(r.weak_model, false) AS weak_model, r.kind, r.created_at,
               count(*) AS n_verdicts, r.benchmark
        FROM runs r JOIN current_results v ON v.run_id = r.run_id AND v.status = 'ok'
        WHERE r.benchmark IN ({marks}) {kind_filter}
        GROUP BY ALL ORDER BY r.created_at DESC, r.run_id
    """,
        names,
    )


def verdict_pool(store: Store, runs: Sequence[str], level: str = "primary") -> pd.DataFrame:
    """Judged responses of `runs` with model and category (controls are category '(control)').

    Categories are the generic `items` columns (primary/secondary category, is_error)."""
    if not runs:
        return pd.DataFrame(columns=["run_id", "item_id", "variant", "model", "category"])
    column = "primary_category" if level == "primary" else "secondary_category"
    marks = ", ".join("?" for _ in runs)
    return store.df(
        f"""
        SELECT v.run_id, v.item_id, v.variant, coalesce(r.model, r.endpoint, r.run_id) AS model,
               CASE WHEN i.is_error = false THEN '{CONTROL_CATEGORY}'
                    ELSE coalesce(i.{column}, '(unknown)') END AS category
        FROM current_results v
        JOIN runs r ON r.run_id = v.run_id
        JOIN responses s ON s.run_id = v.run_id AND s.item_id = v.item_id
             AND s.variant = v.variant AND s.epoch = v.epoch AND s.status = 'ok'
        LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id
        WHERE v.status = 'ok' AND v.epoch = 1 AND v.run_id IN ({marks})
    """,
        list(runs),
    )


@dataclass
class AuditInfo:
    """What an audit was drawn from (kept in table `meta` as JSON under 'audit:<name>')."""

    name: str
    runs: list[str]
    fraction: float
    seed: int
    level: str = "primary"
    n_pool: int = 0
    n_sampled: int = 0
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())

    def describe(self) -> str:
        """One line a person can tell audits apart by: size, fraction, seed, strata, runs."""
        fraction = "" if math.isnan(self.fraction) else f"{self.fraction:.0%} of "
        return (
            f"{self.n_sampled} verdicts ({fraction}{self.n_pool}, seed {self.seed}, strata run × "
            f"{self.level} category) from runs {', '.join(self.runs)}"
        )


# The Judge audit page keeps its choice in the URL (?audit=…): this key stands for "draw a new
# audit" there, so no audit may carry it as its name.
NEW_AUDIT_KEY = "new"


class AuditExists(AuditError):
    """An audit of that name was drawn already (create_audit with exist_ok=False)."""

    def __init__(self, info: AuditInfo) -> None:
        self.info = info
        super().__init__(
            f"an audit named {info.name!r} already exists ({info.describe()}); nothing was "
            "drawn. Choose another name for a new sample, or open that audit."
        )


def create_audit(
    store: Store,
    name: str,
    runs: Sequence[str],
    fraction: float = DEFAULT_FRACTION,
    seed: int = 0,
    level: str = "primary",
    *,
    exist_ok: bool = True,
) -> AuditInfo:
    """Draw and store a sample; an existing audit of that name is returned unchanged, or with
    exist_ok=False refused (AuditExists), so a form never opens an old audit as if drawn anew.

    Re-drawing would reshuffle the queue under annotators' feet, so a name is fixed once drawn;
    pick a new name for a new sample.
    """
    name = name.strip()
    if not name:
        raise AuditError("an audit needs a name")
    if name == NEW_AUDIT_KEY:
        raise AuditError(f"{name!r} is reserved (the page's key for a new audit): choose another")
    existing = get_audit(store, name)
    if existing is not None:
        if not exist_ok:
            raise AuditExists(existing)
        return existing
    if not runs:
        raise AuditError("choose at least one run to sample verdicts from")
    known = set(store.df("SELECT run_id FROM runs")["run_id"])
    missing = [r for r in runs if r not in known]
    if missing:
        raise AuditError(f"unknown run(s): {', '.join(missing)}")
    benchmarks = _benchmarks_of_runs(store, runs)
    if len(benchmarks) != 1:
        raise AuditError(
            f"an audit samples the runs of one benchmark; these are of {', '.join(benchmarks)}"
        )
    label_set(benchmarks[0])  # refuses a benchmark without judge labels
    pool = verdict_pool(store, runs, level)
    if pool.empty:
        raise AuditError("the chosen runs have no judged responses to audit")
    sample = stratified_sample(pool, fraction, seed)
    info = AuditInfo(
        name=name,
        runs=sorted(runs),
        fraction=float(fraction),
        seed=int(seed),
        level=level,
        n_pool=len(pool),
        n_sampled=len(sample),
    )
    rows = sample[["run_id", "item_id", "variant", "position"]].assign(audit=name)

    def write(con: duckdb.DuckDBPyConnection) -> bool:
        if (_one(con, "SELECT count(*) FROM audit_samples WHERE audit = ?", [name]) or (0,))[0]:
            return False  # another session drew it first: keep theirs
        con.register("_sample", rows)
        con.execute(
            "INSERT INTO audit_samples (audit, position, run_id, item_id, variant) "
            "SELECT audit, position, run_id, item_id, variant FROM _sample"
        )
        con.unregister("_sample")
        upsert_rows(
            con,
            "meta",
            ("key", "value"),
            ("key",),
            [[AUDIT_META_PREFIX + name, json.dumps(info.__dict__)]],
        )
        return True

    drawn = bool(store.transaction(write))
    stored = get_audit(store, name) or info
    if not drawn and not exist_ok:
        raise AuditExists(stored)
    return stored


def get_audit(store: Store, name: str) -> AuditInfo | None:
    n = store.scalar("SELECT count(*) FROM audit_samples WHERE audit = ?", [name])
    if not n:
        return None
    raw = store.scalar("SELECT value FROM meta WHERE key = ?", [AUDIT_META_PREFIX + name])
    if raw:
        data = json.loads(raw)
        return AuditInfo(**{k: v for k, v in data.items() if k in AuditInfo.__dataclass_fields__})
    runs = store.df("SELECT DISTINCT run_id FROM audit_samples WHERE audit = ?", [name])
    return AuditInfo(
        name=name,
        runs=sorted(runs["run_id"]),
        fraction=float("nan"),
        seed=-1,
        n_sampled=int(n),
        created_at="",
    )


def list_audits(store: Store) -> pd.DataFrame:
    """Every audit with its size, runs, creation time and number of annotators."""
    return store.df("""
        SELECT a.audit, count(*) AS n_items, count(DISTINCT a.run_id) AS n_runs,
               min(a.created_at) AS created_at,
               (SELECT count(DISTINCT h.annotator) FROM human_labels h
                JOIN audit_samples b ON b.run_id = h.run_id AND b.item_id = h.item_id
                     AND b.variant = h.variant AND b.audit = a.audit) AS n_annotators
        FROM audit_samples a GROUP BY a.audit ORDER BY min(a.created_at) DESC, a.audit
    """)


def audit_queue(store: Store, audit: str) -> pd.DataFrame:
    """The sampled responses in queue order with everything an annotator needs to see: the
    item, the response, the judge's labels and its per-label rationales (`rationales`, the
    judgings' `metadata.rationales` {label: why}, when a benchmark's judge records them)."""
    names = _names_of_audit(store, audit)
    return store.df(
        f"""
        SELECT a.position, a.run_id, a.item_id, a.variant,
               coalesce(r.model, r.endpoint) AS model, r.setting, r.mode,
               coalesce(r.weak_model, false) AS weak_model, r.judge_model,
               i.is_error, i.primary_category, i.secondary_category, i.prompt, i.explanation,
               i.gold, s.response, s.messages{_label_columns(names)},
               v.metadata->'rationales' AS rationales
        FROM audit_samples a
        JOIN runs r ON r.run_id = a.run_id
        LEFT JOIN items i ON i.item_set = r.item_set AND i.item_id = a.item_id
        LEFT JOIN responses s ON s.run_id = a.run_id AND s.item_id = a.item_id
             AND s.variant = a.variant AND s.epoch = 1
        LEFT JOIN {_judged(names)} ON v.run_id = a.run_id AND v.item_id = a.item_id
             AND v.variant = a.variant
        WHERE a.audit = ? ORDER BY a.position
    """,
        [audit],
    )
