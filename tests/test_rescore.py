"""`rescore`: judging is a stage of its own — re-judge / re-score stored responses, never the model.

Every model request goes to a real local HTTP server (tests/fake_openai.py). A second server
plays the new judge, so requests to the model under test and to the judge are counted apart.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import f1_score

from core.benchmarks.misprompt import items as mi
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.cli import main as cli
from core.store import Store
from tests.conftest import copy_of
from tests.core_cli import run_core, run_misprompt
from tests.fake_openai import FakeOpenAI
from tests.test_bbm_run import responder_for, run_bbm, sample  # the scripted BBM model
from tests.test_misprompt_run import Script, _labels_for, _subset


@pytest.fixture(scope="module")
def _judged_template(tmp_path_factory) -> tuple[Path, list[dict]]:
    """Run r1 (14 items, judged by the scripted judge) made once per module by the CLI; each
    test gets its own copy of the file."""
    path = tmp_path_factory.mktemp("judged") / "r1.duckdb"
    store = Store.open(path)
    data, rows = _subset(8, 6)
    mi.import_bytes(store, data, "small.csv", "small")
    script = Script(rows)
    with FakeOpenAI(responder=script.respond) as server:
        done = run_misprompt(store.path, server.url, "--items", "small", "--run-name", "r1")
        assert done.returncode == 0, done.stderr
    return path, rows


@pytest.fixture
def judged_run(db_path: Path, _judged_template) -> tuple[Store, list[dict]]:
    template, rows = _judged_template
    return copy_of(template, db_path), [dict(r) for r in rows]


def _varying(body: dict, k: str) -> bool:
    """A second judge whose labels vary with the request (so κ is defined and not trivial)."""
    return sum(map(ord, str(body["messages"]) + k)) % 3 != 0


def _rejudge(store: Store, model: str, name: str, value) -> None:
    """Rescore run r1 as judging `name` with a scripted judge `model` whose label k is
    value(request body, k); the run's model is never asked (a server of its own)."""

    def reply(body: dict) -> str:
        return json.dumps({k: {"rationale": "r", "value": value(body, k)} for k in JUDGE_LABELS})

    with FakeOpenAI(responder=reply) as judge:
        args = ["rescore", "--source", "r1", "--judge-base-url", judge.url]
        args += ["--judge-model", model, "--as", name, "--quiet", "--db", str(store.path)]
        assert cli(args) == 0


def _table(store: Store, sql: str, params: list | None = None) -> list[tuple]:
    return sorted(store.rows(sql, params or []), key=repr)


def test_rescore_asks_only_the_judge_and_keeps_the_default_judging(judged_run, capsys) -> None:
    store, rows = judged_run
    before_default = _table(store, "SELECT * FROM results WHERE run_id='r1'")
    before_responses = _table(store, "SELECT * FROM responses WHERE run_id='r1'")
    with FakeOpenAI(
        responder=lambda body: json.dumps(
            {k: {"rationale": "all no", "value": False} for k in JUDGE_LABELS}
        )
    ) as judge:
        rc = cli(
            [
                "rescore",
                "--source",
                "r1",
                "--judge-base-url",
                judge.url,
                "--judge-model",
                "judge-two",
                "--as",
                "second",
                "--quiet",
                "--db",
                str(store.path),
            ]
        )
        requests = judge.chat_requests
    out = capsys.readouterr()
    assert rc == 0, out.err
    # one judge request per stored response, every one a judge request; no model request
    assert len(requests) == len(rows)
    assert all(r["body"].get("response_format") for r in requests)
    assert "0 model calls" in out.out and f"{len(rows)} judge calls" in out.out
    assert (
        store.scalar(
            "SELECT count(*) FROM calls WHERE run_id='r1' AND role='model' "
            "AND created_at > (SELECT created_at FROM judgings WHERE judging='second')"
        )
        == 0
    )
    # the run's own judging and its responses are untouched; the new one sits beside them
    assert (
        _table(store, "SELECT * FROM results WHERE run_id='r1' AND judging='default'")
        == before_default
    )
    assert _table(store, "SELECT * FROM responses WHERE run_id='r1'") == before_responses
    second = store.df("SELECT * FROM misprompt_verdicts WHERE run_id='r1' AND judging='second'")
    assert len(second) == len(rows) and (second["status"] == "ok").all()
    assert not second[list(JUDGE_LABELS)].any().any()
    assert (second["judge_model"] == "judge-two").all()
    judging = store.df("SELECT * FROM judgings WHERE run_id='r1'").iloc[0]
    assert (judging["judging"], judging["kind"], judging["status"], judging["n_planned"]) == (
        "second",
        "judge",
        "done",
        len(rows),
    )
    assert store.scalar("SELECT judging FROM current_judgings WHERE run_id='r1'") == "second"


