"""The command a form shows "to run it in a terminal": what the app would start, pasted
anywhere. It names the store with `--db` unless it is the default file — pasted where EHW_DB is
unset, a command without it wrote to data/results.duckdb instead of the team's lake (issue 31,
point 10). A store location never carries a secret (core/store/location.py refuses a lake URL
with a password; keys come from the environment), so it can be shown."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from core.store import DEFAULT_DB


def terminal_command(args: Sequence[str], location: str, *, is_lake: bool) -> str:
    """`python -m core ARGS [--db LOCATION]`, quoted for a POSIX shell."""
    words = list(args)
    if is_lake or Path(location).resolve() != DEFAULT_DB.resolve():
        words += ["--db", location]
    return "python -m core " + shlex.join(words)
