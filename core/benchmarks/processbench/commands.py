"""ProcessBench's hooks of `import processbench`, `run processbench`, `metrics processbench`
(`BENCHMARK.cli`, served by core/services/benchmark_commands.py).

  python -m core import processbench FILE... [--name SET]     (JSON, JSONL or Parquet)
  python -m core run processbench --items SET [--template ID] [--max-tokens N] [endpoint flags]
  python -m core metrics processbench --source RUN|published [--judging NAME]
      [--format csv|json|table]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from core.benchmarks.processbench.items import ImportProblem, import_files
from core.engine import bounds
from core.registry import BenchmarkCommands, Option, Options, Verb
from core.services.benchmark_commands import run_and_report, show_metrics, weak_checked
from core.store import Store

if TYPE_CHECKING:
    import pandas as pd


IMPORT_OPTIONS = (
    Option(
        "paths",
        nargs="+",
        metavar="FILE",
        help="records as downloaded from the Hugging Face hub (Qwen/ProcessBench): Parquet, "
        "JSON Lines or a JSON array; one split per file or several",
    ),
    Option("--name", help="item set name (default: from the file names)"),
)


METRICS_OPTIONS = (
    Option(
        "--source",
        required=True,
        help="a processbench run id ('published': no paper table is shipped, see "
        "docs/benchmarks.md)",
    ),
    Option("--format", choices=("csv", "json", "table"), default="csv"),
    Option(
        "--judging",
        metavar="NAME",
        help="a judging of the run: 'default' (its own scoring) or a `rescore` judging "
        "(default: the run's current judging)",
    ),
)


def configure_run(parser: argparse.ArgumentParser) -> None:
    from core.engine.runner import add_run_args

    add_run_args(parser)
    parser.add_argument(
        "--max-tokens",
        type=bounds.whole("--max-tokens", 1, bounds.MAX_TOKENS),
        default=None,
        help="per critique (default 2048; the paper allowed 8192)",
    )


def _main_import(args: argparse.Namespace) -> int:
    store = Store.open(args.db)
    try:
        result = import_files(store, [Path(p) for p in args.paths], name=args.name)
    except ImportProblem as exc:
        print(f"error: {len(exc.problems)} problem(s):", file=sys.stderr)
        print(str(exc), file=sys.stderr)
        print("nothing was imported", file=sys.stderr)
        return 1
    verb = "replaced" if result.replaced else "created"
    print(f"{verb} item set {result.item_set}: {result.n_items} solutions")
    for split, d in result.info["splits"].items():
        print(
            f"  {split}: {d['solutions']} solutions, {d['erroneous']} with a wrong step, "
            f"{d['correct']} correct"
        )
    return 0


def _main_metrics(args: argparse.Namespace) -> int:
    from core.benchmarks.processbench.queries import UnknownSource, metrics_for_source

    return show_metrics(
        args,
        lambda store: metrics_for_source(store, args.source, args.judging),
        UnknownSource,
        _table,
    )


def _table(frame: pd.DataFrame) -> str:
    shown = frame.drop(columns=["source", "mode"]).round(1)
    return str(shown.to_string(index=False, na_rep="—"))


def _main_run(args: argparse.Namespace) -> int:
    """One critique per solution of the item set (resumable: re-use --run-name)."""

    from core.benchmarks.processbench.prompts import VARIANT
    from core.benchmarks.processbench.task import DEFAULT_MAX_TOKENS, ProcessBenchTask
    from core.engine.runner import spec_from_args

    if args.max_tokens is not None and args.max_tokens < 1:
        print("error: --max-tokens must be ≥ 1", file=sys.stderr)
        return 2
    store = Store.open(args.db, create=False)  # a run needs an item set: never a new file
    try:
        task = ProcessBenchTask(
            template=args.template, max_tokens=args.max_tokens or DEFAULT_MAX_TOKENS
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    spec = spec_from_args(
        args,
        "processbench",
        setting=VARIANT,
        mode="passive",
        template_id=task.template_id,
        params={"max_tokens": task.max_tokens, "temperature": task.temperature, "samples": 1},
    )
    summary = run_and_report(store, weak_checked(spec, who="critic"), task, args)
    return 0 if summary.status == "done" else 1


COMMANDS: BenchmarkCommands = BenchmarkCommands(
    import_=Options(IMPORT_OPTIONS, _main_import),
    run=Verb(configure_run, _main_run),
    metrics=Options(METRICS_OPTIONS, _main_metrics),
)
