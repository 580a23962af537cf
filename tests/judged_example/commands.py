"""The hooks of `import judged`, `run judged` and `metrics judged` (the descriptor's `cli`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.engine.runner import add_run_args, execute_run, spec_from_args
from core.registry import BenchmarkCommands, Option, Options, Verb
from core.store import Store

from . import NAME, prompts
from .items import import_bytes
from .metrics import metrics
from .task import JudgedTask

IMPORT_OPTIONS = (
    Option("path"),
    Option("--name", required=True),
)


def do_import(args: argparse.Namespace) -> int:
    path = Path(args.path)
    n = import_bytes(Store.open(args.db), path.read_bytes(), path.name, args.name)
    print(f"imported {n} items")
    return 0


def configure_run(parser: argparse.ArgumentParser) -> None:
    add_run_args(parser, judge=True)


def do_run(args: argparse.Namespace) -> int:
    task = JudgedTask(args.variant, prompts.judge_template_id(args.judge_template))
    spec = spec_from_args(
        args,
        NAME,
        setting=args.variant,
        mode="proactive",
        template_id=task.template_id,
        params=task.params(),
    )
    print(execute_run(Store.open(args.db), spec, task, progress=not args.quiet))
    return 0


METRICS_OPTIONS = (
    Option("--source", required=True, metavar="RUN"),
    Option("--judging", metavar="NAME"),
)


def do_metrics(args: argparse.Namespace) -> int:
    try:
        table = metrics(Store.open(args.db), args.source, args.judging)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(table.to_csv(index=False))
    return 0


COMMANDS: BenchmarkCommands = BenchmarkCommands(
    import_=Options(IMPORT_OPTIONS, do_import),
    run=Verb(configure_run, do_run),
    metrics=Options(METRICS_OPTIONS, do_metrics),
)
