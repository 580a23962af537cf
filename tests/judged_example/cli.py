"""`import judged`, `run judged` and `metrics judged` (found through the descriptor's `cli`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.engine.runner import add_run_args, execute_run, spec_from_args
from core.store import Store

from . import NAME, VARIANTS, prompts
from .items import import_bytes
from .metrics import metrics
from .task import JudgedTask


def configure(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    if words[0] == "import":
        parser.add_argument("path")
        parser.add_argument("--name", required=True)
    elif words[0] == "run":
        add_run_args(parser, judge=True)
        parser.add_argument("--variant", choices=VARIANTS, default=VARIANTS[0])
        parser.add_argument("--judge-template", choices=prompts.judge_templates(), default=None)
    else:
        parser.add_argument("--source", required=True, metavar="RUN")
        parser.add_argument("--judging", default=None, metavar="NAME")


def main(args: argparse.Namespace) -> int:
    store = Store.open(args.db)
    verb = args._words[0]
    if verb == "import":
        path = Path(args.path)
        print(f"imported {import_bytes(store, path.read_bytes(), path.name, args.name)} items")
    elif verb == "run":
        task = JudgedTask(args.variant, prompts.judge_template_id(args.judge_template))
        spec = spec_from_args(
            args,
            NAME,
            setting=args.variant,
            mode="proactive",
            template_id=task.template_id,
            params=task.params(),
        )
        print(execute_run(store, spec, task, progress=not args.quiet))
    else:
        try:
            table = metrics(store, args.source, args.judging)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        sys.stdout.write(table.to_csv(index=False))
    return 0