def test_metrics_select_a_judging_and_default_to_the_latest(judged_run, capsys) -> None:
    store, rows = judged_run
    _rejudge(store, "judge-two", "det-only", lambda body, k: k == "detection")
    capsys.readouterr()

    def detection_f1(*flags: str) -> float:
        assert (
            cli(
                [
                    "metrics",
                    "misprompt",
                    "--source",
                    "r1",
                    "--bootstrap",
                    "0",
                    "--db",
                    str(store.path),
                    *flags,
                ]
            )
            == 0
        )
        table = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
        row = table[
            (table["evaluator"] == "judge")
            & (table["category_level"] == "all")
            & (table["metric"] == "detection")
        ]
        return float(row["f1"].iloc[0])

    truth = [r["error"] == "error" for r in rows]
    default_pred = [_labels_for(r)["detection"] for r in rows]
    # independent reference: sklearn's F1 over items (erroneous = positive class)
    assert detection_f1("--judging", "default") == pytest.approx(
        100 * f1_score(truth, default_pred), abs=0.01
    )
    # the new judge says detection on every response, controls included
    assert detection_f1("--judging", "det-only") == pytest.approx(
        100 * f1_score(truth, [True] * len(rows)), abs=0.01
    )
    # without the flag: the latest finished judging
    assert detection_f1() == detection_f1("--judging", "det-only")
    assert (
        cli(
            ["metrics", "misprompt", "--source", "r1", "--judging", "nope", "--db", str(store.path)]
        )
        == 2
    )
    assert "no judging 'nope'" in capsys.readouterr().err


def test_rescore_resumes_and_refuses_another_setup_under_the_same_name(judged_run, capsys) -> None:
    store, rows = judged_run
    reply = json.dumps({k: {"rationale": "r", "value": True} for k in JUDGE_LABELS})
    with FakeOpenAI(responder=lambda body: reply) as judge:
        args = [
            "rescore",
            "--source",
            "r1",
            "--judge-base-url",
            judge.url,
            "--judge-model",
            "judge-two",
            "--as",
            "again",
            "--quiet",
            "--db",
            str(store.path),
            "--no-cache",
        ]
        assert cli(args) == 0
        lost = [r["id"] for r in rows[:3]]
        store.execute("DELETE FROM results WHERE judging='again' AND item_id IN (?, ?, ?)", lost)
        n_before = len(judge.chat_requests)
        assert cli(args) == 0
        assert len(judge.chat_requests) - n_before == 3  # only what was missing
        snapshot = _table(store, "SELECT * FROM results WHERE judging='again'")
        other = [
            "rescore",
            "--source",
            "r1",
            "--judge-base-url",
            judge.url,
            "--judge-model",
            "judge-three",
            "--as",
            "again",
            "--quiet",
            "--db",
            str(store.path),
        ]
        capsys.readouterr()
        assert cli(other) == 1
    err = capsys.readouterr().err
    assert "judging 'again' of run 'r1' exists with another set-up" in err
    assert "judge model: stored 'judge-two', now 'judge-three'" in err
    assert _table(store, "SELECT * FROM results WHERE judging='again'") == snapshot
    assert (
        cli(
            [
                "rescore",
                "--source",
                "r1",
                "--judge-base-url",
                "http://127.0.0.1:9/v1",
                "--judge-model",
                "x",
                "--as",
                "default",
                "--db",
                str(store.path),
            ]
        )
        == 1
    )
    assert "'default' is the run's own judging" in capsys.readouterr().err


