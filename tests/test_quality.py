"""Guard rails run by the README's test command (so `.ci/run` enforces them): ruff lint and
format over the repository and mypy over core/, pages/, tests/, bench/ and app.py (pandas typed
by pandas-stubs), with the settings in pyproject.toml."""

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


def test_mypy() -> None:
    out = _run(str(BIN / "mypy"))
    assert out.returncode == 0, out.stdout + out.stderr
    # Every module of every tree was checked: a config that dropped one would pass silently.
    trees = ("core", "pages", "tests", "bench")
    sources = [p for tree in trees for p in (ROOT / tree).rglob("*.py")] + [ROOT / "app.py"]
    assert f"no issues found in {len(sources)} source files" in out.stdout, out.stdout


def test_mypy_reads_pandas_through_its_stubs() -> None:
    """pandas ships no types: without pandas-stubs every frame is Any and mypy checks nothing
    that touches one. The stubs must describe the pandas installed (same major.minor)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        stubs = version("pandas-stubs")
    except PackageNotFoundError:
        raise AssertionError("pandas-stubs missing: pip install -r requirements-dev.txt") from None
    assert stubs.split(".")[:2] == version("pandas").split(".")[:2], (stubs, version("pandas"))
