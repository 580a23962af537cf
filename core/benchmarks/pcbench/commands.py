"""PCBench's hooks of the generic commands (`BENCHMARK.cli`, core/services/benchmark_commands.py):

python -m core import pcbench FILE --name SET
python -m core run pcbench --items SET [--variants proactive,assisted] [--judge-template ID] …
python -m core metrics pcbench --source RUN|published [--judging NAME] [--format csv|json|table]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from core.benchmarks.pcbench import NAME, VARIANTS, prompts
from core.benchmarks.pcbench.items import ImportProblem, import_bytes
from core.benchmarks.pcbench.metrics import UnknownSource, metrics
from core.benchmarks.pcbench.task import DEFAULT_MAX_TOKENS, PcbenchTask, check_variants
from core.engine import bounds
from core.engine.endpoints import is_weak
from core.engine.runner import add_run_args, execute_run, spec_from_args
from core.registry import BenchmarkCommands, Verb
from core.store import DatabaseError, ItemSetConflict, ItemSetInUse, Store


def configure_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="FILE", help="dataset.jsonl of ALIENS232/PCBench")
    parser.add_argument("--name", required=True, help="item set name")


def configure_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="comma-separated: proactive (the flawed problem as is), assisted (with the "
        "paper's check-the-premises instruction); default both, on the same problems",
    )
    parser.add_argument(
        "--judge-template",
        choices=prompts.judge_templates(),
        default=prompts.DEFAULT_JUDGE_TEMPLATE,
        metavar="ID",
        help="judge template id (default pcbench/judge.v2, the paper's judge prompt byte for byte)",
    )
    parser.add_argument("--temperature", type=bounds.real("--temperature", 0.0, 2.0), default=0.0)
    parser.add_argument(
        "--max-tokens",
        type=bounds.whole("--max-tokens", 1, bounds.MAX_TOKENS),
        default=DEFAULT_MAX_TOKENS,
    )
    add_run_args(parser, judge=True)


def configure_metrics(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "PCBench premise-critique rates (percent) and mean response lengths per variant × "
        "error type × difficulty, each row with n, a Wilson 95% interval and its judging."
    )
    parser.add_argument("--source", default="published", help="`published` or a run id")
    parser.add_argument("--judging", default=None, metavar="NAME")
    parser.add_argument("--format", choices=["csv", "json", "table"], default="csv")


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
    if is_weak(spec.endpoint) or is_weak(spec.judge or spec.endpoint):
        spec = replace(spec, endpoint=replace(spec.endpoint, weak=True))
        print(
            "note: a weak model (SmolLM2) is answering or judging; its output shows the "
            "mechanics, not what a capable model would do",
            file=sys.stderr,
        )
    store = Store.open(args.db, create=False)
    try:
        summary = execute_run(store, spec, task, progress=not args.quiet)
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(summary)
    return 0 if summary.status in ("done", "cancelled") else 1


def render(frame: pd.DataFrame, fmt: str) -> str:
    """csv, json (records) or an aligned text table."""
    if fmt == "json":
        return json.dumps(json.loads(frame.to_json(orient="records")), indent=1) + "\n"
    if fmt == "table":
        return frame.to_string(index=False, float_format=lambda x: f"{x:.1f}") + "\n"
    return str(frame.to_csv(index=False))


def _metrics(args: argparse.Namespace) -> int:
    store = Store.open(args.db, create=False)
    try:
        frame = metrics(store, args.source, args.judging)
    except UnknownSource as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(render(frame, args.format))
    return 0


COMMANDS: BenchmarkCommands = BenchmarkCommands(
    import_=Verb(configure_import, _import),
    run=Verb(configure_run, _run),
    metrics=Verb(configure_metrics, _metrics),
)