def test_rescore_parser_benchmarks_make_no_request_and_match_the_run(
    initialised_store, capsys
) -> None:
    from tests.test_errorbench_run import responder as eb_responder

    store = initialised_store
    with FakeOpenAI(responder=eb_responder) as server:
        assert (
            cli(
                [
                    "run",
                    "errorbench",
                    "--items",
                    "errorbench-sample",
                    "--limit",
                    "2",
                    "--base-url",
                    server.url,
                    "--model",
                    "scripted",
                    "--run-name",
                    "eb",
                    "--quiet",
                ]
            )
            == 0
        )
    with FakeOpenAI(responder=responder_for(sample())) as server:
        assert run_bbm(server.url, "--method", "direct_step", "--run-name", "bb", "--quiet") == 0
    for run_id in ("eb", "bb"):
        calls_before = store.scalar("SELECT count(*) FROM calls")
        assert cli(["rescore", "--source", run_id, "--as", "reparsed", "--quiet"]) == 0
        assert store.scalar("SELECT count(*) FROM calls") == calls_before  # no HTTP at all
        got = store.df(
            "SELECT item_id, variant, status, metadata AS scores FROM results "
            "WHERE run_id = ? AND judging = 'reparsed'",
            [run_id],
        )
        stored = store.df(
            "SELECT item_id, variant, scores FROM responses WHERE run_id = ? AND status = 'ok'",
            [run_id],
        )
        # every stored response re-scored (none failed); status is the parse status now, the
        # same record as the run's own scoring wrote
        assert len(got) == len(stored) > 0 and (got["status"] != "failed").all()
        pairs = store.rows(
            "SELECT n.status, d.status, n.answer, d.answer, n.correct, d.correct "
            "FROM results n JOIN results d USING (run_id, item_id, variant) "
            "WHERE n.run_id = ? AND n.judging = 'reparsed' AND d.judging = 'default'",
            [run_id],
        )
        assert len(pairs) == len(got)
        assert all(r[0::2] == r[1::2] for r in pairs), pairs
        merged = got.merge(stored, on=["item_id", "variant"], suffixes=("_new", "_run"))
        for new, old in zip(merged["scores_new"], merged["scores_run"]):
            new, old = json.loads(new), json.loads(old)
            shared = set(new) & set(old) - {"finish_reason"}
            assert shared and {k: new[k] for k in shared} == {k: old[k] for k in shared}
    out = capsys.readouterr().out
    assert "0 model calls" in out


def test_v2_database_migrates_verdicts_into_the_default_judging(tmp_path: Path) -> None:
    """A file written by schema v2 (before judgings) opens with its verdicts as 'default'."""
    import duckdb

    from core.store import MIGRATIONS

    path = tmp_path / "v2.duckdb"
    con = duckdb.connect(str(path))
    for sql in MIGRATIONS[:2]:
        con.execute(sql)
    con.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    con.execute("INSERT INTO runs (run_id, benchmark, status) VALUES ('old', 'misprompt', 'done')")
    con.execute(
        "INSERT INTO verdicts (run_id, item_id, variant, status, detection) "
        "VALUES ('old', 'i1', 'zero-shot', 'ok', true)"
    )
    con.close()
    store = Store.open(path)
    assert store.scalar("SELECT value FROM meta WHERE key='schema_version'") == str(len(MIGRATIONS))
    assert store.rows("SELECT run_id, judging, detection FROM misprompt_verdicts") == [
        ("old", "default", True)
    ]
    assert store.rows("SELECT run_id, judging FROM current_judgings") == [("old", "default")]


def test_judge_vs_judge_agreement_matches_sklearn(judged_run) -> None:
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    from core.benchmarks.misprompt import agreement

    store, rows = judged_run
    _rejudge(store, "j2", "j2", _varying)
    table = agreement.judging_agreement(store, "r1", "default", "j2").set_index("label")
    pairs = agreement.pairs(store, "r1", "default", "j2")
    assert len(pairs) == len(rows)
    for label in JUDGE_LABELS:
        a, b = pairs[f"a_{label}"].astype(bool), pairs[f"b_{label}"].astype(bool)
        (ff, ft), (tf, tt) = confusion_matrix(a, b, labels=[False, True])
        row = table.loc[label]
        assert (row["both_true"], row["a_only"], row["b_only"], row["both_false"]) == (
            tt,
            tf,
            ft,
            ff,
        )
        if a.nunique() + b.nunique() > 2:  # κ defined (a varying judge: mostly)
            assert row["kappa"] == pytest.approx(cohen_kappa_score(a, b))
        else:
            assert pd.isna(row["kappa"])
    listed = agreement.judgings(store, ("r1",))
    assert listed["judging"].tolist() == ["default", "j2"]
    assert listed["current"].tolist() == [False, True]
    assert listed["verdicts_ok"].tolist() == [len(rows), len(rows)]


