"""Schema v3 -> v4 (one result record for every benchmark): a store written by the v3 code
migrates with every verdict kept, and every number it gives is the one the v3 code gave.

`tests/data/store_v3/` is a schema-v3 store exported with DuckDB's EXPORT DATABASE by the code
before the change (main at 3b6527e): the built-in samples, two Mis-prompt runs (one re-judged as
`again` with another judge and template), an ErrorBench run and two BIG-Bench Mistake runs (one
re-scored as `again`), a two-annotator audit; `expected/` holds what that code printed for each
`metrics` command and the audit's tables.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from core.services import audit
from core.store import SCHEMA_VERSION, DatabaseError, Store
from tests.core_cli import run_core

DUMP = Path(__file__).parent / "data" / "store_v3"
EXPECTED = DUMP / "expected"


def _v3_file(path: Path) -> Path:
    """A v3 database file from the dump (its load script names the folder it came from)."""
    con = duckdb.connect(str(path))
    con.execute((DUMP / "schema.sql").read_text())
    con.execute((DUMP / "load.sql").read_text().replace("/tmp/v3/out/dump", str(DUMP)))
    con.close()
    return path


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Store:
    path = _v3_file(tmp_path_factory.mktemp("v3") / "v3.duckdb")
    con = duckdb.connect(str(path))
    before = con.execute("SELECT count(*) FROM verdicts").fetchone()
    con.close()
    store = Store.open(path)
    store.ensure_schema()
    store.before = before  # type: ignore[attr-defined]
    return store


def _metrics(store: Store, *args: str) -> str:
    done = run_core("metrics", *args, "--db", str(store.path))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_verdict_becomes_one_result_and_no_label_column_is_left(migrated: Store) -> None:
    assert migrated.scalar("SELECT value FROM meta WHERE key = 'schema_version'") == str(
        SCHEMA_VERSION
    )
    (n_verdicts,) = migrated.before  # type: ignore[attr-defined]
    # the v3 verdicts, plus the code-scored runs' own judging (kept with the responses in v3)
    n_scored = migrated.scalar(
        "SELECT count(*) FROM responses x JOIN runs r USING (run_id) "
        "WHERE r.benchmark IN ('errorbench', 'bbm') AND x.status = 'ok'"
    )
    assert migrated.scalar("SELECT count(*) FROM results") == n_verdicts + n_scored
    tables = migrated.rows(
        "SELECT table_name, column_name FROM information_schema.columns "
        "JOIN information_schema.tables USING (table_schema, table_name) "
        "WHERE table_type = 'BASE TABLE'"
    )
    labels = ("detection", "identification", "correction", "guidance")
    assert [t for t in tables if any(lb in t[1] for lb in labels)] == []
    assert "verdicts" not in {t for t, _ in tables}


def test_migrated_records_read_like_new_ones(migrated: Store) -> None:
    # Mis-prompt: the letters of the true labels; correct = detection on an erroneous item
    rows = migrated.rows(
        "SELECT v.answer, v.correct, i.is_error, v.labels->>'detection' FROM results v "
        "JOIN runs r USING (run_id) JOIN items i ON i.item_set = r.item_set "
        "AND i.item_id = v.item_id WHERE r.benchmark = 'misprompt' AND v.status = 'ok'"
    )
    assert rows and all(a and (a == "∅") != ("D" in a.split()) or a != "∅" for a, *_ in rows)
    assert all(c == ((d == "true") == bool(e)) for _, c, e, d in rows)
    # BBM: parse status as status, the named step as answer
    statuses = {
        r[0]
        for r in migrated.rows(
            "SELECT v.status FROM results v JOIN runs r USING (run_id) WHERE r.benchmark = 'bbm'"
        )
    }
    assert statuses <= {"ok", "partial", "unparsable", "out_of_range"}
    assert (
        migrated.scalar(
            "SELECT count(*) FROM results v JOIN runs r USING (run_id) "
            "WHERE r.benchmark IN ('bbm', 'errorbench') AND v.answer IS NULL AND v.status = 'ok'"
        )
        == 0
    )


@pytest.mark.parametrize(
    "name, args",
    [
        ("metrics-misprompt-published.csv", ("misprompt", "--source", "published")),
        ("metrics-misprompt-mp-zero-shot.csv", ("misprompt", "--source", "mp-zero-shot")),
        (
            "metrics-misprompt-mp-zero-shot-default.csv",
            ("misprompt", "--source", "mp-zero-shot", "--judging", "default"),
        ),
        (
            "metrics-misprompt-mp-zero-shot-again.csv",
            ("misprompt", "--source", "mp-zero-shot", "--judging", "again"),
        ),
        ("metrics-misprompt-mp-cot.csv", ("misprompt", "--source", "mp-cot")),
        ("metrics-errorbench-eb1.txt", ("errorbench", "--source", "eb1", "--no-errant")),
        (
            "metrics-errorbench-eb1-again.txt",
            ("errorbench", "--source", "eb1", "--judging", "again", "--no-errant"),
        ),
        ("metrics-bbm-bbm-direct_trace.txt", ("bbm", "--source", "bbm-direct_trace")),
        ("metrics-bbm-bbm-direct_step.txt", ("bbm", "--source", "bbm-direct_step")),
        (
            "metrics-bbm-bbm-direct_trace-again.txt",
            ("bbm", "--source", "bbm-direct_trace", "--judging", "again"),
        ),
        ("metrics-bbm-published.txt", ("bbm", "--source", "published")),
    ],
)
def test_metrics_are_byte_identical_after_migration(migrated: Store, name: str, args) -> None:
    """Every number the v3 code printed, printed again from the migrated store — but for what
    issue 29 changed on purpose in every store, migrated or not: the interval bounds of these
    runs (bootstrap bounds read on mid-distribution percentiles with more draws for small
    cells; the Wilson bounds beside them are unchanged; checked against the reference
    in tests/test_misprompt_metrics.py and between seeds in tests/test_bootstrap_stability.py)
    and BBM's count of `ambiguous` answers (a status v3 did not have: 0 here)."""
    got_text = _metrics(migrated, *args)
    if not name.startswith("metrics-misprompt-mp-") and not name.startswith("metrics-bbm-bbm-"):
        assert got_text == (EXPECTED / name).read_text()
        return
    got = pd.read_csv(io.StringIO(got_text))
    expected = pd.read_csv(EXPECTED / name)
    if name.startswith("metrics-bbm-"):
        ambiguous = got["measure"] == "ambiguous_answers"
        assert ambiguous.any() and (got.loc[ambiguous, "value"] == 0).all()
        got = got[~ambiguous].reset_index(drop=True)
    got = got.drop(columns=["ci_low", "ci_high"])
    expected = expected.drop(columns=["ci_low", "ci_high"])
    pd.testing.assert_frame_equal(got, expected)


