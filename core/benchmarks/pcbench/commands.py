"""PCBench's hooks of the generic commands (`BENCHMARK.cli`, core/services/benchmark_commands.py):

python -m core import pcbench FILE --name SET
python -m core run pcbench --items SET [--variants proactive,assisted] [--judge-template ID] …
python -m core metrics pcbench --source RUN|published [--judging NAME] [--format csv|json|table]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from core.benchmarks.pcbench import NAME
from core.benchmarks.pcbench.items import ImportProblem, import_bytes
from core.benchmarks.pcbench.metrics import UnknownSource, metrics
from core.benchmarks.pcbench.task import DEFAULT_MAX_TOKENS, PcbenchTask, check_variants
from core.engine import bounds
from core.engine.runner import add_run_args, spec_from_args
from core.registry import BenchmarkCommands, Option, Options, Verb
from core.services.benchmark_commands import run_and_report, show_metrics, weak_checked
from core.store import ItemSetConflict, ItemSetInUse, Store

IMPORT_OPTIONS = (
    Option("path", metavar="FILE", help="dataset.jsonl of ALIENS232/PCBench"),
    Option("--name", required=True, help="item set name"),
)


def configure_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--temperature", type=bounds.real("--temperature", 0.0, 2.0), default=0.0)
    parser.add_argument(
        "--max-tokens",
        type=bounds.whole("--max-tokens", 1, bounds.MAX_TOKENS),
        default=DEFAULT_MAX_TOKENS,
    )
    add_run_args(parser, judge=True)


METRICS_DESCRIPTION = (
    "PCBench premise-critique rates (percent) and mean response lengths per variant × "
    "error type × difficulty, each row with n, a Wilson 95% interval and its judging."
)
METRICS_OPTIONS = (
    Option("--source", default="published", help="`published` or a run id"),
    Option("--judging", metavar="NAME"),
    Option("--format", choices=("csv", "json", "table"), default="csv"),
)


def _import(args: argparse.Namespace) -> int:
    path = Path(args.path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        print(f"error: {path}: {exc.strerror}", file=sys.stderr)
        return 1
    store = Store.open(args.db)
    try:
        n = import_bytes(store, data, str(path), args.name)
    except ImportProblem as exc:
        print(f"error: {len(exc.problems)} problem(s):\n{exc}", file=sys.stderr)
        print("nothing was imported", file=sys.stderr)
        return 1
    except (ItemSetConflict, ItemSetInUse) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"imported {n} PCBench problems as item set {args.name}")
    return 0


def _run(args: argparse.Namespace) -> int:
    try:
        variants = check_variants([v.strip() for v in args.variants.split(",") if v.strip()])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    task = PcbenchTask(
        variants=variants,
        judge_template=args.judge_template,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
    )
    spec = spec_from_args(
        args,
        NAME,
        setting=",".join(variants),
        mode=task.mode,
        template_id=task.template_id,
        params=task.params(),
    )
    spec = weak_checked(spec, judged=True)
    summary = run_and_report(Store.open(args.db, create=False), spec, task, args)
    return 0 if summary.status in ("done", "cancelled") else 1


def _table(frame: pd.DataFrame) -> str:
    return str(frame.to_string(index=False, float_format=lambda x: f"{x:.1f}"))


def _metrics(args: argparse.Namespace) -> int:
    return show_metrics(
        args, lambda store: metrics(store, args.source, args.judging), UnknownSource, _table
    )


COMMANDS: BenchmarkCommands = BenchmarkCommands(
    import_=Options(IMPORT_OPTIONS, _import),
    run=Verb(configure_run, _run),
    metrics=Options(METRICS_OPTIONS, _metrics, METRICS_DESCRIPTION),
)
