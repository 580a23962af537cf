"""The benchmark registry: one descriptor per benchmark, read by every entry point.

The CLI (`import`, `run`, `metrics`, `rescore`), `init`, the job launcher, `runs`, the Runs and
Import pages all loop over `BENCHMARKS`; no other file lists benchmarks. Adding a benchmark is
one package plus one `register(Benchmark(...))` call (see README, "Adding a benchmark").

Descriptors name their code as "module:attribute" strings and resolve them on first use, so
reading the registry (e.g. for `python -m core --help`) imports no benchmark code, pandas or
duckdb.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any


def resolve(ref: str) -> Any:
    """"package.module:attr" -> the object (imported now); "package.module" -> the module."""
    module_name, _, attr = ref.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


@dataclass(frozen=True)
class RunField:
    """One benchmark-specific choice of the run form, and the CLI flag it becomes.

    kind: "select" (one of `choices`), "multi" (a comma-joined subset of `choices`) or
    "flag" (a switch without value). `default` is the form's initial value.
    """

    flag: str
    label: str
    kind: str
    choices: tuple[str, ...] = ()
    default: Any = None
    help: str = ""


@dataclass(frozen=True)
class Command:
    """A CLI command `words` served by `module` (`configure(parser, words)`, `main(args)`)."""

    words: tuple[str, ...]
    module: str
    help: str


@dataclass(frozen=True)
class Benchmark:
    """Everything the entry points need to know about one benchmark.

    name: the id stored in runs.benchmark / items.benchmark. label: what people read.
    variant_name / variants: what one run varies (Mis-prompt settings, ErrorBench conditions,
    BBM methods) - also runs.setting and responses.variant.
    mode: "proactive" when the model is not told to look for errors, else "passive"; a
    benchmark whose runs can be either says so in its run fields (Mis-prompt's --passive).
    import_word: the word after `import` (ErrorBench imports M2 files: `import m2`).
    import_files: file types the Import page accepts; importer: "module:fn(store, data: bytes,
    filename, name) -> int" for uploads; builtin: (item set name, file under data/samples/,
    "module:fn(store, path, name) -> int").
    task: "module:Class" of its runner Task; scorer: "module:fn(store, run_id, ...)" used by
    `rescore`; metrics: "module:fn(store, source, judging=None) -> DataFrame".
    page: the results page (a file under pages/) and its title.
    run_fields: the run form's benchmark-specific fields.
    commands: CLI commands beyond the generic ones (e.g. ErrorBench's `m2-score`).
    """

    name: str
    label: str
    description: str
    variant_name: str
    variants: tuple[str, ...]
    mode: str
    import_word: str
    import_help: str
    import_files: tuple[str, ...]
    cli_module: str
    importer: str
    builtin: tuple[str, str, str] | None
    task: str
    judged_by_model: bool
    page: str
    page_title: str
    run_fields: tuple[RunField, ...] = ()
    commands: tuple[Command, ...] = field(default_factory=tuple)

    def cli_commands(self) -> list[Command]:
        """`import`, `run` and `metrics` for this benchmark, then its own extra commands."""
        return [
            Command(("import", self.import_word), self.cli_module, self.import_help),
            Command(("run", self.name), self.cli_module,
                    f"run {self.label} against a model"
                    + (", judged by an LLM" if self.judged_by_model else "")),
            Command(("metrics", self.name), self.cli_module, f"{self.label} metrics"),
            *self.commands,
        ]


BENCHMARKS: dict[str, Benchmark] = {}


def register(benchmark: Benchmark) -> Benchmark:
    """Add (or replace, by name) a benchmark; returns it so a module can keep a handle."""
    BENCHMARKS[benchmark.name] = benchmark
    return benchmark


def get(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None


register(Benchmark(
    name="misprompt",
    label="Mis-prompt",
    description="Mis-prompt (proactive; judged)",
    variant_name="setting",
    variants=("zero-shot", "one-shot", "three-shot", "cot"),
    mode="proactive",
    import_word="misprompt",
    import_help="import Mis-prompt items (CSV, JSON, JSONL)",
    import_files=("csv", "json", "jsonl"),
    cli_module="core.misprompt.cli",
    importer="core.misprompt.items:import_bytes",
    builtin=("misprompt-sample", "misprompt_sample.csv", "core.misprompt.items:import_builtin"),
    task="core.misprompt.task:MispromptTask",
    judged_by_model=True,
    page="pages/misprompt_results.py",
    page_title="Mis-prompt results",
    run_fields=(
        RunField("--setting", "Setting", "select",
                 ("zero-shot", "one-shot", "three-shot", "cot"), "zero-shot"),
        RunField("--passive", "Passive (wrap each prompt in the error-handling instruction)",
                 "flag", default=False),
    ),
))

register(Benchmark(
    name="errorbench",
    label="ErrorBench",
    description="ErrorBench (anchoring)",
    variant_name="conditions",
    variants=("blind", "hinted", "anchored", "mislead_high", "mislead_low"),
    mode="passive",
    import_word="m2",
    import_help="build ErrorBench passages from an M2 file",
    import_files=("m2", "txt"),
    cli_module="core.errorbench.cli",
    importer="core.errorbench.cli:import_bytes",
    builtin=("errorbench-sample", "errorbench_sample.m2", "core.errorbench.cli:import_builtin"),
    task="core.errorbench.task:ErrorBenchTask",
    judged_by_model=False,
    page="pages/anchoring.py",
    page_title="Anchoring (ErrorBench)",
    run_fields=(
        RunField("--conditions", "Conditions", "multi",
                 ("blind", "hinted", "anchored", "mislead_high", "mislead_low"),
                 ("blind", "hinted", "anchored", "mislead_high", "mislead_low")),
    ),
    commands=(Command(("m2-score",), "core.errorbench.cli",
                      "score a hypothesis M2 file against a gold M2 file"),),
))

register(Benchmark(
    name="bbm",
    label="BIG-Bench Mistake",
    description="BIG-Bench Mistake (mistake finding)",
    variant_name="method",
    variants=("direct_trace", "direct_step", "cot_step"),
    mode="passive",
    import_word="bbm",
    import_help="import BIG-Bench Mistake traces (JSONL)",
    import_files=("jsonl", "json"),
    cli_module="core.bbm.cli",
    importer="core.bbm.items:import_bytes",
    builtin=("bbm-sample", "bbm_sample.jsonl", "core.bbm.items:import_builtin"),
    task="core.bbm.task:BbmTask",
    judged_by_model=False,
    page="pages/mistake_finding.py",
    page_title="Mistake finding (BBM)",
    run_fields=(
        RunField("--method", "Method", "select", ("direct_trace", "direct_step", "cot_step"),
                 "direct_trace"),
    ),
))
