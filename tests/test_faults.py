"""Fault injection (issue 11, "nothing lost, nothing leaked"): each case drives the real code
path (the CLI through core.cli.main or a subprocess, the client against the scripted HTTP
server in tests/fake_openai.py) and checks the message, the exit code and that nothing that
should stay unchanged changed (row for row, or byte for byte for the database file)."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from core import cli
from core.store import Store
from tests.conftest import copy_of
from tests.test_bad_input import _rows_sql

ROOT = Path(__file__).resolve().parent.parent


# -- helpers ------------------------------------------------------------------------------------


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(store: Store) -> dict[str, list[str]]:
    """Every row of every table (sorted), to prove a refused command changed nothing."""
    with store.session():
        tables = [
            r[0]
            for r in store.rows(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_type = 'BASE TABLE' ORDER BY table_name"
            )
        ]
        return {t: sorted(map(repr, store.rows(_rows_sql(t)))) for t in tables}


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`python -m core ARGV` in this process (core.cli.main): exit code, stdout, stderr."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse and endpoint flag errors
        code = exc.code if isinstance(exc.code, int) else 1
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    out, err = capsys.readouterr()
    return code, out, err


def _drop_root_write_override() -> None:
    """In a child run as root: drop CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH/CAP_FOWNER from the
    bounding set, so after exec root obeys file modes like any user (portable: prctl only)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2, 3):  # PR_CAPBSET_DROP = 24
        if libc.prctl(24, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def _file_size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        # A write beyond `limit` bytes fails with EFBIG ("File too large"), as a full device
        # fails with ENOSPC; Python ignores SIGXFSZ, so the write returns the error.
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def run_subprocess(
    argv: list[str], preexec: Callable[[], None] | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "core", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
        env={**os.environ, **(env or {})},
    )
    return done.returncode, done.stdout, done.stderr


# -- 1. export never destroys a file --------------------------------------------------------------


@pytest.fixture
def exported_db(initialised_store: Store) -> Store:
    """A database with one run of two responses, one of them formula-like."""
    s = initialised_store
    s.execute(
        "INSERT INTO runs (run_id, benchmark, item_set, model, setting, status) VALUES "
        "('r1', 'echo', 'none', 'm', 'echo', 'done')"
    )
    for item, text in [("a", '=HYPERLINK("http://evil","click")'), ("b", "plain " * 200)]:
        s.execute(
            "INSERT INTO responses (run_id, item_id, variant, status, messages, response) "
            "VALUES ('r1', ?, 'echo', 'ok', '[]', ?)",
            [item, text],
        )
    return s


def _case_onto_db(tmp: Path, db: Path) -> tuple[list[str], str]:
    return ["--out", str(db)], "is the database file"


def _case_onto_db_forced(tmp: Path, db: Path) -> tuple[list[str], str]:
    return ["--out", str(db), "--force"], "is the database file"


def _case_onto_db_other_spelling(tmp: Path, db: Path) -> tuple[list[str], str]:
    (tmp / "sub").mkdir()
    return ["--out", str(tmp / "sub" / ".." / db.name), "--force"], "is the database file"


def _case_onto_db_symlink(tmp: Path, db: Path) -> tuple[list[str], str]:
    (tmp / "link.csv").symlink_to(db)
    return ["--out", str(tmp / "link.csv"), "--force"], "is the database file"


def _case_onto_wal(tmp: Path, db: Path) -> tuple[list[str], str]:
    return ["--out", str(db) + ".wal", "--force"], "is the database file"


def _case_existing(tmp: Path, db: Path) -> tuple[list[str], str]:
    (tmp / "old.csv").write_text("precious\n")
    return ["--out", str(tmp / "old.csv")], "already exists; pass --force"


def _case_directory(tmp: Path, db: Path) -> tuple[list[str], str]:
    (tmp / "adir").mkdir()
    return ["--out", str(tmp / "adir")], "is a directory"


def _case_missing_folder(tmp: Path, db: Path) -> tuple[list[str], str]:
    return ["--out", str(tmp / "nope" / "x.csv")], "does not exist"


def _case_parent_is_file(tmp: Path, db: Path) -> tuple[list[str], str]:
    (tmp / "afile").write_text("x")
    return ["--out", str(tmp / "afile" / "x.csv")], "does not exist (or is not a folder)"


EXPORT_REFUSALS = [
    pytest.param(_case_onto_db, id="onto-db"),
    pytest.param(_case_onto_db_forced, id="onto-db-force"),
    pytest.param(_case_onto_db_other_spelling, id="onto-db-dotdot"),
    pytest.param(_case_onto_db_symlink, id="onto-db-symlink"),
    pytest.param(_case_onto_wal, id="onto-db-wal"),
    pytest.param(_case_existing, id="existing-file"),
    pytest.param(_case_directory, id="out-is-directory"),
    pytest.param(_case_missing_folder, id="missing-folder"),
    pytest.param(_case_parent_is_file, id="parent-is-file"),
]


@pytest.mark.parametrize("case", EXPORT_REFUSALS)
def test_export_refuses_and_changes_no_byte(case, exported_db: Store, tmp_path: Path, capsys):
    db = exported_db.path
    args, message = case(tmp_path, db)
    before = {p.name: sha(p) for p in tmp_path.iterdir() if p.is_file()}
    names_before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run_cli(
        ["export", "--source", "r1", "--format", "csv", *args, "--db", str(db)], capsys
    )
    assert code == 1, (out, err)
    assert message in err and err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and out == ""
    assert {p.name: sha(p) for p in tmp_path.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == names_before  # no temp file left


def test_export_force_replaces_atomically_and_neutralises_formulas(
    exported_db: Store, tmp_path: Path, capsys
):
    out = tmp_path / "old.csv"
    out.write_text("precious\n")
    code, stdout, err = run_cli(
        ["export", "--source", "r1", "--out", str(out), "--force", "--db", str(exported_db.path)],
        capsys,
    )
    assert code == 0, err
    assert "wrote 2 rows" in stdout
    frame = pd.read_csv(out)
    assert frame["response"][0] == '\'=HYPERLINK("http://evil","click")'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.csv", "results.duckdb"]
    assert oct(out.stat().st_mode & 0o777) != oct(0o600)  # an ordinary file, not mkstemp's


def _full_device(tmp: Path) -> tuple[list[str], Callable[[], None], str]:
    return (["--out", str(tmp / "x.csv")], _file_size_limit(512), "cannot write")


def _unwritable_folder(tmp: Path) -> tuple[list[str], Callable[[], None], str]:
    folder = tmp / "readonly"
    folder.mkdir()
    folder.chmod(0o555)
    return (
        ["--out", str(folder / "x.csv")],
        _drop_root_write_override,
        "Permission denied (choose a folder you can write to)",
    )


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(_full_device, id="file-too-large"),
        pytest.param(_unwritable_folder, id="unwritable-folder"),
    ],
)
def test_export_write_failure_is_one_line_and_leaves_nothing(
    case, exported_db: Store, tmp_path: Path
):
    """Real OS failures in a child process: RLIMIT_FSIZE makes the write fail part-way like a
    full disk; a read-only folder (root's override dropped) refuses the temporary file."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args, preexec, message = case(out_dir)
    db_hash = sha(exported_db.path)
    listing = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    code, out, err = run_subprocess(
        ["export", "--source", "r1", "--format", "csv", *args, "--db", str(exported_db.path)],
        preexec,
    )
    assert code == 1, (out, err)
    assert message in err and "Traceback" not in err and err.count("\n") == 1, err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == listing
    assert sha(exported_db.path) == db_hash


# -- 4. a write that cannot land: the real cause, a clean stop, a full resume -----------------------

COMMIT_SCRIPT = """
import sys
from core.store import Store, DatabaseError
store = Store.open(sys.argv[1])
try:
    store.transaction(lambda con: con.execute(
        "INSERT INTO items (item_set, item_id, benchmark, prompt) "
        "SELECT 's', 'i' || range, 'echo', repeat('x', 1000) FROM range(500)"))
