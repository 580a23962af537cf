"""`python -m core import results PATH... [--format F] [--item-set NAME | --new-item-set NAME
--benchmark B] [--name RUN] [--variant V] [--dry-run]`: other tools' results as runs.

Each file is planned first (its matched / new / ambiguous / unmatched counts printed), then
written in one transaction; a bad file stops with one error naming it and what is wrong, and
nothing of that file is written (files before it stay imported; each is all or nothing).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb

from core.registry import BENCHMARKS
from core.sources import FORMATS, SourceError, described
from core.sources.service import Options, plan_file, write_plans
from core.store import ItemSetConflict, Store, error_line


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    parser.description = (
        f"Import results written by other tools ({described()}) as runs; see "
        "docs/results-from-other-tools.md."
    )
    parser.add_argument("paths", metavar="PATH", nargs="+", help="results files (or folders)")
    parser.add_argument("--format", choices=list(FORMATS), default=None, dest="fmt")
    sets = parser.add_mutually_exclusive_group()
    sets.add_argument("--item-set", default=None, metavar="NAME", help="match to this set")
    sets.add_argument(
        "--new-item-set",
        default=None,
        metavar="NAME",
        help="build a new item set from the log's inputs and targets (with --benchmark)",
    )
    parser.add_argument(
        "--benchmark",
        default=None,
        help=f"the benchmark of a new item set: one of {', '.join(BENCHMARKS)}",
    )
    parser.add_argument("--name", default=None, metavar="RUN", help="the run name")
    parser.add_argument(
        "--variant",
        default=None,
        help="which of the benchmark's variants the answers are ("
        + "; ".join(f"{b.name}: {', '.join(b.variants)}" for b in BENCHMARKS.values())
        + ")",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="show the matching counts only; write nothing"
    )


def main(args: argparse.Namespace) -> int:
    options = Options(
        fmt=args.fmt,
        item_set=args.item_set,
        new_item_set=args.new_item_set,
        benchmark=args.benchmark,
        name=args.name,
        variant=args.variant,
    )
    store = Store.open(args.db, create=True)
    status = 0
    for raw in args.paths:
        path = Path(raw)
        try:
            plans = plan_file(store, path, options)
            for plan in plans:
                print(plan.summary())
            if args.dry_run:
                for problem in (p for plan in plans for p in plan.problems):
                    print(f"would refuse: {problem}")
                print(f"{path}: dry run, nothing written")
                continue
            written = write_plans(store, plans)
        except (SourceError, ItemSetConflict) as exc:
            print(f"error: {exc}", file=sys.stderr)
            print(f"{path}: nothing of this file was written", file=sys.stderr)
            status = 1
            continue
        except duckdb.Error as exc:
            print(
                f"error: {path}: the import failed ({error_line(exc)}); nothing of this "
                "file was written",
                file=sys.stderr,
            )
            status = 1
            continue
        fresh = [p.run_id for p in plans if not p.unchanged]
        if fresh:
            print(f"{path}: imported {written} responses as run(s) {', '.join(fresh)}")
        else:
            print(f"{path}: already imported, nothing written")
    return status
