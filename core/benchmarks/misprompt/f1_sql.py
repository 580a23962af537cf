"""Mis-prompt F1 in the database: pattern counts and label sums by SQL (the only pass over
the verdict rows), the per-run count cache in run_counts, and the diagnostics beside the F1."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence

import duckdb
import pandas as pd

from core.benchmarks.misprompt.f1 import COLUMNS, LABELS, _f1_sql
from core.store import JUDGING_NAME_RE, DatabaseError, Store, _write_lock

# ----------------------------------------------------------------------------------------------
# Database: pattern counts by SQL (the only pass over the verdict rows)
# ----------------------------------------------------------------------------------------------

# the run_counts status of a run's cached intervals (core.benchmarks.misprompt.intervals): never
# counts
_INTERVALS = "intervals"

# Mis-prompt evaluation runs; playground exchanges (runs.kind = 'playground') are one-item demos
# and never enter the F1 tables.
_EVAL_RUNS = "r.benchmark = 'misprompt' AND coalesce(r.kind, 'eval') = 'eval'"
_LABEL_COLS = ", ".join(f"v.{label}" for label in LABELS)
_INCONSISTENT_SQL = (
    "(coalesce(v.identification_accurate, false) AND NOT coalesce("
    "v.identification_attempt, false)) OR (coalesce(v.correction_accurate, false) "
    "AND NOT coalesce(v.correction_attempt, false))"
)


def _run_filter(run_ids: Sequence[str] | None, alias: str = "r") -> tuple[str, list]:
    if run_ids is None:
        return "", []
    ids = list(run_ids)
    if not ids:
        return " AND false", []
    return f" AND {alias}.run_id IN ({', '.join('?' for _ in ids)})", ids


def judging_literal(judging: str) -> str:
    """A judging name as a SQL string literal; names are checked (the run-name alphabet)."""
    if not JUDGING_NAME_RE.match(judging):
        raise ValueError(f"judging name {judging!r}: use letters, digits and . _ - : + = @")
    return "'" + judging + "'"


def _verdict_source(evaluator: str, judging: str | None = None) -> str:
    """FROM clause yielding one row per scored response: judge verdicts (each run's current
    judging, or the judging named) or majority human labels."""
    if evaluator == "judge":
        if judging is None:
            return "misprompt_current_verdicts v"
        return f"(SELECT * FROM misprompt_verdicts WHERE judging = {judging_literal(judging)}) v"
    pivots = ", ".join(
        f"bool_or(CASE WHEN label = '{label}' THEN share > 0.5 END) AS {label}" for label in LABELS
    )
    return f"""(
        SELECT run_id, item_id, variant, 'ok' AS status, {pivots}
        FROM (SELECT run_id, item_id, variant, label,
                     avg(CASE WHEN value THEN 1.0 ELSE 0.0 END) AS share
              FROM human_labels GROUP BY ALL)
        GROUP BY ALL) v"""


# The bootstrap's cluster of a verdict: the item's `group` (items of one source); for a run
# asked K times (`run --epochs K`) an item without a group is a cluster of its own, so its K
# answers are resampled together (issue 29: n items, not n × K independent answers).
_CLUSTER_SQL = """coalesce(nullif(json_extract_string(i.payload, '$.group'), ''),
    CASE WHEN v.run_id IN (SELECT run_id FROM results WHERE epoch > 1)
         THEN 'item:' || v.item_id END)"""


def _patterns_sql(evaluator: str, run_where: str, judging: str | None = None) -> str:
    """Pattern counts of one evaluator. Verdicts are grouped with their item (joined on item_id
    alone, item_set carried along) before the run is attached: on a million rows this is ~2×
    faster in DuckDB than joining runs first on the two-column key."""
    return f"""
        SELECT r.run_id AS source, coalesce(r.model, '') AS model,
               coalesce(r.setting, j.variant) AS setting, '{evaluator}' AS evaluator,
               j.primary_category, j.secondary_category, j.is_error,
               {", ".join(f"j.{label}" for label in LABELS)}, j.cluster, j.n
        FROM (SELECT v.run_id, v.variant, i.item_set, i.primary_category, i.secondary_category,
                     coalesce(i.is_error, true) AS is_error, {_LABEL_COLS},
                     {_CLUSTER_SQL} AS cluster, count(*)::BIGINT AS n
              FROM {_verdict_source(evaluator, judging)}
              JOIN items i ON i.item_id = v.item_id
              WHERE v.status = 'ok' AND i.benchmark = 'misprompt'{run_where}
              GROUP BY ALL) j
        JOIN runs r ON r.run_id = j.run_id AND r.item_set = j.item_set
        WHERE {_EVAL_RUNS}
    """


def patterns(
    store: Store,
    run_ids: Sequence[str] | None = None,
    evaluators: Sequence[str] = ("judge", "human"),
    judging: str | None = None,
) -> pd.DataFrame:
    """Pattern counts of judge verdicts (each run's current judging, or `judging`) and majority
    human labels in one statement."""
    where, params = _run_filter(run_ids, alias="v")
    sql = " UNION ALL ".join(_patterns_sql(e, where, judging) for e in evaluators) + " ORDER BY ALL"
    frame = store.df(sql, params * len(evaluators))
    for label in LABELS:
        frame[label] = frame[label].astype("boolean")
    return frame


def _sums_sql(
    evaluator: str, run_where: str, with_status: bool = False, judging: str | None = None
) -> str:
    """Per run × item category × is_error: label-true and label-known counts, one pass.

    Items are first mapped to a small integer code per (item set, categories, is_error), so the
    million-row GROUP BY hashes (run_id, code) instead of six strings (~40% less CPU), and
    `sum(label::INT)` counts the trues. With `with_status`, failed verdicts form their own
    groups (column `status`) so one pass also counts them; otherwise only `ok` verdicts count.
    """
    cols = ", ".join(
        [f"coalesce(sum(v.{lb}::INT), 0)::BIGINT AS pos_{lb}" for lb in LABELS]
        + [f"count(v.{lb})::BIGINT AS known_{lb}" for lb in LABELS]
        + [
            "count(*)::BIGINT AS n",
            f"coalesce(sum(({_INCONSISTENT_SQL})::INT), 0)::BIGINT AS n_inconsistent",
        ]
    )
    out_cols = ", ".join(
        [f"g.pos_{lb}" for lb in LABELS]
        + [f"g.known_{lb}" for lb in LABELS]
        + ["g.n", "g.n_inconsistent"]
        + (["CASE WHEN g.ok THEN 'ok' ELSE 'failed' END AS status"] if with_status else [])
    )
    ok_key = ", v.status = 'ok' AS ok" if with_status else ""
    status_where = "" if with_status else " AND v.status = 'ok'"
    return f"""
        SELECT * FROM (
        WITH c AS (
            SELECT *, row_number() OVER () AS code
            FROM (SELECT DISTINCT item_set, primary_category, secondary_category,
                         coalesce(is_error, true) AS is_error
                  FROM items WHERE benchmark = 'misprompt')),
        ii AS (
            SELECT i.item_id, c.code FROM items i
            JOIN c ON c.item_set = i.item_set
                  AND c.primary_category IS NOT DISTINCT FROM i.primary_category
                  AND c.secondary_category IS NOT DISTINCT FROM i.secondary_category
                  AND c.is_error = coalesce(i.is_error, true)
            WHERE i.benchmark = 'misprompt'),
        g AS (
            SELECT v.run_id, ii.code{ok_key}, {cols}
            FROM {_verdict_source(evaluator, judging)}
            JOIN ii ON ii.item_id = v.item_id
            WHERE true{status_where}{run_where}
            GROUP BY ALL)
        SELECT r.run_id AS source, coalesce(r.model, '') AS model,
               r.setting AS setting, '{evaluator}' AS evaluator,
               c.primary_category, c.secondary_category, c.is_error, {out_cols}
        FROM g JOIN c USING (code)
        JOIN runs r ON r.run_id = g.run_id AND r.item_set = c.item_set
        WHERE {_EVAL_RUNS})
    """


def f1_in_database(
    store: Store,
    run_ids: Sequence[str] | None = None,
    evaluators: Sequence[str] = ("judge", "human"),
    judging: str | None = None,
) -> pd.DataFrame:
    """`f1_from_sums(sums(store, run_ids))` as one statement: the verdicts never leave DuckDB."""
    where, params = _run_filter(run_ids, alias="v")
    sums_sql = " UNION ALL ".join(_sums_sql(e, where, judging=judging) for e in evaluators)
    frame = store.df(_f1_sql(sums_sql), params * len(evaluators))
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS + ["tp", "fn", "fp", "n_error", "n_control"])
    return frame


# Run statuses after which a run's verdicts no longer change (core/engine/runner.py writes done,
# failed, cancelled; 'interrupted' is what core/services/jobs.py shows for a dead 'running' run and is
# listed in case it is ever stored). Anything else (running, pending) is always counted live.
FINAL_STATUSES: tuple[str, ...] = ("done", "failed", "cancelled", "interrupted")

_COUNT_COLS: list[str] = (
    [f"pos_{lb}" for lb in LABELS] + [f"known_{lb}" for lb in LABELS] + ["n_inconsistent"]
)
# the count columns in _sums_sql's order (the cached rows are UNIONed with live ones by position)
_SUM_COLS: list[str] = [*_COUNT_COLS[:-1], "n", "n_inconsistent", "status"]
# run_counts keeps the label counts of a group as one JSON object (generic table, named values)
_COUNTS_JSON = "json_object(" + ", ".join(f"'{c}', s.{c}" for c in _COUNT_COLS) + ")"
_COUNTS_STRUCT = "{" + ", ".join(f'"{c}": "BIGINT"' for c in _COUNT_COLS) + "}"
_CACHE_KEYS: list[str] = [
    "source",
    "model",
    "setting",
    "evaluator",
    "primary_category",
    "secondary_category",
    "is_error",
]


def _fingerprint_sql(run_where: str) -> str:
    """Per Mis-prompt eval run: its fingerprint (status, updated_at and the item set's
    created_at as text — the runner bumps updated_at on every verdict write, a resume and the
    finish; re-importing an item set re-creates its row) and whether its status is final."""
    finals = ", ".join(f"'{s}'" for s in FINAL_STATUSES)
    return f"""
        SELECT r.run_id, coalesce(r.status, '') || '|' || coalesce(CAST(r.updated_at AS VARCHAR), '')
                   || '|' || coalesce(CAST(s.created_at AS VARCHAR), '')
                   || '|' || coalesce(cj.judging, '') || '|' || coalesce(j.status, '')
                   || '|' || coalesce(CAST(j.updated_at AS VARCHAR), '') AS fingerprint,
               coalesce(r.status IN ({finals}), false)
                   AND coalesce(j.status IN ({finals}), true) AS final
        FROM runs r LEFT JOIN item_sets s ON s.name = r.item_set
        LEFT JOIN current_judgings cj ON cj.run_id = r.run_id
        LEFT JOIN judgings j ON j.run_id = cj.run_id AND j.judging = cj.judging
        WHERE {_EVAL_RUNS}{run_where}
    """


def _write_if_free(
    store: Store,
    write: Callable[[duckdb.DuckDBPyConnection], None],
    con: duckdb.DuckDBPyConnection | None = None,
) -> bool:
    """write(con) in one transaction (on `con`, or a connection of its own), only if this
    process's writer lock for the store is free right now. Opportunistic: False instead of
    raising when the write cannot happen (another writer in this process, a lock, a conflict,
    a read-only file), since a reader must never fail because it could not cache."""
    lock = _write_lock(store.path)  # the in-process writer lock Store.transaction takes
    if not lock.acquire(blocking=False):
        return False
    try:
        with contextlib.nullcontext(con) if con is not None else store.connect() as c:
            c.execute("BEGIN TRANSACTION")
            try:
                write(c)
                c.execute("COMMIT")
            except Exception:
                try:
                    c.execute("ROLLBACK")
                except duckdb.Error:
                    pass
                raise
        return True
    except (duckdb.Error, DatabaseError):
        return False
    finally:
        lock.release()


def _cache_counts(store: Store, con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> bool:
    """Store the judge counts of finished `run_ids` (rows of temp table _mp_sums, fingerprints
    in _mp_fp) in run_counts: one short transaction, only for runs whose fingerprint is still
    the one read before counting. Opportunistic (`_write_if_free`): False when it cannot write."""
    if not run_ids:
        return True
    marks = ", ".join("?" for _ in run_ids)
    keys = ", ".join(_CACHE_KEYS)

    def write(con: duckdb.DuckDBPyConnection) -> None:
        # still unchanged since counted (a writer in between would have bumped updated_at)
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE _mp_fresh AS
            SELECT f.run_id, f.fingerprint FROM _mp_fp f
            JOIN ({_fingerprint_sql(f" AND r.run_id IN ({marks})")}) now
              ON now.run_id = f.run_id AND now.fingerprint = f.fingerprint AND now.final
        """,
            run_ids,
        )
        # replaced rows of these runs (not their kept intervals: cell_intervals replaces
        # those), and rows of runs deleted since
        con.execute(
            "DELETE FROM run_counts WHERE (source IN (SELECT run_id FROM _mp_fresh) "
            f"AND coalesce(status, '') <> '{_INTERVALS}') "
            "OR source NOT IN (SELECT run_id FROM runs)"
        )
        con.execute(f"""
            INSERT INTO run_counts ({keys}, counts, n, status, fingerprint, computed_at)
            SELECT {", ".join("s." + k for k in _CACHE_KEYS)},
                   {_COUNTS_JSON}, s.n, s.status, f.fingerprint, current_timestamp
            FROM _mp_sums s JOIN _mp_fresh f ON f.run_id = s.source
            WHERE s.evaluator = 'judge'
            UNION ALL  -- the marker: this run is cached (even with no verdicts at all)
            SELECT f.run_id, NULL, NULL, 'judge', NULL, NULL, NULL, NULL, 0, NULL,
                   f.fingerprint, current_timestamp
            FROM _mp_fresh f
        """)
        con.execute("DROP TABLE _mp_fresh")  # (a rollback drops it too)

    return _write_if_free(store, write, con)