except DatabaseError as exc:
    print(type(exc).__name__ + ": " + str(exc))
    sys.exit(3)
"""


def test_failed_commit_raises_the_real_cause_not_the_rollback(store: Store):
    """A full disk, simulated portably: RLIMIT_FSIZE below what the WAL needs, so DuckDB's
    COMMIT fails with EFBIG and ends the transaction; the ROLLBACK after it used to replace
    that error by "cannot rollback - no transaction is active"."""
    before = snapshot(store)
    done = subprocess.run(
        [sys.executable, "-c", COMMIT_SCRIPT, str(store.path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_file_size_limit(64 * 1024),
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout.startswith("DatabaseError: could not save to "), done.stdout
    assert "File too large" in done.stdout and "Free some disk space" in done.stdout
    assert "cannot rollback" not in done.stdout + done.stderr
    assert snapshot(store) == before  # nothing of the failed transaction landed


def test_run_whose_flush_cannot_be_written_stops_interrupted_and_resumes(store: Store):
    """The runner's batches cannot be written (every WAL write past 16 KB fails, as on a full
    disk; each unit's rows are > 40 KB, so every flush fails, deterministically): the run must
    end with status interrupted, one line on stderr naming the cause, exit code 1, no
    traceback, no partial rows; the same command without the limit then completes it."""
    from tests.echo_task import create_item_set
    from tests.fake_openai import FakeProcess

    n = 12
    create_item_set(store, "s", "echo", [f"prompt {i} " + "x" * 20000 for i in range(n)])
    before = snapshot(store)
    with FakeProcess({"latency": 0.01}) as server:
        argv = [
            sys.executable,
            "-m",
            "tests.echo_task",
            "--db",
            str(store.path),
            "--items",
            "s",
            "--base-url",
            server.url,
            "--model",
            "fake-model",
            "--run-name",
            "full",
            "--quiet",
        ]
        done = subprocess.run(
            argv,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_file_size_limit(16 * 1024),
        )
        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert "Traceback" not in done.stderr and "cannot rollback" not in done.stderr
        assert lines[-1].startswith(
            "error: run 'full' stopped (status interrupted): "
            f"{n} finished item(s) could not be saved"
        ), lines[-1]
        assert "File too large" in lines[-1] and "--run-name full" in lines[-1]
        assert store.scalar("SELECT status FROM runs WHERE run_id = 'full'") == "interrupted"
        after = snapshot(store)
        assert {t: rows for t, rows in after.items() if t != "runs"} == {
            t: rows for t, rows in before.items() if t != "runs"
        }  # no partial batch
        # the resume needs no limit, so no process of its own: the same main, in this process
        from tests.echo_task import _echo_main

        code, out, err = _in_process(_echo_main, argv[3:])
    assert code == 0, err
    assert f"{n}/{n} done" in out
    assert (
        store.scalar("SELECT count(*) FROM responses WHERE run_id = 'full' AND status = 'ok'") == n
    )
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'full'") == "done"


# -- 2. secrets: nothing a server echoes, nothing inside a URL, no key given as a name -------------


def leaks(store: Store, secret: str) -> list[str]:
    """Tables with the secret in any column (CAST to text), and the database files' bytes."""
    found = []
    with store.session():  # one open of the file for the ~50 queries, not one each
        for (table,) in store.rows("SELECT table_name FROM information_schema.tables"):
            cols = [
                r[0]
                for r in store.rows(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ?",
                    [table],
                )
            ]
            concat = " || ".join(f"coalesce(CAST({c} AS VARCHAR), '')" for c in cols)
            if store.scalar(f"SELECT count(*) FROM {table} WHERE contains({concat}, ?)", [secret]):
                found.append(table)
        store.execute("CHECKPOINT")
    for path in store.path.parent.glob(store.path.name + "*"):
        if secret.encode() in path.read_bytes():
            found.append(path.name)
    return found


ECHO_SECRET = "sk-live-ECHOED-7f3a9c21"
QUERY_SECRET = "qs-AzureKey-5b8e1d44"


