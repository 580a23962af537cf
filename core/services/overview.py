"""Data for the Overview page, over every benchmark: each function takes a Store first.

Published tables and their sources come from the registry (`Benchmark.paper.tables`,
`Benchmark.paper.sources`); nothing here names a benchmark.
"""

from __future__ import annotations

import pandas as pd

from core.registry import BENCHMARKS
from core.store import Store

CORE_TABLES = (
    "item_sets",
    "items",
    "runs",
    "responses",
    "results",
    "human_labels",
    "audit_samples",
    "calls",
)
SOURCE_COLUMNS = ["benchmark", "source", "title", "evaluator", "models", "settings", "cells"]


def counted_tables() -> list[str]:
    """The tables the Overview counts: the shared ones, then every benchmark's published ones."""
    return [*CORE_TABLES, *(t for b in BENCHMARKS.values() for t, _ in b.paper.tables)]


def table_counts(store: Store) -> pd.DataFrame:
    """Rows per table of the results file."""
    union = " UNION ALL ".join(
        f"SELECT '{t}' AS table_name, count(*) AS rows FROM {t}" for t in counted_tables()
    )
    return store.df(union)


def published_sources(store: Store) -> pd.DataFrame:
    """One row per published table of every benchmark (its `published_sources`)."""
    frames = []
    for bench in BENCHMARKS.values():
        if bench.paper.sources:
            frame = bench.paper.sources()(store)
            frame["benchmark"] = bench.name
            frames.append(frame)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if out.empty:
        return pd.DataFrame(columns=SOURCE_COLUMNS)
    out["_n"] = out["source"].str.extract(r"T(\d+)")[0].astype(float)
    out = out.sort_values(["benchmark", "_n", "source"], ascending=[False, True, True])
    return out[SOURCE_COLUMNS]


def item_sets(store: Store) -> pd.DataFrame:
    return store.df("""
        SELECT s.name AS item_set, s.benchmark, s.origin, count(i.item_id) AS items,
               count(*) FILTER (WHERE i.is_error) AS erroneous,
               count(*) FILTER (WHERE NOT i.is_error) AS controls, s.created_at
        FROM item_sets s LEFT JOIN items i ON i.item_set = s.name
        GROUP BY ALL ORDER BY s.benchmark, s.name""")


def runs_overview(store: Store) -> pd.DataFrame:
    """All runs (every benchmark) with response counts and result counts (current judging);
    `source` names the tool that made an imported run (core.sources), else 'workbench'."""
    return store.df("""
        WITH resp AS (SELECT run_id, count(*) AS responses,
                             count(*) FILTER (WHERE status <> 'ok') AS failed
                      FROM responses GROUP BY run_id),
             ver AS (SELECT run_id, count(*) AS verdicts FROM current_results GROUP BY run_id)
        SELECT r.run_id, r.benchmark, r.kind, r.model, r.setting, r.mode, r.item_set, r.status,
               coalesce(json_extract_string(r.params, '$.source.tool'), 'workbench') AS source,
               coalesce(resp.responses, 0) AS responses, coalesce(resp.failed, 0) AS failed,
               coalesce(ver.verdicts, 0) AS verdicts, coalesce(r.weak_model, false) AS weak_model,
               r.created_at
        FROM runs r LEFT JOIN resp USING (run_id) LEFT JOIN ver USING (run_id)
        ORDER BY r.created_at DESC, r.run_id""")


def published_cells(store: Store) -> int:
    """Published values of every benchmark (the cells of its published sources)."""
    sources = published_sources(store)
    return int(sources["cells"].sum()) if len(sources) else 0
