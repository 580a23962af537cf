"""The benchmark registry: the contract a benchmark package fulfils, and its discovery.

A benchmark declares itself: its package sets `BENCHMARK = Benchmark(...)` in its
`__init__.py`. `BENCHMARKS` finds every package under `core/benchmarks/` (pkgutil) and every
entry point of the group `ehw.benchmarks` (a package installed from outside), on first use.
The CLI (`import`, `run`, `metrics`, `rescore`), `init`, the job launcher, `runs`, the Runs and
Import pages all loop over `BENCHMARKS`; no other file lists benchmarks (see
docs/adding-a-benchmark.md).

A descriptor's code is a typed loader (`Load[T]`: a function without arguments that imports
its module and returns the target), so mypy checks every target while reading the registry
(e.g. for `python -m core --help`) imports no benchmark code, pandas or duckdb.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    import pandas as pd

T = TypeVar("T")
# A typed lazy reference: a function without arguments that imports and returns its target.
# A package writes each one as a lambda over its modules, `lambda: items.import_bytes`, with the
# modules named by `lazy_modules` (imported when first read) and, for mypy, really imported under
# TYPE_CHECKING: mypy then checks every target against the field's type.
Load = Callable[[], T]


class LazyModule:
    """A module imported when one of its names is first read (so a package's declaration names
    its code without importing it: `python -m core --help` reads every declaration)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name}>"


def lazy_modules(package: str, *names: str) -> tuple[Any, ...]:
    """The modules `package.<name>` (or `name` itself when it holds a dot), each imported on
    first use. A declaration writes

        if TYPE_CHECKING:
            from core.benchmarks.mine import items, task
        else:
            items, task = lazy_modules(__name__, "items", "task")

    and names its code as `lambda: items.import_bytes`, a `Load[T]` whose target mypy checks."""
    return tuple(LazyModule(n if "." in n else f"{package}.{n}") for n in names)


# What a descriptor's code fields load (their signatures, checked by mypy in each package).
# The registry sits below the engine and the services (they read it), so what they define - the
# runner Task, the Result record, a Contribution, a PlaygroundRole - is `Any` here, and so is
# the store (core.store reads the registry for the benchmarks' views); a package's
# loader names the precise type (e.g. `def _task() -> type[Task]`), which mypy checks there.
Importer = Callable[[Any, bytes, str, str], int]  # (store, data, filename, name) -> items
BuiltinImporter = Callable[[Any, "Path", str], int]  # (store, path, name) -> items
Scorer = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], Any]  # -> Result
Judge = Callable[..., Awaitable[Any]]  # async (client, item, text, *, template, ...) -> Result
TemplateChooser = Callable[[str | None], str]  # asked judge template -> the stored id
Previewer = Callable[[bytes, str], "UploadPreview"]  # (data, filename) -> what the page shows
ItemExporter = Callable[[Any, str], bytes]  # (store, item set) -> CSV bytes
LabelMetrics = Callable[["pd.DataFrame"], "pd.DataFrame"]  # item rows -> F1 per run/evaluator
SourcesReader = Callable[[Any], "pd.DataFrame"]  # the Overview's rows of its published tables