@pytest.mark.parametrize("how", ["key-in-env-echoed", "key-in-url-query-echoed"])
def test_a_key_echoed_by_the_server_is_stored_nowhere(how: str, store: Store):
    """The server puts the bearer token and the request path (with its query) in every reply:
    responses, verdict raw text, call_cache, calls and runs.params must all hold *** instead,
    and the CLI's output must not show it. The key still reaches the server."""
    from tests.echo_task import create_item_set
    from tests.fake_openai import FakeOpenAI

    create_item_set(store, "s", "echo", [f"prompt {i}" for i in range(4)])
    secret = ECHO_SECRET if how == "key-in-env-echoed" else QUERY_SECRET
    with FakeOpenAI(fault_fn=lambda body: {"echo_key": True}) as server:
        url = base = server.url
        extra: list[str] = ["--api-key-env", "EHW_FAULTS_KEY"]
        if how == "key-in-url-query-echoed":
            url, extra = f"{server.url}?api-version=2024-06-01&api-key={secret}", []
        code, out, err = _echo_run(store, url, "leak", extra, {"EHW_FAULTS_KEY": ECHO_SECRET})
        sent = server.chat_requests
    assert code == 0, err
    assert len(sent) == 8
    if how == "key-in-env-echoed":
        assert all(r["headers"]["authorization"] == f"Bearer {ECHO_SECRET}" for r in sent)
    else:
        assert all(
            f"api-key={QUERY_SECRET}" in r["path"] and "api-version=2024-06-01" in r["path"]
            for r in sent
        )  # the query travels as a query, intact
    assert secret not in out + err
    assert leaks(store, secret) == []
    replies = [r[0] for r in store.rows("SELECT response FROM call_cache")]
    assert len(replies) == 8 and all("***" in r for r in replies)
    assert all("***" in r[0] for r in store.rows("SELECT response FROM responses"))
    if how == "key-in-url-query-echoed":
        params = json.loads(store.scalar("SELECT params FROM runs WHERE run_id = 'leak'"))
        assert params["endpoint"]["base_urls"] == [f"{base}?api-version=2024-06-01&api-key=***"]


def _echo_run(
    store: Store, url: str, run: str, extra: list[str], env: dict[str, str]
) -> tuple[int, str, str]:
    """`python -m tests.echo_task …` in this process (its main, stdout/stderr captured, `env`
    set for the run only): a child process would prove nothing more here and costs ~1.3 s of
    CPU for its imports. Tests that need a process of their own (RLIMIT_FSIZE, the app's jobs)
    still start one."""
    from tests.echo_task import _echo_main

    argv = ["--db", str(store.path), "--items", "s", "--base-url", url]
    argv += ["--model", "fake-model", "--run-name", run, "--quiet", *extra]
    return _in_process(_echo_main, argv, env)


