"""`python -m core runs`: list runs with their progress, or cancel one (`--cancel RUN`).

The same view as the app's Runs page, for a terminal (and for runs started elsewhere).
"""

from __future__ import annotations

import argparse

import pandas as pd

from core.registry import BENCHMARKS
from core.services.jobs import cancel_run, list_runs
from core.store import Store


def configure(
    parser: argparse.ArgumentParser,
    words: tuple[str, ...],  # noqa: ARG001 - core.cli calls each command's configure(parser, words)
) -> None:
    parser.add_argument(
        "--benchmark", choices=tuple(BENCHMARKS), help="only runs of this benchmark"
    )
    parser.add_argument(
        "--all-kinds",
        action="store_true",
        help="include playground runs (default: evaluation runs only)",
    )
    parser.add_argument(
        "--cancel", metavar="RUN", help="stop a running run (SIGTERM; finished items are kept)"
    )


def format_runs(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "no runs yet: start one with `python -m core run misprompt --items SET`"
    view = frame.assign(
        progress=[
            f"{d}/{p} ({100 * g:.0f}%)"
            for d, p, g in zip(
                frame["done"], frame["planned"].fillna(0).astype(int), frame["progress"]
            )
        ],
        created=frame["created_at"].astype(str).str.slice(0, 19),
        model=[f"{m} (weak)" if w else str(m) for m, w in zip(frame["model"], frame["weak_model"])],
    )[
        [
            "run_id",
            "benchmark",
            "status",
            "progress",
            "failed",
            "model",
            "setting",
            "item_set",
            "created",
        ]
    ]
    return view.to_string(index=False)


def main(args: argparse.Namespace) -> int:
    store = Store.open(args.db, create=False)  # a reader (or a cancel): never creates a file
    if args.cancel:
        print(cancel_run(store, args.cancel))
        return 0
    print(format_runs(list_runs(store, args.benchmark, kind=None if args.all_kinds else "eval")))
    return 0
