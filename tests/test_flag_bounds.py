"""Issue 31, point 13: every numeric flag of every command is bounded; `--epochs 0` and
`--repeat 0` are refused (they ran as 1), values past the stated cap are refused before any
planning, and SIGTERM stops a whole `rescore --repeat K`, not only its current repeat."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import cli
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.engine import bounds
from tests.core_cli import run_core
from tests.fake_openai import FakeOpenAI
from tests.test_rescore import _judged_template, judged_run  # noqa: F401 - fixtures

ROOT = Path(__file__).resolve().parent.parent
# `--as-of` is bounded by another change (issue 31's `--as-of` errors, branch i31b)
NOT_HERE = {"as_of"}


def _numeric_flags() -> list[tuple[str, argparse.Action]]:
    """(command, action) for every flag of every command that takes a number."""
    parser = cli.build_parser()  # every command configured
    out = []

    def walk(p: argparse.ArgumentParser, words: str) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{words} {name}".strip())
            elif action.type in (int, float) or isinstance(action.type, bounds.Bounded):
                out.append((words, action))

    walk(parser, "")
    return out


def test_every_numeric_flag_of_every_command_is_bounded():
    flags = _numeric_flags()
    assert len(flags) > 30  # run flags of five benchmarks, rescore, metrics, serve-local, …
    unbounded = [
        f"{words} {action.option_strings[0]}"
        for words, action in flags
        if action.dest not in NOT_HERE and not isinstance(action.type, bounds.Bounded)
    ]
    assert unbounded == []
    for _words, action in flags:
        if isinstance(action.type, bounds.Bounded):
            assert action.type.flag in action.option_strings
            assert action.type.low <= action.type.high
            default = action.default
            if isinstance(default, int | float) and not isinstance(default, bool):
                assert action.type.low <= default <= action.type.high, action.type.flag


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "misprompt", "--epochs", "0"], "error: --epochs must be ≥ 1 (got 0)"),
        (
            ["run", "misprompt", "--epochs", "99999999999999999999"],
            f"error: --epochs must be ≤ {bounds.MAX_EPOCHS} (got 99999999999999999999)",
        ),
        (["run", "bbm", "--epochs", "1000000"], f"must be ≤ {bounds.MAX_EPOCHS}"),
        (["rescore", "--source", "x", "--repeat", "0"], "error: --repeat must be ≥ 1 (got 0)"),
        (["rescore", "--source", "x", "--repeat", "-2"], "error: --repeat must be ≥ 1 (got -2)"),
        (["rescore", "--source", "x", "--repeat", "1000000"], f"≤ {bounds.MAX_REPEATS}"),
        (["run", "pcbench", "--concurrency", "0"], "error: --concurrency must be ≥ 1 (got 0)"),
        (["run", "misprompt", "--temperature", "nan"], "error: --temperature must be a number"),
        (["run", "misprompt", "--temperature", "9"], "error: --temperature must be ≤ 2"),
        (["run", "processbench", "--limit", "abc"], "error: --limit must be a whole number"),
        (["audit", "ppi", "--lam", "-1"], "error: --lam must be ≥ 0"),
        (["serve-local", "--port", "70000"], "error: --port must be ≤ 65535 (got 70000)"),
        (["metrics", "misprompt", "--bootstrap", "-5"], "error: --bootstrap must be ≥ 0"),
        (["m2-score", "--gold", "g", "--hyp", "h", "--gold-annotator", "-1"], "must be ≥ 0"),
    ],
)
def test_out_of_bounds_values_are_refused_in_one_line_before_anything_runs(argv, message, tmp_path):
    db = tmp_path / "none.duckdb"
    extra = [] if argv[0] == "serve-local" else ["--db", str(db)]
    done = run_core(*argv, *extra, "--items", "s") if argv[0] == "run" else run_core(*argv, *extra)
    assert done.returncode == 1, done
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not db.exists()


def test_sigterm_stops_a_whole_repeated_rescore(judged_run):  # noqa: F811
    """`rescore --repeat 1000000` ran 41 minutes and SIGTERM cancelled only the current repeat.
    A real process, a real SIGTERM during the first repeat: it stops, and no later repeat
    starts."""
    store, rows = judged_run
    reply = json.dumps({k: {"rationale": "r", "value": True} for k in JUDGE_LABELS})
    with FakeOpenAI(responder=lambda body: reply, latency=0.2) as judge:
        argv = ["rescore", "--source", "r1", "--judge-base-url", judge.url]
        argv += ["--judge-model", "j", "--as", "rep", "--repeat", "5", "--concurrency", "1"]
        argv += ["--quiet", "--db", str(store.path)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "core", *argv],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(judge.chat_requests) < 2:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        asked = len(judge.chat_requests)
    assert proc.returncode == 0, err
    judgings = store.rows("SELECT judging, status FROM judgings WHERE run_id = 'r1' ORDER BY 1")
    assert [j for j in judgings if j[0].startswith("rep")] == [("rep@r5", "cancelled")], out + err
    assert asked < len(rows)
    assert "stopped: the repeats after this one were not started" in err
