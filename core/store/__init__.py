"""The store: where runs, items and results live (a DuckDB file), its schema and its one
writer of item sets. Import from here; the modules are errors, schema, database, item_sets."""

from core.store.database import (
    Store,
    _write_lock,
    insert_frame,
    is_writable,
    missing_message,
    readonly_message,
    resolve_db_path,
)
from core.store.errors import (
    DB_ENV_VAR,
    DEFAULT_DB,
    PROJECT_ROOT,
    DatabaseCorrupt,
    DatabaseError,
    DatabaseLocked,
    DatabaseMissing,
    DatabaseReadOnly,
    DatabaseTooNew,
)
from core.store.item_sets import (
    ITEM_COLUMNS,
    EmptyItemSet,
    ItemSetConflict,
    ItemSetInUse,
    replace_item_set,
    runs_using,
    runs_without_judging,
)
from core.store.schema import JUDGING_NAME_RE, MIGRATIONS, SCHEMA_VERSION, migrate, schema_version

__all__ = [
    "DB_ENV_VAR",
    "DEFAULT_DB",
    "ITEM_COLUMNS",
    "JUDGING_NAME_RE",
    "MIGRATIONS",
    "PROJECT_ROOT",
    "SCHEMA_VERSION",
    "DatabaseCorrupt",
    "DatabaseError",
    "DatabaseLocked",
    "DatabaseMissing",
    "DatabaseReadOnly",
    "DatabaseTooNew",
    "EmptyItemSet",
    "ItemSetConflict",
    "ItemSetInUse",
    "Store",
    "_write_lock",
    "insert_frame",
    "is_writable",
    "migrate",
    "missing_message",
    "readonly_message",
    "replace_item_set",
    "resolve_db_path",
    "runs_using",
    "runs_without_judging",
    "schema_version",
]
