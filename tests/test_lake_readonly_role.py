"""Issue 31, point 15: a read-only PostgreSQL role's `import`, `run`, `rescore` and `init` on a
lake ended in "Failed to commit DuckLake transaction": the message names the missing
permission (the real PostgreSQL and S3 servers of tests/services.py, a role granted SELECT)."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.core_cli import run_core
from tests.fake_openai import FakeOpenAI

SAMPLE = ROOT / "data" / "samples" / "misprompt_sample.csv"


@pytest.fixture
def reader_url(lake, pg_cluster) -> str:
    assert run_core("init").returncode == 0
    pg_cluster.psql(
        "DO $$ BEGIN CREATE ROLE ehw_reader LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; "
        "END $$;"
    )
    pg_cluster.psql(
        "GRANT USAGE ON SCHEMA public TO ehw_reader; "
        "GRANT SELECT ON ALL TABLES IN SCHEMA public TO ehw_reader;",
        lake.dbname,
    )
    return lake.url.replace("user=ehw", "user=ehw_reader")


def _commands(url: str, server_url: str) -> dict[str, list[str]]:
    return {
        "import": ["import", "misprompt", str(SAMPLE), "--name", "more"],
        "init": ["init"],
        "run": ["run", "misprompt", "--items", "misprompt-sample", "--limit", "5", "--setting",
                "zero-shot", "--base-url", server_url, "--model", "m", "--quiet"],
        "rescore": ["rescore", "--source", "w1", "--judge-base-url", server_url,
                    "--judge-model", "j", "--as", "again", "--quiet"],
    }  # fmt: skip


def test_a_read_only_role_is_told_which_permission_it_lacks(reader_url, lake):
    with FakeOpenAI() as server:
        made = run_core(  # a run by the writers' role, for the reader's rescore
            "run", "misprompt", "--items", "misprompt-sample", "--limit", "5", "--setting",
            "zero-shot", "--base-url", server.url, "--model", "m", "--run-name", "w1", "--quiet",
        )  # fmt: skip
        assert made.returncode == 0, made
        for name, argv in _commands(reader_url, server.url).items():
            done = run_core(*argv, "--db", reader_url)
            assert done.returncode == 1, (name, done)
            err = done.stderr.strip()
            assert "Failed to commit DuckLake transaction" not in err, (name, err)
            assert "role 'ehw_reader'" in err and "may only read" in err, (name, err)
            assert "INSERT" in err and "docs/team-store.md" in err, (name, err)
            assert len([x for x in err.splitlines() if x.startswith("error:")]) == 1, (name, err)
