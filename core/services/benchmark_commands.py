"""Every benchmark's `import <word>`, `run <name>` and `metrics <name>` (and its own extra
commands): one command module for core/cli.py that finds the benchmark whose words these are
in the registry, builds the command's flags from the benchmark's declarations (`Options` of
`import` and `metrics`, `RunField`s of `run`) and hands the arguments to its typed hook
(`Benchmark.cli` -> `core.registry.BenchmarkCommands`), which lives in its package."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from core.registry import BENCHMARKS, Options, Verb

if TYPE_CHECKING:
    import pandas as pd

    from core.engine.runner import RunSpec, RunSummary
    from core.engine.task import Task
    from core.store import Store

T = TypeVar("T")


def verb_for(words: tuple[str, ...]) -> Options | Verb:
    """The hook of the benchmark that owns `words` (`import <import_word>`, `run <name>`, or
    one of its own commands)."""
    for bench in BENCHMARKS.values():
        owned = {("import", bench.imports.word), ("run", bench.name), ("metrics", bench.name)}
        if words in owned or words in {c.words for c in bench.commands}:
            return bench.cli().verb(words)
    raise KeyError(f"no benchmark serves `{' '.join(words)}`")


def configure(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    """`import <word>` and `metrics <name>` take the benchmark's declared options (core.registry
    Option); `run <name>` its declared run fields (the run form's, core.registry RunField) as
    flags, then whatever flags its hook adds (sampling, endpoints, tokens, …)."""
    if words[0] == "run":
        for run_field in BENCHMARKS[words[1]].run_fields:
            run_field.add_to(parser)
    verb_for(words).configure(parser)


def main(args: argparse.Namespace) -> int:
    return verb_for(tuple(args._words)).main(args)


# -- what the benchmarks' hooks share ---------------------------------------------------------


def weak_checked(spec: RunSpec, *, judged: bool = False, who: str = "model") -> RunSpec:
    """The run spec, marked weak (runs.weak_model) when its model - or, for a `judged` run,
    its judge - is a weak one (SmolLM2, by endpoint flag or model name), with one note on
    stderr: its output shows the mechanics, not what a capable `who` would do."""
    from dataclasses import replace

    from core.engine.endpoints import is_weak

    if not (is_weak(spec.endpoint) or (judged and is_weak(spec.judge))):
        return spec
    print(
        f"note: a weak model (SmolLM2) is answering{' or judging' if judged else ''}; its "
        f"output shows the mechanics, not what a capable {who} would do",
        file=sys.stderr,
    )
    return replace(spec, endpoint=replace(spec.endpoint, weak=True))


def run_and_report(store: Store, spec: RunSpec, task: Task, args: argparse.Namespace) -> RunSummary:
    """Execute the run (resumable), print its summary and return it."""
    from core.engine.runner import execute_run

    summary = execute_run(store, spec, task, progress=not getattr(args, "quiet", False))
    print(summary)
    return summary


def read_source(
    args: argparse.Namespace, read: Callable[[Store], T], unknown: type[Exception]
) -> T | None:
    """`metrics <name> --source …`: the frame `read` makes of the store (opened, never created),
    or None after one `error:` line when the source is `unknown` (the command exits 2)."""
    from core.store import Store

    try:
        return read(Store.open(args.db, create=False))
    except unknown as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def write_frame(
    frame: pd.DataFrame, fmt: str, table: Callable[[pd.DataFrame], str] | None = None
) -> None:
    """A metrics frame on stdout: csv, json (records; NaN is null) or `table` (aligned text)."""
    if fmt == "json":
        json.dump(json.loads(frame.to_json(orient="records")), sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif fmt == "table":
        sys.stdout.write((table(frame) if table else frame.to_string(index=False)) + "\n")
    else:
        frame.to_csv(sys.stdout, index=False)


def show_metrics(
    args: argparse.Namespace,
    read: Callable[[Store], pd.DataFrame],
    unknown: type[Exception],
    table: Callable[[pd.DataFrame], str] | None = None,
) -> int:
    """`metrics <name>`'s usual body: the frame of `--source` (`read_source`) written in
    `--format` (`write_frame`); exit 2 for an unknown source."""
    frame = read_source(args, read, unknown)
    if frame is None:
        return 2
    write_frame(frame, args.format, table)
    return 0
