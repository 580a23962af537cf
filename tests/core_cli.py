"""`python -m core …` in the test process: exit code, stdout and stderr, as a subprocess gives.

Why not a subprocess: each costs ~0.8 s of interpreter start and imports, and the suite runs
dozens. The command is the same `core.cli.main` a shell runs; the tests that need a process of
its own (signals, SIGKILL, a job started by the app, the real local model) still start one.
"""

from __future__ import annotations

import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Done:
    """What subprocess.run(capture_output=True, text=True) returns, for the fields tests read."""

    returncode: int
    stdout: str
    stderr: str


def run_core(*argv: str) -> Done:
    """Run `python -m core ARGV` in this process and capture what it prints."""
    from core import cli

    out, err = io.StringIO(), io.StringIO()
    environ = dict(os.environ)  # the CLI sets EHW_AS_OF / EHW_DATA_PATH for its process
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exc:  # argparse, and flag errors raised as SystemExit("error: …")
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            _restore_environ(environ)
    return Done(code, out.getvalue(), err.getvalue())


def _restore_environ(saved: dict[str, str]) -> None:
    """What the command set in os.environ ends with it, as a subprocess's environment would:
    a `metrics --as-of` must not pin every later test of this worker to a snapshot."""
    for key in [k for k in os.environ if k not in saved]:
        del os.environ[key]
    for key, value in saved.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def run_misprompt(db: Path, url: str, *args: str) -> Done:
    """`run misprompt` against the scripted server at `url` (model id fake-model), quietly."""
    return run_core(
        "run", "misprompt", "--db", str(db), "--base-url", url, "--model", "fake-model",
        "--quiet", *args,
    )  # fmt: skip