def test_metrics_and_export_of_a_parser_judging(initialised_store, tmp_path, capsys) -> None:
    """--judging NAME reads what that judging stored: corrupt one stored score and the metrics
    (and the export) of that judging show it, while the run's own numbers do not change."""
    import io

    store = initialised_store
    with FakeOpenAI(responder=responder_for(sample())) as server:
        assert run_bbm(server.url, "--method", "direct_trace", "--run-name", "bt", "--quiet") == 0
    assert cli(["rescore", "--source", "bt", "--as", "re", "--quiet"]) == 0
    capsys.readouterr()

    def accuracy(*flags: str) -> float:
        assert cli(["metrics", "bbm", "--source", "bt", *flags]) == 0
        table = pd.read_csv(io.StringIO(capsys.readouterr().out))
        row = table[
            (table["measure"] == "mistake_location_accuracy")
            & (table["subset"] == "all")
            & (table["task"] == "Overall")
        ]
        return float(row["value"].iloc[0])

    own = accuracy()
    assert accuracy("--judging", "re") == own  # the same parser: the same numbers
    # make one correct trace wrong in the stored judging only
    item = store.scalar(
        "SELECT item_id FROM results WHERE judging = 're' "
        "AND json_extract(metadata, '$.location_correct')::BOOLEAN LIMIT 1"
    )
    store.execute(
        "UPDATE results SET metadata = json_object('predicted_index', 999, "
        "'parse_status', 'ok') WHERE judging = 're' AND item_id = ?",
        [item],
    )
    assert accuracy("--judging", "re") < own
    assert accuracy() == own
    assert cli(["metrics", "bbm", "--source", "bt", "--judging", "nope"]) == 2
    out = tmp_path / "bt.jsonl"
    assert cli(["export", "--source", "bt", "--out", str(out), "--judging", "re"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["judging"] for r in rows} == {"re"}
    assert [r["scores"]["predicted_index"] for r in rows if r["item_id"] == item] == [999]


def test_mis_prompt_page_picks_a_judging_and_shows_judge_vs_judge(judged_run) -> None:
    """The Runs view lists the run's judgings, lets the user pick one (in the URL) and shows
    both judgings' F1 per label beside their agreement (counts and κ as core computes them)."""
    from streamlit.testing.v1 import AppTest

    from core.benchmarks.misprompt import agreement

    store, rows = judged_run
    _rejudge(store, "j2", "j2", _varying)
    root = Path(__file__).resolve().parent.parent
    at = AppTest.from_file(str(root / "app.py"), default_timeout=120)
    at.switch_page("pages/misprompt_results.py")
    for key, value in {
        "view": "Runs",
        "run": "r1",
        "judging": "default",
        "judging_b": "j2",
    }.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    frames = [d.value for d in at.dataframe]
    listed = next(f for f in frames if "judging" in f.columns and "current" in f.columns)
    assert listed["judging"].tolist() == ["default", "j2"]
    pair = next(f for f in frames if "kappa" in f.columns)
    expected = agreement.judging_agreement(store, "r1", "default", "j2")
    assert pair["n"].tolist() == expected["n"].tolist() == [len(rows)] * len(JUDGE_LABELS)
    assert pair["both_true"].tolist() == expected["both_true"].tolist()
    assert "F1 default" in pair.columns and "F1 j2" in pair.columns
    assert at.query_params["judging"] in ("default", ["default"])


def test_the_audit_compares_people_with_the_current_judging(judged_run) -> None:
    """After a rescore, the audit's judge labels are the new judging's, and it says so."""
    from core.services import audit

    store, rows = judged_run
    _rejudge(store, "all-no", "all-no", lambda body, k: False)
    audit.create_audit(store, "a1", ["r1"], fraction=1.0, seed=0)
    queue = audit.audit_queue(store, "a1")
    assert len(queue) == len(rows)
    assert not queue[list(JUDGE_LABELS)].fillna(False).astype(bool).any().any()
    assert audit.judgings_of_audit(store, ["r1"])[["run_id", "judging"]].values.tolist() == [
        ["r1", "all-no"]
    ]


def _rescore_argv(store: Store, url: str, *extra: str) -> list[str]:
    return [
        "rescore",
        "--source",
        "r1",
        "--judge-base-url",
        url,
        "--judge-model",
        "judge-two",
        "--as",
        "again",
        "--quiet",
        "--db",
        str(store.path),
        *extra,
    ]


def test_a_second_rescore_of_a_running_judging_is_refused(judged_run) -> None:
    """Two `rescore` processes on one judging would both judge every missing verdict: the
    second is refused while the first's process runs (as `run` refuses a running run), and the
    judge is asked once per response."""
    import os
    import subprocess
    import sys
    import time

    store, _rows = judged_run
    n = store.scalar("SELECT count(*) FROM responses WHERE run_id = 'r1' AND status = 'ok'")
    reply = json.dumps({k: {"rationale": "r", "value": True} for k in JUDGE_LABELS})
    root = Path(__file__).resolve().parent.parent

    def start(url: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "core", *_rescore_argv(store, url, "--concurrency", "1")],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )

    # the first rescore is a process of its own (its pid is what the refusal names); the
    # second is the same command in this process (tests/core_cli.py), refused at once, so the
    # first needs to last only a moment after its first request: 14 × 0.15 s
    with FakeOpenAI(responder=lambda body: reply, latency=0.15) as judge:
        first = start(judge.url)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not judge.chat_requests:
            assert first.poll() is None, first.communicate()
            time.sleep(0.02)
        second = run_core(*_rescore_argv(store, judge.url, "--concurrency", "1"))
        out1, err1 = first.communicate(timeout=120)
        asked = len(judge.chat_requests)
    assert first.returncode == 0, err1
    assert second.returncode == 1, second.stdout + second.stderr
    assert f"judging 'again' of run 'r1' is being run by process {first.pid}" in second.stderr
    assert asked == n
    assert store.scalar("SELECT count(*) FROM results WHERE judging = 'again'") == n
    assert store.scalar("SELECT status FROM judgings WHERE judging = 'again'") == "done"