# F1 rows of warm loads, by database and the cache look-up's state (each run's fingerprint, model
# and setting): when every run is served from run_counts and there are no human labels, the
# F1 table is a function of that state alone. The F1 statement costs 35-80 ms, mostly DuckDB
# planning it (measured), the rest of a warm load ~40 ms: a warm page load skips it. Any write
# to a run changes its fingerprint, so a stale entry is never looked up again.
_F1_MEMO: dict[tuple, pd.DataFrame] = {}
_F1_MEMO_SIZE = 8


def f1_and_diagnostics(
    store: Store,
    run_ids: Sequence[str] | None = None,
    timings: dict[str, float] | None = None,
    use_cache: bool = True,
    judging: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(F1 rows, run diagnostics) from ONE pass over the verdicts, in one connection.

    The per-category counts (ok and failed verdicts apart) go to a temporary table; the F1
    table and the per-run counts (scored, failed, inconsistent, erroneous, control) are small
    queries on it. What the Mis-prompt page loads.

    With `use_cache`, the judge counts of finished runs whose fingerprint (status, updated_at,
    item set) is unchanged come from run_counts instead of the verdicts; only the other runs
    are counted, and the finished ones among them are written to run_counts for next time.
    Human-label counts are always counted live (few rows). The result is identical either way.
    The cache holds each run's current judging: naming another `judging` counts live.
    """
    if judging is not None:
        use_cache = False
    where, params = _run_filter(run_ids, alias="v")
    r_where, r_params = _run_filter(run_ids)
    diag_sql = _diagnostics_sql(
        """SELECT source AS run_id,
                  sum(n) FILTER (WHERE status = 'ok') AS verdicts_ok,
                  sum(n) FILTER (WHERE status <> 'ok') AS verdicts_failed,
                  sum(n_inconsistent) FILTER (WHERE status = 'ok') AS inconsistent,
                  sum(n) FILTER (WHERE status = 'ok' AND is_error) AS n_error,
                  sum(n) FILTER (WHERE status = 'ok' AND NOT is_error) AS n_control
           FROM _mp_sums WHERE evaluator = 'judge' GROUP BY source""",
        r_where,
        extra=("n_error", "n_control"),
    )
    clock = {"start": time.perf_counter()}

    def lap(name: str) -> None:
        now = time.perf_counter()
        if timings is not None:
            timings[name] = timings.get(name, 0.0) + (now - clock["start"]) * 1000
        clock["start"] = now

    human_sql = _sums_sql("human", where, with_status=True)
    memo_key: tuple | None = None
    with store.connect() as con:
        lap("open connection")
        if not use_cache:
            union = " UNION ALL ".join(
                _sums_sql(e, where, with_status=True, judging=judging) for e in ("judge", "human")
            )
            con.execute(f"CREATE OR REPLACE TEMP TABLE _mp_sums AS {union}", params * 2)
            lap("counts pass over verdicts")
        else:
            # Fingerprints first: a write after this point changes a fingerprint, so counts
            # taken below are never stored under a fingerprint newer than they are.
            con.execute(
                f"""
                CREATE OR REPLACE TEMP TABLE _mp_fp AS
                SELECT f.*, f.final AND EXISTS (
                           SELECT 1 FROM run_counts c WHERE c.source = f.run_id
                           AND c.status IS NULL AND c.fingerprint = f.fingerprint) AS hit
                FROM ({_fingerprint_sql(r_where)}) f""",
                r_params,
            )
            state = con.execute(
                "SELECT f.run_id, f.final, f.hit, f.fingerprint, r.model, r.setting "
                "FROM _mp_fp f JOIN runs r USING (run_id) ORDER BY f.run_id"
            ).fetchall()
            todo = [run for run, _final, hit, *_ in state if not hit]
            to_cache = [run for run, final, hit, *_ in state if final and not hit]
            has_human = con.execute("SELECT EXISTS (SELECT 1 FROM human_labels)").fetchall()[0][0]
            if not todo and not has_human:  # F1 is a function of the cached rows' keys alone
                memo_key = (str(store.path), tuple(state))
            lap("cache look-up")
            # cached rows take model/setting from the runs row as the live pass does
            cached_sql = f"""
                SELECT c.source, coalesce(r.model, '') AS model, r.setting AS setting,
                       c.evaluator, c.primary_category, c.secondary_category, c.is_error,
                       {
                ", ".join(
                    {"n": "c.n", "status": "c.status"}.get(col, f"c.k.{col} AS {col}")
                    for col in _SUM_COLS
                )
            }
                FROM (SELECT *, json_transform(counts, '{_COUNTS_STRUCT}') AS k FROM run_counts) c
                JOIN _mp_fp f ON f.run_id = c.source
                     AND f.fingerprint = c.fingerprint AND f.hit
                JOIN runs r ON r.run_id = c.source
                WHERE c.status IS NOT NULL AND c.status <> '{_INTERVALS}'"""
            # human counts live (no labels at all: nothing to count)
            parts, part_params = (
                ([cached_sql, human_sql], list(params)) if has_human else ([cached_sql], [])
            )
            if todo:
                marks = ", ".join("?" for _ in todo)
                parts.insert(0, _sums_sql("judge", f" AND v.run_id IN ({marks})", with_status=True))
                part_params = todo + part_params
            con.execute(
                "CREATE OR REPLACE TEMP TABLE _mp_sums AS "
                + " UNION ALL ".join(f"SELECT * FROM ({p})" for p in parts),
                part_params,
            )
            lap("counts pass over verdicts")
            _cache_counts(store, con, to_cache)
            lap("cache write")
            con.execute("DROP TABLE IF EXISTS _mp_fp")
        memo = _F1_MEMO.get(memo_key) if memo_key is not None else None
        if memo is not None:
            f1 = memo.copy()
        else:
            f1 = con.execute(_f1_sql("SELECT * FROM _mp_sums WHERE status = 'ok'")).df()
            if memo_key is not None:
                _F1_MEMO[memo_key] = f1.copy()
                while len(_F1_MEMO) > _F1_MEMO_SIZE:
                    _F1_MEMO.pop(next(iter(_F1_MEMO)))
        lap("F1 from counts")
        diag = con.execute(diag_sql, r_params).df()
        lap("run diagnostics")
        con.execute("DROP TABLE _mp_sums")
    if f1.empty:
        f1 = pd.DataFrame(columns=COLUMNS + ["tp", "fn", "fp", "n_error", "n_control"])
    return f1, diag


def judge_patterns(
    store: Store, run_ids: Sequence[str] | None = None, judging: str | None = None
) -> pd.DataFrame:
    """Pattern counts of ok judge verdicts of Mis-prompt runs (one GROUP BY over verdicts)."""
    return patterns(store, run_ids, ("judge",), judging)


def _diagnostics_sql(verdict_counts: str, run_where: str, extra: Sequence[str] = ()) -> str:
    """Per-run diagnostics around `verdict_counts`, a query giving run_id, verdicts_ok,
    verdicts_failed, inconsistent (+ `extra` count columns) — from the verdicts themselves or
    from already aggregated counts."""
    extra_sql = "".join(f",\n               coalesce(v.{c}, 0)::BIGINT AS {c}" for c in extra)
    return f"""
        WITH v AS ({verdict_counts}),
        rf AS (SELECT run_id, count(*) AS responses_failed FROM responses
               WHERE status <> 'ok' GROUP BY run_id),
        hl AS (SELECT run_id, count(DISTINCT (item_id, variant)) AS human_labelled,
                      count(DISTINCT annotator) AS annotators
               FROM human_labels GROUP BY run_id)
        SELECT r.run_id, r.model, r.setting, coalesce(r.mode, 'proactive') AS mode, r.item_set,
               -- the judge and template of the judging the numbers come from (current one)
               coalesce(cj.judge_model, r.judge_model) AS judge_model,
               coalesce(cj.template_id, json_extract_string(r.params, '$.judge_template'))
                   AS judge_template, coalesce(cj.judging, 'default') AS judging,
               coalesce(r.weak_model, false) AS weak_model, r.status, r.created_at,
               r.n_planned, coalesce(v.verdicts_ok, 0)::BIGINT AS verdicts_ok,
               coalesce(v.verdicts_failed, 0)::BIGINT AS verdicts_failed,
               coalesce(v.inconsistent, 0)::BIGINT AS inconsistent,
               coalesce(rf.responses_failed, 0) AS responses_failed,
               coalesce(hl.human_labelled, 0) AS human_labelled,
               coalesce(hl.annotators, 0) AS annotators{extra_sql}
        FROM runs r LEFT JOIN v USING (run_id) LEFT JOIN rf USING (run_id)
        LEFT JOIN hl USING (run_id)
        LEFT JOIN (SELECT a.* FROM all_judgings a
                   SEMI JOIN current_judgings c ON c.run_id = a.run_id
                                               AND c.judging = a.judging) cj
               ON cj.run_id = r.run_id
        WHERE {_EVAL_RUNS}{run_where}
        ORDER BY r.created_at, r.run_id
    """


def run_diagnostics(
    store: Store,
    run_ids: Sequence[str] | None = None,
    f1_rows: pd.DataFrame | None = None,
    judging: str | None = None,
) -> pd.DataFrame:
    """Per Mis-prompt run: verdicts ok/failed, inconsistent verdicts, erroneous/control items.

    Counts by run need no join with items; erroneous/control counts come from the judge rows
    of the run's F1 table (level all), computed here unless passed in.
    """
    where, params = _run_filter(run_ids)
    sql = _diagnostics_sql(
        f"""SELECT run_id,
                   count(*) FILTER (WHERE status = 'ok') AS verdicts_ok,
                   count(*) FILTER (WHERE status <> 'ok') AS verdicts_failed,
                   count(*) FILTER (WHERE status = 'ok' AND ({_INCONSISTENT_SQL})) AS inconsistent
            FROM {_verdict_source("judge", judging)} GROUP BY run_id""",
        where,
    )
    diag = store.df(sql, params)
    if f1_rows is None:
        f1_rows = f1_in_database(store, run_ids, ("judge",), judging)
    overall = f1_rows[(f1_rows["evaluator"] == "judge") & (f1_rows["category_level"] == "all")]
    overall = overall.groupby("source")[["n_error", "n_control"]].max()
    diag["n_error"] = diag["run_id"].map(overall["n_error"]).fillna(0).astype(int)
    diag["n_control"] = diag["run_id"].map(overall["n_control"]).fillna(0).astype(int)
    return diag