class CommandModule(Protocol):
    """What serves CLI commands: a module (or object) with `configure` and `main`."""

    def configure(self, parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None: ...

    def main(self, args: argparse.Namespace) -> int: ...


class ResultFormat(Protocol):
    """A reader of another tool's results files (core/sources): a module with these names."""

    NAME: str
    DESCRIPTION: str

    def detect(self, path: Path, head: bytes) -> bool: ...

    def read(self, path: Path) -> Any: ...


@dataclass(frozen=True)
class RunField:
    """One benchmark-specific choice of `run <name>`: ONE declaration for the run form's
    widget and the CLI flag (`add_to`), with the same choices, default and help.

    kind: "select" (one of `choices`), "multi" (a comma-joined subset of `choices`) or
    "flag" (a switch without value). `default` is the form's initial value; the CLI's is the
    same (a multi's joined by commas, an empty select's None: the command's own default).
    `required`: the form must choose; the CLI requires a select (a multi defaults to `default`).
    """

    flag: str
    label: str
    kind: str
    choices: tuple[str, ...] = ()
    default: Any = None
    help: str = ""
    choices_from: Callable[[], Sequence[str]] | None = None  # when choices come from files
    required: bool = False  # the command has no default for it: a form must choose
    format_from: Callable[[str], str] | None = None  # how the form shows an option

    def option_label(self, option: Any) -> str:
        """How the run form shows `option` (e.g. a structured template marked as not the
        paper's protocol)."""
        return self.format_from(str(option)) if self.format_from else str(option)

    @property
    def key(self) -> str:
        """The form key and keyword name: `--judge-template` -> `judge_template`."""
        return self.flag.lstrip("-").replace("-", "_")

    def options(self) -> tuple[str, ...]:
        """The choices, read now when they come from template files."""
        if self.choices_from:
            return tuple(self.choices_from())
        return self.choices

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """The CLI flag of this field on `run <name>` (choices read now, e.g. from template
        files: only the command being configured pays for it)."""
        if self.kind == "flag":
            parser.add_argument(self.flag, action="store_true", help=self.help or None)
            return
        options = tuple(o for o in self.options() if o)  # '' is the form's "command default"
        if self.kind == "multi":
            parser.add_argument(
                self.flag,
                default=",".join(self.default or options),
                metavar=self.key.upper(),
                help=f"comma-separated subset of {','.join(options)} (default: "
                f"{','.join(self.default or options)})" + (f"; {self.help}" if self.help else ""),
            )
            return
        listed = f"one of {', '.join(options)}" if self.choices_from else ""
        parser.add_argument(
            self.flag,
            choices=options,
            required=self.required,
            default=None if self.default in (None, "") else self.default,
            metavar="ID" if self.choices_from else None,
            help="; ".join(t for t in (listed, self.help) if t) or None,
        )

    def cli_args(self, value: Any) -> list[str]:
        """The words this field adds to `python -m core run …`; a bad value is a ValueError."""
        if self.kind == "flag":
            return [self.flag] if value else []
        options = self.options()
        if value is None or value == "":
            if self.required:
                raise ValueError(f"choose a {self.label.lower()} ({', '.join(options)})")
            return []  # the command's own default applies
        if self.kind == "multi":
            chosen = [v for v in value if v in options]
            if not chosen:
                raise ValueError(
                    f"choose at least one {self.label.lower().rstrip('s')} ({', '.join(options)})"
                )
            return [self.flag, ",".join(chosen)]
        if value not in options:
            raise ValueError(f"{self.label.lower()} must be one of {', '.join(options)}")
        return [self.flag, str(value)]


@dataclass
class UploadPreview:
    """What the Import page shows of an uploaded file before importing it: its problems
    ('FILE:LINE: why', nothing is imported while there is one), a one-line summary and
    (title, DataFrame) previews."""

    ok: bool
    errors: list[str] = field(default_factory=list)
    total_errors: int = 0
    summary: str = ""
    frames: list[tuple[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Command:
    """A CLI command `words` served by `module` (`configure(parser, words)`, `main(args)`): a
    module name, or a loader of what serves it."""

    words: tuple[str, ...]
    module: str | Load[CommandModule]
    help: str

    def load(self) -> CommandModule:
        """What serves the command (imported now)."""
        if isinstance(self.module, str):
            served: CommandModule = importlib.import_module(self.module)
            return served
        return self.module()


@dataclass(frozen=True)
class Option:
    """One argument of a benchmark's `import <word>`, `metrics <name>` (or a command of its
    own), declared as data: the generic CLI adds it to the command's parser (`add_to`).

    name: "--flag" or a positional argument's name. The rest are argparse's keywords, given
    only when set: `type` converts the word (e.g. core.engine.bounds.whole(...)), `action`
    "store_true" (a switch) or "append" (repeatable), `nargs` "+" (one or more)."""

    name: str
    help: str = ""
    metavar: str | None = None
    nargs: str | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    required: bool = False
    type: Callable[[str], Any] | None = None
    action: str | None = None

    @property
    def key(self) -> str:
        """The attribute it sets on the parsed arguments: `--dyck-sample` -> `dyck_sample`."""
        return self.name.lstrip("-").replace("-", "_")

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        """This argument on `parser`, with only the keywords the declaration sets."""
        given = {
            k: getattr(self, k)
            for k in ("metavar", "nargs", "choices", "default", "type", "action")
            if getattr(self, k) is not None
        }
        if self.required:
            given["required"] = True
        if self.help:
            given["help"] = self.help
        parser.add_argument(self.name, **given)


@dataclass(frozen=True)
class Options:
    """A command declared by its options: the generic CLI adds each `Option` (and the
    `description`) to the command's parser, then calls `main(args)` (the exit code). A
    benchmark's `import` and `metrics` are declared this way."""

    options: tuple[Option, ...]
    main: Callable[[argparse.Namespace], int]
    description: str = ""

    def configure(self, parser: argparse.ArgumentParser) -> None:
        if self.description:
            parser.description = self.description
        for option in self.options:
            option.add_to(parser)


@dataclass(frozen=True)
class Verb:
    """A benchmark's part of `run <name>`, beyond its declared run fields: the flags its
    `configure` adds (sampling, endpoints, tokens) and what it does (exit code)."""

    configure: Callable[[argparse.ArgumentParser], None]
    main: Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class BenchmarkCommands:
    """A benchmark's `import <import_word>` and `metrics <name>` (declared `Options`), its
    hook of `run <name>` (whose benchmark flags are its `run_fields`) and its own commands by
    their words (`extra`): the one generic command module
    (core/services/benchmark_commands.py) builds their flags and dispatches to them."""

    import_: Options
    run: Verb
    metrics: Options
    extra: Mapping[tuple[str, ...], Options | Verb] = field(default_factory=dict)

    def verb(self, words: tuple[str, ...]) -> Options | Verb:
        """What serves `words` (a KeyError for none)."""
        if words in self.extra:
            return self.extra[words]
        served: dict[str, Options | Verb] = {
            "import": self.import_,
            "run": self.run,
            "metrics": self.metrics,
        }
        return served[words[0]]


BENCHMARK_COMMANDS = "core.services.benchmark_commands"  # serves every benchmark's commands


@dataclass(frozen=True)
class Imports:
    """How its items come in: `import <word>` (help, file types) and the Import page.

    importer: (store, data: bytes, filename, name) -> items, for an upload; builtin: (item set
    name, file under data/samples/, loader of (store, path, name) -> items) that `init` loads;
    label: the Import page's name for its files; previewer: what the page shows of an upload;
    format_help: Markdown on the expected format; item_exporter: an item set as CSV."""

    word: str  # the word after `import` (its name, or its file format's: `import <format>`)
    help: str
    files: tuple[str, ...]  # file types the Import page accepts
    importer: Load[Importer]
    builtin: tuple[str, str, Load[BuiltinImporter]] | None = None
    label: str = ""
    previewer: Load[Previewer] | None = None
    format_help: Load[str] | None = None
    item_exporter: Load[ItemExporter] | None = None


@dataclass(frozen=True)
class Scored:
    """A code-scored benchmark: `scorer` (item, response, run) -> Result re-scores a stored
    response for `rescore`; an optional `extractor` is an LLM that READS the answers the scorer
    parses (same signature as a judge): `rescore` with a judge endpoint runs it (issue 29)."""

    scorer: Load[Scorer]
    extractor: Load[Judge] | None = None


@dataclass(frozen=True)
class Judged:
    """An LLM-judged benchmark: `judge` (async (client, item, text, *, template, ...) ->
    Result) is what `rescore` re-judges with; `template` chooses the stored judge template id.
    A multi-label judge names its `labels` ({name: letter}); with them the judge audit samples
    its runs, `label_help` ({label: text}) says what each means for people labelling by hand and
    `label_metrics` (item rows (run_id, model, setting, evaluator, is_error, categories, labels)
    -> (run_id, source, <labels>, average, metric)) gives its F1 per run and evaluator."""

    judge: Load[Judge]
    template: Load[TemplateChooser]
    labels: Load[Mapping[str, str]] | None = None
    label_help: Load[Mapping[str, str]] | None = None
    label_metrics: Load[LabelMetrics] | None = None


Scoring = Scored | Judged  # how a benchmark's responses get their results


@dataclass(frozen=True)
class ResultsPage:
    """Its results page (a file under pages/, or a path for a package installed from outside):
    app.py's navigation lists it (title, icon) in registry order; `run_param` is its URL
    parameter selecting runs, `drill_params` the URL of an item drill-down ({run}); the
    Responses grid's `grid_note` (what a cell shows) and `gold_label` (heading over gold)."""

    path: str
    title: str
    icon: str = ":material/bar_chart:"
    run_param: str = "runs"
    drill_params: tuple[tuple[str, str], ...] = ()
    grid_note: str = ""
    gold_label: str = "Gold"


@dataclass(frozen=True)
class Published:
    """The papers' tables `init` loads, (name, loader of its DataFrame), and `sources`, its
    published rows on the Overview."""

    tables: tuple[tuple[str, Load[pd.DataFrame]], ...] = ()
    sources: Load[SourcesReader] | None = None


@dataclass(frozen=True)
class Roles:
    """Its parts in shared views: `playground` loads a core.services.playground.PlaygroundRole
    (the Playground page offers it; an LLM-judged benchmark with labels), `comparison` a
    core.services.compare.Contribution (its rows in the proactive-vs-passive view)."""

    playground: Load[Any] | None = None
    comparison: Load[Any] | None = None


@dataclass(frozen=True)
class Benchmark:
    """Everything the entry points need to know about one benchmark, in groups: `imports`,
    `scoring` (Scored or Judged), `results_page`, `paper` (published tables), `roles`
    (playground, comparison): the shared layers read them by group (`bench.imports.importer`).

    name: the id stored in runs.benchmark / items.benchmark. label: what people read.
    order: where it stands in the registry (menus, navigation, `--help`): lower first, then
    by name; the shipped five are 0-4, a new benchmark keeps the default.
    variant_name / variants: what one run varies (prompt settings, conditions, methods) - also
    runs.setting and responses.variant.
    mode: "proactive" when the model is not told to look for errors, else "passive"; a
    benchmark whose runs can be either says so in its run fields (a `--passive` flag, say).
    task: loads its runner Task class; cli loads its BenchmarkCommands: the declared options
    of its `import` and `metrics` commands (the CLI builds their flags) and its `run` hook.
    run_fields: the run form's benchmark-specific fields, and `run <name>`'s flags.
    commands: CLI commands beyond the generic ones (e.g. a scorer of its own): their
    words and help; `cli`'s `extra` serves them.
    Every code field is a `Load[T]` (see the module docstring): mypy checks its target.
    """

    name: str
    label: str
    description: str
    variant_name: str
    variants: tuple[str, ...]
    mode: str
    imports: Imports
    task: Load[type[Any]]  # its runner Task (core.engine.task)
    scoring: Scoring
    results_page: ResultsPage
    cli: Load[BenchmarkCommands]
    order: int = 100  # registry order: lower first, then by name (the shipped five: 0-4)
    run_fields: tuple[RunField, ...] = ()
    commands: tuple[Command, ...] = field(default_factory=tuple)
    short: str = ""  # prefix of default run names (mp-…)
    variants_per_run: bool = False  # one run asks several variants (conditions, say)
    has_controls: bool = False  # error-free control items make precision (and F1) possible
    no_controls_note: Load[str] | None = None  # why a run without controls is recall
    sample_strata: tuple[str, ...] = ("primary_category",)  # what --limit stratifies over
    paper: Published = Published()
    roles: Roles = Roles()
    views: Load[str] | None = None  # SQL: the benchmark's own views over `results` …
    migrate_sql: Load[str] | None = None  # SQL: fills its records migrated from schema 3
    # results files of other tools this benchmark reads (core/sources): (format name, reader
    # module with NAME, DESCRIPTION, detect(path, head) and read(path)), e.g. released verdicts
    result_formats: tuple[tuple[str, Load[ResultFormat]], ...] = ()
    # what the shared layers need of it (a core.declared.Declarations)
    declared: Load[Any] | None = None

    @property
    def judged_by_model(self) -> bool:
        """Is it LLM-judged (`scoring` is Judged)? (a fact of its scoring, not a forwarded field)"""
        return isinstance(self.scoring, Judged)

    def label_letters(self) -> dict[str, str]:
        """The named labels of this benchmark's records and their short letters ({} if none)."""
        labels = self.scoring.labels if isinstance(self.scoring, Judged) else None
        return dict(labels()) if labels else {}

    def label_help_texts(self) -> dict[str, str]:
        """What each named label means, for people labelling by hand ({} if not given)."""
        helps = self.scoring.label_help if isinstance(self.scoring, Judged) else None
        return dict(helps()) if helps else {}

    def cli_commands(self) -> list[Command]:
        """`import`, `run` and `metrics` for this benchmark, then its own extra commands."""
        return [
            Command(("import", self.imports.word), BENCHMARK_COMMANDS, self.imports.help),
            Command(
                ("run", self.name),
                BENCHMARK_COMMANDS,
                f"run {self.label} against a model"
                + (", judged by an LLM" if self.judged_by_model else ""),
            ),
            Command(("metrics", self.name), BENCHMARK_COMMANDS, f"{self.label} metrics"),
            *(Command(c.words, BENCHMARK_COMMANDS, c.help) for c in self.commands),
        ]


ENTRY_POINT_GROUP = "ehw.benchmarks"  # packages installed from outside declare themselves here
PACKAGES = "core.benchmarks"  # every package under it with a BENCHMARK is a benchmark


def _declared(target: object, where: str) -> Benchmark:
    """The Benchmark of a package (its BENCHMARK) or an entry point's object; a clear error
    naming `where` for anything else."""
    bench = getattr(target, "BENCHMARK", target)
    if not isinstance(bench, Benchmark):
        raise TypeError(f"{where}: BENCHMARK is not a core.registry.Benchmark")
    return bench


def discover() -> list[Benchmark]:
    """Every declared benchmark, in registry order: the packages under core/benchmarks/ and
    the entry points of ENTRY_POINT_GROUP (value "module" or "module:attr"), sorted by
    (order, name). A package without BENCHMARK is not a benchmark (e.g. shared helpers)."""
    found: dict[str, Benchmark] = {}
    package = importlib.import_module(PACKAGES)
    for info in pkgutil.iter_modules(package.__path__, PACKAGES + "."):
        if not info.ispkg:
            continue
        module = importlib.import_module(info.name)
        if hasattr(module, "BENCHMARK"):
            bench = _declared(module, info.name)
            found[bench.name] = bench
    if _group_declared(ENTRY_POINT_GROUP):
        from importlib import metadata  # ~80 ms of CPU: only when a distribution declares it

        for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
            bench = _declared(point.load(), f"entry point {point.name} ({point.value})")
            found.setdefault(bench.name, bench)
    return sorted(found.values(), key=lambda b: (b.order, b.name))


def _group_declared(group: str) -> bool:
    """Does any installed distribution on sys.path declare entry points of `group`? A glance
    at each `*.dist-info/entry_points.txt`, so `--help` stays fast when none does."""
    needle = f"[{group}]"
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:  # a zip, a missing folder
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(folder or ".", name, "entry_points.txt"), "rb") as f:
                        if needle.encode() in f.read():
                            return True
                except OSError:
                    continue
    return False


class Registry(MutableMapping[str, Benchmark]):
    """name -> Benchmark, filled by `discover()` on first use (so importing this module, or a
    benchmark package importing it, discovers nothing yet). `register` adds one by hand
    (tests); `reload()` discovers again (a package installed since)."""

    def __init__(self) -> None:
        self._items: dict[str, Benchmark] = {}
        self._state = "empty"  # empty -> discovering -> ready

    def _ready(self) -> dict[str, Benchmark]:
        if self._state == "empty":
            self._state = "discovering"  # a package reading the registry while imported
            try:
                found = {b.name: b for b in discover()}
            except BaseException:
                self._state = "empty"
                raise
            self._items = {**found, **self._items}  # registered by hand stay, after
            self._state = "ready"
        return self._items

    def reload(self) -> None:
        """Discover again, keeping nothing registered by hand."""
        self._items, self._state = {}, "empty"

    def __getitem__(self, name: str) -> Benchmark:
        return self._ready()[name]

    def __setitem__(self, name: str, bench: Benchmark) -> None:
        self._ready()[name] = bench

    def __delitem__(self, name: str) -> None:
        del self._ready()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._ready()))

    def __len__(self) -> int:
        return len(self._ready())

    def __repr__(self) -> str:
        return f"Registry({list(self._ready())})"


BENCHMARKS = Registry()


def register(benchmark: Benchmark) -> Benchmark:
    """Add (or replace, by name) a benchmark by hand (tests); a shipped or installed one is
    discovered instead. Returns it so a module can keep a handle."""
    BENCHMARKS[benchmark.name] = benchmark
    return benchmark


def get(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None