def test_resuming_a_judging_with_other_judge_max_tokens_is_refused(judged_run, capsys) -> None:
    """--judge-max-tokens shapes the verdicts (a reply cut at the limit parses differently):
    resuming a judging with another value is refused with the difference, nothing written."""
    store, rows = judged_run
    reply = json.dumps({k: {"rationale": "r", "value": True} for k in JUDGE_LABELS})
    with FakeOpenAI(responder=lambda body: reply) as judge:
        assert cli(_rescore_argv(store, judge.url, "--no-cache", "--judge-max-tokens", "300")) == 0
        lost = [r["id"] for r in rows[:2]]
        store.execute("DELETE FROM results WHERE judging='again' AND item_id IN (?, ?)", lost)
        before = _table(store, "SELECT * FROM results WHERE judging='again'")
        judging = _table(store, "SELECT * FROM judgings WHERE judging='again'")
        asked = len(judge.chat_requests)
        capsys.readouterr()
        assert cli(_rescore_argv(store, judge.url, "--no-cache", "--judge-max-tokens", "500")) == 1
        err = capsys.readouterr().err
        assert len(judge.chat_requests) == asked
        assert "judging 'again' of run 'r1' exists with another set-up" in err
        assert "judge max tokens: stored 300, now 500" in err
        assert _table(store, "SELECT * FROM results WHERE judging='again'") == before
        assert _table(store, "SELECT * FROM judgings WHERE judging='again'") == judging
        assert cli(_rescore_argv(store, judge.url, "--no-cache", "--judge-max-tokens", "300")) == 0
        assert len(judge.chat_requests) - asked == 2  # the same value resumes


# -- issue 20, point 7: resume a failed judging with a corrected URL; delete a judging --------


def _rescore_args(store: Store, url: str, *extra: str) -> list[str]:
    return [
        "rescore", "--source", "r1", "--judge-base-url", url, "--judge-model", "judge-two",
        "--as", "fixme", "--quiet", "--db", str(store.path), "--no-cache", *extra,
    ]  # fmt: skip