def _in_process(
    main: Callable[[list[str]], int], argv: list[str], env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """main(argv) with `env` added to os.environ and stdout/stderr captured, as a subprocess:
    (exit code, stdout, stderr); the environment is restored afterwards."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from tests.core_cli import _restore_environ

    saved = dict(os.environ)
    os.environ.update(env or {})
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            _restore_environ(saved)
    return code, out.getvalue(), err.getvalue()


def test_direct_calls_outside_a_run_scrub_cache_and_errors(store: Store, monkeypatch):
    """The playground path writes call records and cache rows straight away (no runner)."""
    from core.engine.client import ModelClient
    from core.engine.endpoints import Endpoint
    from tests.fake_openai import FakeOpenAI

    monkeypatch.setenv("EHW_FAULTS_KEY", ECHO_SECRET)
    with FakeOpenAI(
        faults=[{"status": 500, "message": f"bad key {ECHO_SECRET}"}, {"echo_key": True}]
    ) as server:
        client = ModelClient(
            Endpoint("f", (server.url,), "fake-model", api_key_env="EHW_FAULTS_KEY"),
            store=store,
            backoff_base_s=0.01,
            backoff_max_s=0.02,
        )
        result = client.chat_sync([{"role": "user", "content": "hi"}])
    assert ECHO_SECRET not in result.text and "Bearer ***" in result.text
    assert store.scalar("SELECT count(*) FROM calls") == 2
    assert store.scalar("SELECT count(*) FROM call_cache") == 1
    assert leaks(store, ECHO_SECRET) == []


KEY_AS_NAME = [
    pytest.param(["--api-key-env", "sk-proj-Abc123XYZ-notaname"], "--api-key-env", id="dashes"),
    pytest.param(
        ["--api-key-env", "hf_AbCdEf0123456789GhIjKlMn"],
        "--api-key-env",
        id="identifier-shaped-token",
    ),
    pytest.param(
        [
            "--judge-base-url",
            "http://127.0.0.1:9/v1",
            "--judge-model",
            "j",
            "--judge-api-key-env",
            "sk-live-JUDGEkey999",
        ],
        "--judge-api-key-env",
        id="judge-flag",
    ),
]


@pytest.mark.parametrize("flags,flag", KEY_AS_NAME)
def test_a_key_given_as_the_variable_name_is_refused_without_echoing_it(
    flags: list[str], flag: str, initialised_store: Store, capsys
):
    before = snapshot(initialised_store)
    code, out, err = run_cli(
        [
            "run",
            "misprompt",
            "--items",
            "misprompt-sample",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--run-name",
            "k",
            "--db",
            str(initialised_store.path),
            *flags,
        ],
        capsys,
    )
    assert code == 1
    assert err.strip() == (
        f"error: the value given to {flag} is not a valid environment variable name (it looks "
        "like a key; pass the NAME of the variable that holds the key, e.g. OPENAI_API_KEY, "
        "after `export OPENAI_API_KEY=…`)"
    )
    assert flags[-1] not in out + err
    assert snapshot(initialised_store) == before


@pytest.mark.parametrize(
    "url,stored",
    [
        ("http://h:1/v1?api-key=XYZsecret1", "http://h:1/v1?api-key=***"),
        ("http://h:1/v1?key=XYZsecret1&x=1", "http://h:1/v1?key=***&x=1"),
        ("http://h:1/v1?token=XYZsecret1", "http://h:1/v1?token=***"),
        ("http://h:1/v1?access_token=XYZsecret1", "http://h:1/v1?access_token=***"),
        ("http://h:1/v1?api_key=XYZsecret1", "http://h:1/v1?api_key=***"),
        ("http://h:1/v1?sig=XYZsecret1&se=2030", "http://h:1/v1?sig=***&se=2030"),
        ("http://h:1/v1?X-Api-Key=XYZsecret1", "http://h:1/v1?X-Api-Key=***"),
        ("http://u:XYZsecret1@h:1/v1", "http://h:1/v1"),
        ("http://h:1/v1?api-version=2024-06-01", "http://h:1/v1?api-version=2024-06-01"),
    ],
    ids=[
        "api-key",
        "key",
        "token",
        "access_token",
        "api_key",
        "sig",
        "x-api-key",
        "userinfo",
        "harmless-query",
    ],
)
def test_url_credentials_are_redacted_and_known_as_secrets(url: str, stored: str):
    from core.engine.endpoints import redact_url, url_secrets

    assert redact_url(url) == stored
    assert url_secrets(url) == ([] if "XYZ" not in url else ["XYZsecret1"])


# -- 3. resuming a run name with other parameters is refused ------------------------------------


def _defaults() -> tuple[int, int]:
    """The Mis-prompt CLI's default max tokens (model, judge): what a first run stores."""
    from core.benchmarks.misprompt import judge as judge_mod
    from core.benchmarks.misprompt.task import DEFAULT_MAX_TOKENS

    return DEFAULT_MAX_TOKENS, judge_mod.JUDGE_MAX_TOKENS


def _add(*words: str) -> Callable[[list[str], dict], list[str]]:
    return lambda argv, ctx: [*argv, *words]


def _swap(old_key: str, new: str) -> Callable[[list[str], dict], list[str]]:
    def apply(argv: list[str], ctx: dict) -> list[str]:
        out = list(argv)
        out[out.index(ctx.get(old_key, old_key))] = ctx.get(new, new)
        return out

    return apply


RESUME_CHANGES = [
    pytest.param(
        _add("--temperature", "1.7", "--max-tokens", "7"),
        lambda d: ["temperature: stored 0.0, now 1.7", f"max_tokens: stored {d[0]}, now 7"],
        id="generation-params",
    ),
    pytest.param(
        _swap("fake-model", "other-model"),
        lambda d: ["model: stored 'fake-model', now 'other-model'"],
        id="model",
    ),
    pytest.param(
        _add("--setting", "cot"),
        lambda d: ["setting: stored 'zero-shot', now 'cot'", "template: stored "],
        id="setting-and-template",
    ),
    pytest.param(
        _add("--passive"), lambda d: ["mode: stored 'proactive', now 'passive'"], id="mode"
    ),
    pytest.param(
        _add("--judge-max-tokens", "9"),
        lambda d: [f"judge_max_tokens: stored {d[1]}, now 9"],
        id="judge-params",
    ),
    pytest.param(
        _swap("url", "other_url"), lambda d: ["endpoint URLs: stored ["], id="endpoint-url"
    ),
    pytest.param(
        lambda argv, ctx: [
            *argv,
            "--judge-base-url",
            ctx["other_url"],
            "--judge-model",
            "fake-model",
        ],
        lambda d: ["judge URLs: stored ["],
        id="judge-url",
    ),
    # An item set that runs use can no longer change (core.store.replace_item_set refuses;
    # tests/test_bad_input.py), so a changed version is covered by test_check_resume alone.
    pytest.param(_swap("mp", "mp2"), lambda d: ["item set: stored 'mp', now 'mp2'"], id="item-set"),
]


@pytest.fixture(scope="module")
def _resumable_run(tmp_path_factory, _initialised_template):
    """A real Mis-prompt run 'same' (2 items of item set mp, judged) through `python -m core
    run misprompt`, made once for the module against two scripted servers that stay up for it;
    each case gets its own copy of the file (the run, mp and mp2 are the same in every case,
    and so are the servers' URLs: only the one changed flag differs). Yields (template file,
    the run's argv without --db, server, other server)."""
    from core.store import replace_item_set
    from tests.fake_openai import FakeOpenAI

    path = tmp_path_factory.mktemp("resumable") / "same.duckdb"
    store = copy_of(_initialised_template, path)
    sample = store.df(
        "SELECT * FROM items WHERE item_set = 'misprompt-sample' ORDER BY item_id LIMIT 2"
    )
    for name in ("mp", "mp2"):
        frame = sample.assign(item_set=name)

        def write(con: Any, n: str = name, f: pd.DataFrame = frame) -> bool:
            return replace_item_set(con, n, "misprompt", f, origin="test")

        store.transaction(write)
    with FakeOpenAI() as server, FakeOpenAI() as other:
        base = [
            "run",
            "misprompt",
            "--items",
            "mp",
            "--base-url",
            server.url,
            "--model",
            "fake-model",
            "--run-name",
            "same",
            "--quiet",
        ]
        code, out, err = _in_process(cli.main, [*base, "--db", str(path)])
        assert code == 0, err
        yield path, base, server, other


@pytest.mark.parametrize("change,expected", RESUME_CHANGES)
def test_resume_with_other_parameters_is_refused_and_changes_nothing(
    change: Callable[[list[str], dict], list[str]],
    expected: Callable[[tuple], list[str]],
    _resumable_run,
    db_path: Path,
    capsys,
):
    """A real Mis-prompt run (2 items, judged) through `python -m core run misprompt`, then the
    same --run-name with one thing changed: exit 1, each difference named, no request sent,
    no row changed."""

    template, base, server, other = _resumable_run
    store = copy_of(template, db_path)
    base = [*base, "--db", str(db_path)]
    argv = change(base, {"url": server.url, "other_url": other.url})
    before = snapshot(store)
    n_requests = len(server.chat_requests) + len(other.chat_requests)
    code, out, err = run_cli(argv, capsys)
    assert len(server.chat_requests) + len(other.chat_requests) == n_requests  # none sent
    assert code == 1, (out, err)
    assert err.startswith("error: run 'same' already exists with other settings: "), err
    assert err.count("\n") == 1 and "Traceback" not in err
    for text in expected(_defaults()):
        assert text in err, err
    assert snapshot(store) == before


def test_resume_with_the_same_parameters_continues(initialised_store: Store, capsys):
    """Same flags (concurrency and limit may change: they say how, not what) → resumed."""
    from tests.fake_openai import FakeOpenAI

    store = initialised_store
    with FakeOpenAI() as server:
        base = [
            "run",
            "misprompt",
            "--items",
            "misprompt-sample",
            "--base-url",
            server.url,
            "--model",
            "fake-model",
            "--run-name",
            "again",
            "--db",
            str(store.path),
            "--quiet",
            "--temperature",
            "0.0",
        ]
        code, out, err = run_cli([*base, "--limit", "2"], capsys)
        assert code == 0, err
        code, out, err = run_cli([*base, "--limit", "3", "--concurrency", "2"], capsys)
    assert code == 0, err
    assert "3/3 done" in out
    assert store.scalar("SELECT count(*) FROM responses WHERE run_id = 'again'") == 3


def _stored(**over: Any) -> dict:
    params = {
        "temperature": 0.0,
        "max_tokens": 512,
        "needs_judge": True,
        "limit": None,
        "concurrency": None,
        "use_cache": True,
        "item_set_version": "2026-01-01 00:00:00",
        "endpoint": {"base_urls": ["http://a/v1"]},
        "judge": {"base_urls": ["http://a/v1"]},
    }
    params.update(over.pop("params", {}))
    row = {
        "benchmark": "misprompt",
        "item_set": "s",
        "model": "m",
        "setting": "zero-shot",
        "mode": "proactive",
        "judge_model": "j",
        "template_id": "t1",
        "params": json.dumps(params),
    }
    row.update(over)
    return row


def _spec_params(**over: Any) -> tuple[Any, dict]:
    from core.engine.endpoints import Endpoint
    from core.engine.runner import RunSpec

    urls = over.pop("urls", ("http://a/v1",))
    judge_urls = over.pop("judge_urls", ("http://a/v1",))
    spec = RunSpec(
        run_id="r",
        benchmark="misprompt",
        item_set=over.pop("item_set", "s"),
        endpoint=Endpoint("e", urls, over.pop("model", "m")),
        judge=Endpoint("j", judge_urls, over.pop("judge_model", "j")),
        setting=over.pop("setting", "zero-shot"),
        mode=over.pop("mode", "proactive"),
        template_id=over.pop("template_id", "t1"),
    )
    params = json.loads(_stored()["params"])
    params.update(
        {"endpoint": {"base_urls": list(urls)}, "judge": {"base_urls": list(judge_urls)}, **over}
    )
    return spec, params


@pytest.mark.parametrize(
    "stored,new,expected",
    [
        ({}, {}, []),
        ({}, {"concurrency": 64, "limit": 10, "use_cache": False}, []),
        ({}, {"temperature": 1.7}, ["temperature: stored 0.0, now 1.7"]),
        ({}, {"model": "m2"}, ["model: stored 'm', now 'm2'"]),
        ({}, {"judge_model": "j2"}, ["judge model: stored 'j', now 'j2'"]),
        (
            {},
            {"urls": ("http://b/v1",)},
            ['endpoint URLs: stored ["http://a/v1"], now ["http://b/v1"]'],
        ),
        (
            {},
            {"judge_urls": ("http://b/v1",)},
            ['judge URLs: stored ["http://a/v1"], now ["http://b/v1"]'],
        ),
        ({}, {"template_id": "t2"}, ["template: stored 't1', now 't2'"]),
        (
            {},
            {"item_set_version": "2026-02-02 00:00:00"},
            [
                "item set version (imported at): stored '2026-01-01 00:00:00', now "
                "'2026-02-02 00:00:00'"
            ],
        ),
        ({"params": {"seed": 1}}, {}, ["seed: stored 1, now (none)"]),
        ({"params": {"item_set_version": None}}, {}, []),  # a run from before the check
        (
            {},
            {"temperature": 1.7, "max_tokens": 7},
            ["max_tokens: stored 512, now 7", "temperature: stored 0.0, now 1.7"],
        ),
    ],
    ids=[
        "same",
        "execution-only",
        "temperature",
        "model",
        "judge-model",
        "urls",
        "judge-urls",
        "template",
        "item-set-version",
        "param-dropped",
        "legacy-run",
        "two-at-once",
    ],
)
def test_check_resume(stored: dict, new: dict, expected: list[str]):
    from core.engine.runner import check_resume

    spec, params = _spec_params(**new)
    assert check_resume(_stored(**stored), spec, params) == expected


# -- 5./6. client faults against the scripted server ----------------------------------------------

MSG = [{"role": "user", "content": "one two three four five six seven"}]


def _chat(
    server_url: str,
    faults_then_ok: bool,
    stream: bool = False,
    timeout_s: float = 5.0,
    **client_kw: Any,
) -> tuple[Any, list[dict], float]:
    """One chat through ModelClient; (result or CallFailed, call records, elapsed s)."""
    import asyncio
    import time

    from core.engine.client import CURRENT_SINK, CallFailed, CallSink, ModelClient
    from core.engine.endpoints import Endpoint

    client_kw.setdefault("backoff_base_s", 0.2)
    client_kw.setdefault("backoff_max_s", 0.2)
    client = ModelClient(
        Endpoint("fake", (server_url,), "fake-model", timeout_s=timeout_s), **client_kw
    )
    sink = CallSink()

    async def go() -> Any:
        CURRENT_SINK.set(sink)
        try:
            return await client.chat(MSG, on_token=(lambda piece: None) if stream else None)
        except CallFailed as exc:
            return exc
        finally:
            await client.aclose()

    started = time.perf_counter()
    outcome = asyncio.run(go())
    return outcome, sink.calls, time.perf_counter() - started


PAST_DATE = "Wed, 21 Oct 2015 07:28:00 GMT"

# fault, stream?, expected error text of the first attempt (recorded in calls.error)
TRANSIENT_FAULTS = [
    pytest.param(
        {"status": 500}, False, "HTTP 500: Error code: 500 - scripted error 500", id="http-500"
    ),
    pytest.param({"status": 429, "retry_after": "0.3"}, False, "HTTP 429", id="429-seconds"),
    pytest.param({"status": 429, "retry_after": PAST_DATE}, False, "HTTP 429", id="429-past-date"),
    pytest.param({"status": 429, "retry_after": "soon"}, False, "HTTP 429", id="429-garbage"),
    pytest.param({"status": 429, "retry_after": "0"}, False, "HTTP 429", id="429-zero"),
    pytest.param({"delay": 6.0}, False, "timeout: no complete reply within 2 s", id="timeout-slow"),
    pytest.param(
        {"reset_mid_body": True}, False, "connection error: ReadError: ", id="reset-mid-body"
    ),
    pytest.param({"drop": True}, False, "connection error: ", id="dropped"),
    pytest.param({"malformed": True}, False, "malformed response body", id="garbled-json"),
    pytest.param(
        {"cut_stream_after": 2}, True, "stream ended before completion (after ", id="cut-stream"
    ),
]


@pytest.mark.parametrize("fault,stream,expected", TRANSIENT_FAULTS)
def test_transient_fault_is_recorded_with_its_cause_then_retried(
    fault: dict, stream: bool, expected: str
):
    """Two faulty replies, then a good one: the answer arrives on attempt 3; each failed
    attempt is a call record with a non-empty error naming the fault; the pause before each
    retry is the server's Retry-After when it is usable, else exponential backoff (≥ half the
    0.2 s ceiling here) — never the zero pause an expired date used to give."""
    from tests.fake_openai import FakeOpenAI

    # only the slow-reply case waits for the client's timeout (2 s: the good third reply must
    # still fit in it on a loaded machine); the others get one no loaded
    # machine reaches, so a dropped connection is never read as a timeout (CI under load did)
    timeout_s = 2.0 if "delay" in fault else 30.0
    with FakeOpenAI(faults=[fault, fault]) as server:
        outcome, calls, _ = _chat(server.url, True, stream=stream, timeout_s=timeout_s)
        times = [r["time"] for r in server.chat_requests]
    assert not isinstance(outcome, Exception), outcome
    assert outcome.attempts == 3 and outcome.text.startswith("echo:")
    assert [c["status"] for c in calls] == ["error", "error", "ok"]
    for call in calls[:2]:
        assert call["error"] and call["error"].startswith(expected), call["error"]
        assert call["error"].strip() != "connection error:"  # a cause, not an empty shell
    gaps = [b - a for a, b in zip(times, times[1:])]
    floor = 0.3 if fault.get("retry_after") == "0.3" else 0.1
    assert min(gaps) >= floor, gaps


@pytest.mark.parametrize(
    "header,expected",
    [
        ("2", 2.0),
        ("0", None),
        ("-3", None),
        ("nan", None),
        ("inf", None),
        ("soon", None),
        (PAST_DATE, None),
        ("", None),
    ],
    ids=["seconds", "zero", "negative", "nan", "inf", "garbage", "past-date", "empty"],
)
def test_retry_after_parsing_falls_back_to_backoff(header: str, expected: float | None):
    from core.engine.client import _retry_after_seconds

    assert _retry_after_seconds({"retry-after": header}) == expected


def test_retry_after_in_the_future_is_honoured():
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    from core.engine.client import _retry_after_seconds

    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    seconds = _retry_after_seconds({"retry-after": when})
    assert seconds is not None and 25 <= seconds <= 30


def test_a_stream_cut_for_good_fails_with_its_cause():
    from core.engine.client import CallFailed
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI(faults=[{"cut_stream_after": 3}] * 3) as server:
        outcome, calls, _ = _chat(
            server.url, True, stream=True, max_retries=2, backoff_base_s=0.01, backoff_max_s=0.02
        )
    assert isinstance(outcome, CallFailed)
    sent = len("echo: one two ")  # three content chunks before the cut: "echo: " "one " "two "
    assert outcome.last_error.startswith(
        f"stream ended before completion (after {sent} chars): ReadError"
    ), outcome.last_error
    assert "gave up after 3 attempts" in str(outcome)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_refused_connections_trip_the_breaker_and_resume_retries(store: Store):
    """Nobody listens at the URL: after REFUSED_LIMIT refusals in a row the remaining units
    fail at once with one clear error (stderr once, exit 1) instead of each paying the full
    backoff; the same --run-name against the now-running server completes every unit."""
    from core.engine.client import REFUSED_LIMIT
    from tests.echo_task import create_item_set
    from tests.fake_openai import FakeOpenAI

    n = 6
    create_item_set(store, "s", "echo", [f"prompt {i}" for i in range(n)])
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    import time

    started = time.perf_counter()
    code, out, err = _echo_run(store, url, "down", ["--concurrency", "4"], {})
    elapsed = time.perf_counter() - started
    message = (
        f"endpoint {url} refused {REFUSED_LIMIT} connections in a row; remaining items "
        "not sent — re-run with the same --run-name to retry them"
    )
    assert code == 1, err
    assert err.count(f"error: {message}") == 1 and "Traceback" not in err, err
    assert f"0/{n} done, {n} failed" in out
    errors = [r[0] for r in store.rows("SELECT error FROM responses WHERE run_id = 'down'")]
    assert len(errors) == n and all(message in e for e in errors)
    # REFUSED_LIMIT attempts, plus at most one per other worker already in flight when it tripped
    attempts = store.scalar("SELECT count(*) FROM calls WHERE run_id = 'down'")
    assert REFUSED_LIMIT <= attempts < REFUSED_LIMIT + 4, attempts
    # default backoff is 0.5 s doubling: 5 retries of 6 units at concurrency 4 took ~27 s
    assert elapsed < 15, elapsed
    with FakeOpenAI(port=port) as server:
        code, out, err = _echo_run(store, url, "down", ["--concurrency", "4"], {})
        assert len(server.chat_requests) == 2 * n
    assert code == 0, err
    assert f"{n}/{n} done" in out


def test_breaker_counts_only_consecutive_refusals():
    """A refusal streak broken by an answer starts again; 0 disables the breaker."""
    import asyncio

    from core.engine.client import ModelClient
    from core.engine.endpoints import Endpoint

    async def go() -> tuple[str | None, str | None, str | None, str | None]:
        client = ModelClient(Endpoint("e", ("http://127.0.0.1:9/v1",), "m"), refused_limit=3)
        for _ in range(2):
            client._note_outcome("http://127.0.0.1:9/v1", True)
        first = client.circuit_message()
        client._note_outcome("", False)
        client._note_outcome("http://127.0.0.1:9/v1", True)
        second = client.circuit_message()
        for _ in range(2):
            client._note_outcome("http://127.0.0.1:9/v1", True)
        third = client.circuit_message()
        client.refused_limit = 0
        return first, second, third, client.circuit_message()

    first, second, third, disabled = asyncio.run(go())
    assert first is None and second is None and disabled is None
    assert third is not None and "refused 3 connections in a row" in third


def test_a_run_started_by_the_app_logs_its_command_without_url_credentials(store: Store):
    """The Runs page starts `python -m core run …` as a job whose log begins with the command:
    a --base-url with ?api-key= must appear there as ***, like everywhere else."""
    import time

    from core.services.jobs import start_cli_run
    from tests.echo_task import create_item_set
    from tests.fake_openai import FakeOpenAI

    create_item_set(store, "s", "echo", ["prompt 0", "prompt 1"])
    with FakeOpenAI(fault_fn=lambda body: {"echo_key": True}) as server:
        url = f"{server.url}?api-key={QUERY_SECRET}"
        job = start_cli_run(
            [
                "--items",
                "s",
                "--base-url",
                url,
                "--model",
                "fake-model",
                "--run-name",
                "job",
                "--quiet",
            ],
            store.path,
            module="tests.echo_task",
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and store.scalar(
            "SELECT status FROM runs WHERE run_id = 'job'"
        ) not in ("done", "failed"):
            time.sleep(0.2)
        assert job.wait(timeout=60) is not None  # the whole log: after the process ended
        assert all(QUERY_SECRET in r["path"] for r in server.chat_requests)
    log = job.log_path.read_text(encoding="utf-8")
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'job'") == "done", log
    assert (
        log.startswith("$ python -m tests.echo_task --items s --base-url ") and "api-key=***" in log
    )
    assert QUERY_SECRET not in log
    assert leaks(store, QUERY_SECRET) == []


def test_the_runs_page_refuses_a_pasted_key_and_job_logs_never_show_one(store: Store):
    """The Runs page builds its command with jobs.build_cli_args (a ValueError is shown as a
    warning and disables Start): a key pasted in the variable-name field is refused there
    without being echoed; and should a job get one anyway, its log shows ***."""

    from core.services import jobs
    from tests.echo_task import create_item_set

    pasted = "sk-proj-PASTED-9d8c7b6a5f4e"
    with pytest.raises(ValueError) as info:
        jobs.build_cli_args(
            "misprompt",
            "misprompt-sample",
            base_url="http://127.0.0.1:9/v1",
            model="m",
            api_key_env=pasted,
            setting="zero-shot",
        )
    assert (
        "the value given to the API key variable field is not a valid environment variable name"
        in str(info.value)
        and pasted not in str(info.value)
    )
    args = jobs.build_cli_args(
        "misprompt",
        "s",
        base_url="http://h:1/v1",
        model="m",
        api_key_env="MY_KEY",
        setting="zero-shot",
    )
    assert args[args.index("--api-key-env") + 1] == "MY_KEY"

    create_item_set(store, "s", "echo", ["prompt 0"])
    job = jobs.start_cli_run(
        [
            "--items",
            "s",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--api-key-env",
            pasted,
            "--run-name",
            "pasted",
            "--quiet",
        ],
        store.path,
        module="tests.echo_task",
    )
    assert job.wait(timeout=60) == 1  # the whole log: after the process ended
    log = job.log_path.read_text(encoding="utf-8")
    assert "--api-key-env *** " in log and pasted not in log
    assert "error: the value given to --api-key-env is not a valid environment variable name" in log
    assert leaks(store, pasted) == []


AZURE_CODE = "fn-code-Q9xW2e7RtY4u"


def test_an_azure_functions_code_in_a_base_url_is_redacted_everywhere() -> None:
    """?code= is Azure Functions' key: redacted like ?api-key= in what is stored and printed,
    and scrubbed from text that quotes it."""
    from core.engine.endpoints import Endpoint, redact_url, url_secrets

    url = f"https://fn.azurewebsites.net/api/v1?code={AZURE_CODE}&country_code=FR"
    assert redact_url(url) == "https://fn.azurewebsites.net/api/v1?code=***&country_code=FR"
    assert url_secrets(url) == [AZURE_CODE]
    assert AZURE_CODE not in json.dumps(Endpoint("e", (url,), "m").public_dict())


def test_a_key_in_the_base_url_of_an_app_started_run_is_not_on_its_command_line(
    store: Store,
) -> None:
    """The app starts `python -m core run … --base-url URL`: a command line is readable by every
    local user (/proc/PID/cmdline, ps), so a ?code= key must reach the child another way. It is
    not in the command line, the run log or the database, and the server still receives it."""
    import time

    from core.services.jobs import start_cli_run
    from tests.echo_task import create_item_set
    from tests.fake_openai import FakeOpenAI

    create_item_set(store, "s", "echo", [f"prompt {i}" for i in range(3)])
    with FakeOpenAI(latency=0.1) as server:
        url = f"{server.url}?code={AZURE_CODE}"
        job = start_cli_run(
            ["--items", "s", "--base-url", url, "--model", "fake-model"]
            + ["--concurrency", "1", "--run-name", "azure", "--quiet"],
            store.path,
            module="tests.echo_task",
        )
        cmdline, deadline = "", time.monotonic() + 10
        while not cmdline and time.monotonic() < deadline:  # empty until exec is done
            with open(f"/proc/{job.pid}/cmdline", "rb") as handle:
                cmdline = handle.read().decode()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and store.scalar(
            "SELECT status FROM runs WHERE run_id = 'azure'"
        ) not in ("done", "failed"):
            time.sleep(0.2)
        assert job.wait(timeout=60) is not None  # the whole log: after the process ended
        sent = server.chat_requests
    log = job.log_path.read_text(encoding="utf-8")
    assert "--base-url" in cmdline and "code=***" in cmdline
    assert AZURE_CODE not in cmdline and AZURE_CODE not in " ".join(job.command)
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'azure'") == "done", log
    assert len(sent) == 6 and all(f"code={AZURE_CODE}" in r["path"] for r in sent)
    assert AZURE_CODE not in log
    assert leaks(store, AZURE_CODE) == []


def test_an_endpoint_that_accepts_and_hangs_trips_the_breaker_on_timeouts(
    store: Store, tmp_path: Path
) -> None:
    """A server that takes every connection and never answers: each item used to cost
    timeout × attempts (20 items at concurrency 2: tens of seconds). Consecutive timeouts with
    no reply in between trip the breaker like refusals do: the run ends after about two waves of
    timeouts, every item failed with one clear message, and a resume against a server that
    answers completes."""
    from core.engine.client import default_timeout_limit
    from tests.echo_task import create_item_set
    from tests.fake_openai import FakeOpenAI

    n, timeout_s, retries, concurrency = 20, 0.5, 2, 2
    create_item_set(store, "s", "echo", [f"prompt {i}" for i in range(n)])
    hanging = True
    with FakeOpenAI(fault_fn=lambda body: {"hang": True} if hanging else None) as server:
        models = tmp_path / "models.toml"
        models.write_text(
            f'[endpoints.hung]\nbase_url = "{server.url}"\nmodel = "fake-model"\n'
            f"timeout_s = {timeout_s}\nmax_retries = {retries}\n"
            f"max_concurrency = {concurrency}\n",
            encoding="utf-8",
        )

        def run() -> tuple[int, str, str]:
            from tests.echo_task import _echo_main

            return _in_process(
                _echo_main,
                ["--db", str(store.path), "--items", "s", "--endpoint", "hung"]
                + ["--models-file", str(models), "--run-name", "hung", "--no-judge", "--quiet"],
            )

        code, out, err = run()
        limit = default_timeout_limit(concurrency)
        message = (
            f"endpoint {server.url} accepted connections but did not answer {limit} "
            f"requests in a row within {timeout_s:g} s"
        )
        assert code == 1, err
        assert err.count(f"error: {message}") == 1, err
        assert "Traceback" not in err
        assert f"0/{n} done, {n} failed" in out
        errors = [r[0] for r in store.rows("SELECT error FROM responses WHERE run_id = 'hung'")]
        tripped = [e for e in errors if message in e]
        timed_out = [e for e in errors if f"no complete reply within {timeout_s:g} s" in e]
        # those in flight when it tripped may have used their last attempt: failed as timeouts
        assert len(errors) == n and len(tripped) + len(timed_out) == n, errors
        assert len(timed_out) <= concurrency, errors
        attempts = store.scalar("SELECT count(*) FROM calls WHERE run_id = 'hung'")
        assert limit <= attempts < limit + concurrency, attempts
        # without the breaker every item pays timeout × attempts: n × (retries + 1) requests;
        # the count above (one streak, at most a wave more) is the proof, not the wall time
        assert attempts < n * (retries + 1) / 3, attempts
        hanging = False
        code, out, err = run()
    assert code == 0, err
    assert f"{n}/{n} done" in out


def test_breaker_counts_only_consecutive_timeouts():
    """A timeout streak broken by any reply starts again; the limit follows the concurrency
    (two full waves); 0 disables it."""
    import asyncio

    from core.engine.client import TIMEOUT_LIMIT_MIN, ModelClient
    from core.engine.endpoints import Endpoint

    url = "http://127.0.0.1:9/v1"

    async def go() -> list[str | None]:
        client = ModelClient(Endpoint("e", (url,), "m", max_concurrency=1))
        assert client.timeout_limit == TIMEOUT_LIMIT_MIN
        assert ModelClient(Endpoint("w", (url,), "m", max_concurrency=16)).timeout_limit == 32
        seen = []
        for _ in range(TIMEOUT_LIMIT_MIN - 1):
            client._note_outcome(url, False, True)
        seen.append(client.circuit_message())
        client._note_outcome(url, False)  # an answer (even an HTTP error) resets the streak
        for _ in range(TIMEOUT_LIMIT_MIN - 1):
            client._note_outcome(url, False, True)
        seen.append(client.circuit_message())
        client._note_outcome(url, False, True)
        seen.append(client.circuit_message())
        client.timeout_limit = 0
        seen.append(client.circuit_message())
        return seen

    first, second, third, disabled = asyncio.run(go())
    assert first is None and second is None and disabled is None
    assert third is not None and f"did not answer {TIMEOUT_LIMIT_MIN} requests in a row" in third


def test_the_fake_server_is_silent_when_a_client_hangs_up_but_not_on_its_own_faults():
    """A handler thread of an earlier test's server that finds its client gone must not print
    a traceback into a later test's captured stderr (an in-process run here once failed on
    "Traceback" from another test's BrokenPipeError); the server's own faults still print."""
    import io
    from contextlib import redirect_stderr

    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        httpd = server._httpd
        assert httpd is not None
        for error, printed in (
            (BrokenPipeError(32, "Broken pipe"), False),
            (ValueError("x"), True),
        ):
            buffer = io.StringIO()
            with redirect_stderr(buffer):
                try:
                    raise error
                except Exception:
                    httpd.handle_error(None, ("127.0.0.1", 1))
            assert ("Traceback" in buffer.getvalue()) is printed, buffer.getvalue()
