"""Guard rails run by the README's test command (so `.ci/run` enforces them): ruff lint and
format over the repository and mypy over core/ and pages/, with the settings in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_lint() -> None:
    out = _run(str(BIN / "ruff"), "check", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format() -> None:
    out = _run(str(BIN / "ruff"), "format", "--check", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_core_and_pages() -> None:
    out = _run(str(BIN / "mypy"))
    assert out.returncode == 0, out.stdout + out.stderr
    # Every module of both trees was checked: a config that dropped pages/ would pass silently.
    sources = [p for tree in ("core", "pages") for p in (ROOT / tree).rglob("*.py")]
    assert f"no issues found in {len(sources)} source files" in out.stdout, out.stdout
