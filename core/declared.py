"""What a benchmark package declares for the shared layers, so they know no benchmark.

A package says here, in its own `declared.py` (`DECLARED = Declarations(...)`, named by the
registry's `declared` field), what shared code used to spell out for it: the abbreviations of its
variants in default run names, the template ids it stored under older names, the message for a
judging without a judge, the example command the Overview shows, its published tables' columns
in the store's one long `published` table, and its own views and caches over the generic tables.
The shared layers read the union over every registered benchmark (the functions below); the
store is given its part (`store_extension`, wired by `wire_store`) and imports no registry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core import registry

if TYPE_CHECKING:
    import pandas as pd

    from core.store.schema import StoreExtension

# The long columns of the store's `published` table a package's column may map to; the rest of a
# row goes into its `detail` JSON, by the column's own name.
LONG_COLUMNS = ("source", "model", "setting", "category", "measure", "value", "n")


@dataclass(frozen=True)
class PublishedColumn:
    """One column of a published table as its readers see it (the package's view): `name`,
    its SQL `type`, and where the long table keeps it (`long`: one of LONG_COLUMNS, or "" for
    the row's `detail` JSON, under its name)."""

    name: str
    type: str = "VARCHAR"
    long: str = ""


@dataclass(frozen=True)
class PublishedTable:
    """A paper's table as one package keeps it in the long `published` table: `table` is the
    name its readers use (a view over `published`, made from `columns`)."""

    table: str
    columns: tuple[PublishedColumn, ...]

    def view_sql(self) -> str:
        """CREATE VIEW <table>: the rows of this table in the columns they were loaded with,
        plus `position` (their order in the reader's frame: ORDER BY it)."""
        parts = [
            f"CAST({col.long or _detail(col.name)} AS {col.type}) AS {col.name}"
            for col in self.columns
        ]
        return (
            f"CREATE OR REPLACE VIEW {self.table} AS SELECT {', '.join(parts)}, position "
            f"FROM published WHERE table_name = '{self.table}';"
        )

    def adopt_sql(self) -> str:
        """Move the rows of a table of this name (as a package made it before it declared the
        table here) into `published`, in this table's long form and in its row order, then drop
        it, so that the view can take its name (the schema 7 -> 8 step)."""
        long = {col.long: col.name for col in self.columns if col.long}
        source, *rest = (long.get(name, "NULL") for name in LONG_COLUMNS)
        detail = ", ".join(f"'{c.name}', {c.name}" for c in self.columns if not c.long)
        return (
            f"INSERT INTO published (source, table_name, {', '.join(LONG_COLUMNS[1:])}, detail, "
            f"position) SELECT {source}, '{self.table}', {', '.join(rest)}, "
            f"json_object({detail}), row_number() OVER (ORDER BY rowid) - 1 FROM {self.table};\n"
            f"DROP TABLE {self.table};"
        )

    def long_rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The reader's frame (this table's columns) as rows of `published`, in its order."""
        import pandas as pd

        out = pd.DataFrame({"source": [None] * len(frame)}, dtype=object)
        out["table_name"] = self.table
        for long in LONG_COLUMNS[1:]:
            out[long] = None
        details: list[dict[str, object]] = [{} for _ in range(len(frame))]
        for col in self.columns:
            values = list(frame[col.name])
            if col.long:
                out[col.long] = values
            else:
                for detail, value in zip(details, values, strict=True):
                    detail[col.name] = None if pd.isna(value) else _plain(value)
        out["detail"] = [json.dumps(d) for d in details]
        out["position"] = range(len(frame))
        return out


def _detail(name: str) -> str:
    return f"detail->>'{name}'"


def _plain(value: object) -> object:
    """A numpy scalar as the Python value json.dumps writes."""
    item = getattr(value, "item", None)
    return item() if callable(item) else value


@dataclass(frozen=True)
class Declarations:
    """A package's part of the shared layers (see the module docstring).

    setting_short: variant -> its abbreviation in default run names ('zero-shot' -> 'zs').
    template_aliases: a template id stored by older versions -> today's id.
    published: its published tables' columns (the registry's `published` names their readers).
    caches: its cache tables, each with the column naming the run a row was derived from (a
    deleted run drops its rows; a bundle carries them; recounted when stale).
    """

    setting_short: Mapping[str, str] = field(default_factory=dict)
    template_aliases: Mapping[str, str] = field(default_factory=dict)
    published: tuple[PublishedTable, ...] = ()
    caches: tuple[tuple[str, str], ...] = ()


EMPTY = Declarations()


def of(bench: registry.Benchmark) -> Declarations:
    """A benchmark's declarations (empty when it declares none)."""
    found = bench.declared() if bench.declared else EMPTY
    assert isinstance(found, Declarations), f"{bench.declared} is not a Declarations"
    return found


def everyone() -> list[Declarations]:
    return [of(b) for b in registry.BENCHMARKS.values()]


def setting_short() -> dict[str, str]:
    """Every benchmark's variant abbreviations (for default run names)."""
    return {k: v for d in everyone() for k, v in d.setting_short.items()}


def template_aliases() -> dict[str, str]:
    """Every benchmark's old template ids -> today's."""
    return {k: v for d in everyone() for k, v in d.template_aliases.items()}


def published_tables() -> dict[str, PublishedTable]:
    """Every published table a package declares, by the name its readers use."""
    return {t.table: t for d in everyone() for t in d.published}


def example_run() -> str:
    """The words after `python -m core run` that pages suggest: the first benchmark with a
    built-in sample, on that sample."""
    for bench in registry.BENCHMARKS.values():
        if bench.imports.builtin:
            return f"{bench.name} --items {bench.imports.builtin[0]}"
    return "BENCHMARK --items SET"


def store_extensions() -> list[StoreExtension]:
    """What every registered benchmark adds to a store, in registry order."""
    from core.store.schema import StoreExtension

    found = []
    for bench in registry.BENCHMARKS.values():
        mine = of(bench)
        views = [t.view_sql() for t in mine.published]
        if bench.views:
            views.append(bench.views())
        migrate = bench.migrate_sql() if bench.migrate_sql else ""
        adopt = tuple((t.table, t.adopt_sql()) for t in mine.published)
        found.append(StoreExtension(bench.name, "\n".join(views), mine.caches, migrate, adopt))
    return found


def wire_store() -> None:
    """Give the store the benchmarks' extensions (idempotent; the store asks for them when it
    opens a file, so a benchmark registered later is included)."""
    from core.store import schema

    schema.use_extensions(store_extensions)
