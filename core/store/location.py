"""Where a store lives: a DuckDB file (the default) or a DuckLake (a team store).

`--db` / EHW_DB take either a file path or `ducklake:postgres:<libpq conninfo>`; a new lake also
needs `--data-path DIR|s3://bucket/prefix` (EHW_DATA_PATH) for its Parquet files. Credentials
never travel in a location: libpq reads PGPASSWORD (and its other variables) itself, S3 keys
come from AWS_*; a location that carries a password is refused, so it can be shown, logged and
passed to a child process as it is.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from core.store.errors import DB_ENV_VAR, DEFAULT_DB, DatabaseError

LAKE_PREFIX = "ducklake:postgres:"
DATA_PATH_ENV = "EHW_DATA_PATH"
AS_OF_ENV = "EHW_AS_OF"
# libpq keywords that carry a secret (conninfo `key=value` pairs or a URI's user:password@)
_SECRET_KEYS = ("password", "sslpassword", "passfile")
_SECRET_RE = re.compile(r"(?i)\b(" + "|".join(_SECRET_KEYS) + r")\s*=")
_URI_PASSWORD_RE = re.compile(r"(?i)postgres(?:ql)?://[^/@\s:]+:[^/@\s]*@")


@dataclass(frozen=True)
class Location:
    """A parsed store location. `path` for a file; `conninfo` (credential-free) for a lake."""

    path: Path | None = None
    conninfo: str | None = None

    @property
    def is_lake(self) -> bool:
        return self.conninfo is not None

    @property
    def text(self) -> str:
        """The location as the user wrote it (`--db` accepts it back; safe to show)."""
        return LAKE_PREFIX + self.conninfo if self.conninfo is not None else str(self.path)

    @property
    def store_path(self) -> Path:
        """`Store.path`: the file itself, or for a lake this machine's stand-in in local_dir
        (never opened; run logs and in-process locks are keyed on it)."""
        return self.path if self.path is not None else self.local_dir / "lake"

    @property
    def local_dir(self) -> Path:
        """This machine's folder for the store's side files (run logs): beside a file; for a
        lake, one folder per catalog under data/lakes (each machine keeps its own logs)."""
        if self.path is not None:
            return self.path.parent
        digest = hashlib.sha256((self.conninfo or "").encode()).hexdigest()[:12]
        return DEFAULT_DB.parent / "lakes" / digest


def parse_location(db: str | os.PathLike[str] | None = None) -> Location:
    """--db beats EHW_DB, which beats data/results.duckdb. A lake location with a password in
    it is refused (it would be stored in logs and shown on pages)."""
    raw = str(db) if db else os.environ.get(DB_ENV_VAR, "")
    if raw.startswith(LAKE_PREFIX):
        conninfo = raw[len(LAKE_PREFIX) :].strip()
        if not conninfo:
            raise DatabaseError(
                f"{raw!r}: a DuckLake location needs a PostgreSQL connection string after "
                f"'{LAKE_PREFIX}', e.g. {LAKE_PREFIX}dbname=evals host=db.lab user=ehw"
            )
        if _SECRET_RE.search(conninfo) or _URI_PASSWORD_RE.search(conninfo):
            raise DatabaseError(
                "the DuckLake location carries a password; take it out and set PGPASSWORD (or "
                "a ~/.pgpass file) instead, so it is never stored, logged or shown."
            )
        return Location(conninfo=conninfo)
    if raw.startswith("ducklake:"):
        raise DatabaseError(
            f"{raw.split(' ')[0]!r}: only PostgreSQL catalogs are supported "
            f"({LAKE_PREFIX}<libpq conninfo>)."
        )
    if raw:
        return Location(path=Path(raw).expanduser().resolve())
    return Location(path=DEFAULT_DB)


def data_path_from_env(data_path: str | None = None) -> str | None:
    """--data-path beats EHW_DATA_PATH; a local folder is made absolute (every machine of the
    team must see the same path: a shared disk)."""
    value = data_path or os.environ.get(DATA_PATH_ENV) or None
    if value and "://" not in value:
        value = str(Path(value).expanduser().resolve())
    if value and not value.endswith("/"):
        value += "/"
    return value


def as_of_from_env(as_of: int | None = None) -> int | None:
    """A pinned snapshot: the argument, else EHW_AS_OF (set by the CLI's --as-of)."""
    if as_of is not None:
        return as_of
    value = os.environ.get(AS_OF_ENV, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise DatabaseError(f"{AS_OF_ENV}={value!r}: a snapshot id is a whole number") from None