def test_audit_tables_are_unchanged_after_migration(migrated: Store) -> None:
    """The audit's tables as the v3 code gave them — but for the κ interval bounds, which issue
    29 changed on purpose in every store (exact bootstrap distribution instead of 1,000 draws;
    checked against sklearn / statsmodels over every resample in tests/test_audit_trust.py and
    between seeds in tests/test_bootstrap_stability.py)."""
    f1 = audit.f1_comparison(migrated, "a1")
    expected = pd.read_csv(EXPECTED / "audit-f1.csv")
    got = pd.read_csv(io.StringIO(f1.to_csv(index=False)))
    pd.testing.assert_frame_equal(got, expected)
    agreement = audit.agreement_table(
        audit.audit_labels(migrated, "a1"), names=audit.label_set_of_audit(migrated, "a1").names
    )
    got = pd.read_csv(io.StringIO(agreement.to_csv(index=False)))
    expected = pd.read_csv(EXPECTED / "audit-agreement.csv")
    assert got[["ci_low", "ci_high"]].notna().all().all()
    pd.testing.assert_frame_equal(
        got.drop(columns=["ci_low", "ci_high"]), expected.drop(columns=["ci_low", "ci_high"])
    )


def test_a_migration_that_fails_leaves_the_v3_file_as_it_was(tmp_path: Path) -> None:
    path = _v3_file(tmp_path / "v3.duckdb")
    con = duckdb.connect(str(path))
    con.execute("DROP TABLE judgings")  # the v4 step reads it (all_judgings): it must fail
    con.close()
    copy = tmp_path / "copy.duckdb"
    shutil.copy(path, copy)
    with pytest.raises((duckdb.Error, DatabaseError)):
        Store.open(path).ensure_schema()
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("3",)
    assert con.execute("SELECT count(*) FROM verdicts").fetchall()[0][0] > 0
    con.close()


def test_the_default_output_says_which_judging_it_shows(migrated: Store) -> None:
    """After a rescore (`again`, with another judge and template) `metrics misprompt` follows
    the run's current judging: its `judging` column says so, it never switches silently."""

    def judgings(*args: str) -> set[str]:
        rows = pd.read_csv(io.StringIO(_metrics(migrated, "misprompt", *args)))
        return set(rows.loc[rows["evaluator"] == "judge", "judging"])

    assert judgings("--source", "mp-zero-shot") == {"again (misprompt/judge.v1)"}
    assert judgings("--source", "mp-zero-shot", "--judging", "default") == {
        "default (misprompt/judge.v2)"
    }
    # BBM without --judging shows the run's own scores, and says so
    bbm = pd.read_csv(io.StringIO(_metrics(migrated, "bbm", "--source", "bbm-direct_trace")))
    assert set(bbm["judging"]) == {"default (bbm/direct_trace.v1)"}