def test_a_failed_judging_resumes_with_a_corrected_url(judged_run, capsys) -> None:
    store, rows = judged_run
    dead = "http://127.0.0.1:9/v1"  # nothing listens: every judge call fails
    assert cli(_rescore_args(store, dead, "--max-retries", "0")) == 1
    assert store.scalar("SELECT status FROM judgings WHERE judging = 'fixme'") == "failed"
    reply = json.dumps({k: {"rationale": "r", "value": True} for k in JUDGE_LABELS})
    with FakeOpenAI(responder=lambda body: reply) as judge:
        capsys.readouterr()
        assert cli(_rescore_args(store, judge.url, "--concurrency", "2")) == 0, (
            capsys.readouterr().err
        )
        assert len(judge.chat_requests) == len(rows)
        row = store.df("SELECT status, params FROM judgings WHERE judging = 'fixme'").iloc[0]
        assert row["status"] == "done"
        params = json.loads(row["params"])
        assert params["judge"]["base_urls"] == [judge.url]
        assert params["earlier_judges"][0]["base_urls"] == [dead]
        n = store.scalar(
            "SELECT count(*) FROM results WHERE judging = 'fixme' AND status <> 'failed'"
        )
        assert n == len(rows)
        # the judge model and the template still may not change, failed or not
        store.execute("UPDATE judgings SET status = 'failed' WHERE judging = 'fixme'")
        other = _rescore_args(store, judge.url)
        other[other.index("judge-two")] = "judge-three"
        capsys.readouterr()
        assert cli(other) == 1
        assert "judge model: stored 'judge-two', now 'judge-three'" in capsys.readouterr().err
        assert cli(_rescore_args(store, judge.url, "--judge-template", "misprompt/judge.v1")) == 1
        assert "template: stored" in capsys.readouterr().err
        # a finished judging keeps refusing another URL
        store.execute("UPDATE judgings SET status = 'done' WHERE judging = 'fixme'")
        assert cli(_rescore_args(store, dead)) == 1
        assert "judge URLs: stored" in capsys.readouterr().err


def test_delete_a_judging_and_nothing_else(judged_run, capsys) -> None:
    store, rows = judged_run
    _rejudge(store, "judge-two", "gone", _varying)
    keep = {
        table: _table(store, f"SELECT * FROM {table}")
        for table in ("runs", "responses", "calls", "call_cache")
    }
    default = _table(store, "SELECT * FROM results WHERE judging = 'default'")
    db = ["--db", str(store.path)]
    # 'default' and a judging being run are refused, nothing deleted
    capsys.readouterr()
    assert cli(["rescore", "--source", "r1", "--as", "default", "--delete", *db]) == 1
    assert "'default' is the run's own judging" in capsys.readouterr().err
    store.execute(
        "UPDATE judgings SET status = 'running', pid = ? WHERE judging = 'gone'",
        [__import__("os").getppid()],  # a live process that is not this one
    )
    assert cli(["rescore", "--source", "r1", "--as", "gone", "--delete", *db]) == 1
    assert "is being run by process" in capsys.readouterr().err
    assert store.scalar("SELECT count(*) FROM results WHERE judging = 'gone'") == len(rows)
    store.execute("UPDATE judgings SET status = 'done' WHERE judging = 'gone'")
    assert cli(["rescore", "--source", "r1", "--as", "gone", "--delete", *db]) == 0
    assert "deleted judging gone" in capsys.readouterr().out
    assert store.scalar("SELECT count(*) FROM results WHERE judging = 'gone'") == 0
    assert store.scalar("SELECT count(*) FROM judgings WHERE judging = 'gone'") == 0
    assert _table(store, "SELECT * FROM results WHERE judging = 'default'") == default
    for table, before in keep.items():
        assert _table(store, f"SELECT * FROM {table}") == before, table
    assert store.scalar("SELECT judging FROM current_judgings WHERE run_id = 'r1'") == "default"
    assert cli(["rescore", "--source", "r1", "--as", "gone", "--delete", *db]) == 1
    assert "has no judging 'gone'" in capsys.readouterr().err
