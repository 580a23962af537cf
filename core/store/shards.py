"""The shard ledger: one row per shard of a run split over machines (`run ... --shard K/N`).

Why a table of its own, made when first needed (not by a migration): a shard's host, process,
start, finish and done/planned are what `runs RUN --shards` and the Runs page show while the
shards run, and what tells that the run is done (every shard is). It is created with CREATE
TABLE IF NOT EXISTS by the first shard (or reader) that needs it, on a file with its primary key,
on a lake without (the lake's write guard keeps the key, core/store/lake.py).
"""

from __future__ import annotations

import duckdb

SHARD_TABLE = "run_shards"
_COLUMNS = """
    run_id VARCHAR NOT NULL,
    shard INTEGER NOT NULL,        -- K of K/N (1..N)
    shards INTEGER NOT NULL,       -- N
    host VARCHAR,                  -- the machine that ran it last
    pid INTEGER,                   -- its process there
    status VARCHAR,                -- running | done | failed | cancelled | interrupted
    n_planned INTEGER,             -- the shard's units
    n_done INTEGER,                -- of them done (at its last flush)
    started_at TIMESTAMP DEFAULT current_timestamp,
    finished_at TIMESTAMP,
    updated_at TIMESTAMP DEFAULT current_timestamp"""


def shard_table_sql(lake: bool) -> str:
    key = "" if lake else ",\n    PRIMARY KEY (run_id, shard)"
    return f"CREATE TABLE IF NOT EXISTS {SHARD_TABLE} ({_COLUMNS}{key}\n)"


def has_shard_table(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(
        con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
            f"AND schema_name = 'main' AND table_name = '{SHARD_TABLE}'"
        ).fetchall()[0][0]
    )


def ensure_shard_table(con: duckdb.DuckDBPyConnection, lake: bool = False) -> None:
    """Make the ledger if missing, in the caller's transaction."""
    if not has_shard_table(con):
        con.execute(shard_table_sql(lake))
