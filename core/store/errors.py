"""What can be wrong with a store, each a message the user can act on."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_DB = PROJECT_ROOT / "data" / "results.duckdb"
DB_ENV_VAR = "EHW_DB"


def error_line(exc: BaseException) -> str:
    """`Type: first line of the message`: how a message quotes a low-level error (a DuckDB or
    Arrow message can run to many lines)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


class DatabaseError(RuntimeError):
    """A problem with the database file that the user must act on; the message says how."""


class DatabaseLocked(DatabaseError):
    pass


class DatabaseTooNew(DatabaseError):
    pass


class DatabaseCorrupt(DatabaseError):
    pass


class DatabaseReadOnly(DatabaseError):
    """The file or its folder is not writable: browsing works, writes are refused."""


class DatabaseMissing(DatabaseError):
    """The file vanished after it was opened; a reader must not silently create a new one."""


# Substrings of DuckDB errors that mean the file itself is damaged (truncated, overwritten).
