"""`python -m core runs`: list runs with their progress, cancel one (`--cancel RUN`), say why
one failed (`RUN --errors`), delete one (`--delete RUN --yes`).

The same view as the app's Runs page, for a terminal (and for runs started elsewhere).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from core.declared import example_run
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
    parser.add_argument(
        "--delete",
        metavar="RUN",
        help="delete a run whole (its responses, every judging, its call records); without "
        "--yes only says what would go. Refused while it runs or when an audit sampled it",
    )
    parser.add_argument(
        "--yes", action="store_true", help="confirm --delete (nothing is deleted without it)"
    )
    parser.add_argument(
        "--epochs-summary",
        metavar="RUN",
        help="a run asked K times (`run --epochs K`): per variant and outcome (correct, each "
        "label) the mean, the majority, pass^k, the within-item spread and the share of "
        "items whose K answers are mixed",
    )
    parser.add_argument(
        "--self-agreement",
        metavar="RUN",
        help="a judging repeated K times (`rescore --repeat K`, named by --judging): per "
        "label Fleiss' kappa and the share of unanimous verdicts",
    )
    parser.add_argument(
        "--judging",
        metavar="NAME",
        help="the judging to read (default: the run's current one; --self-agreement needs it)",
    )
    parser.add_argument(
        "run",
        nargs="?",
        default=None,
        metavar="RUN",
        help="one run: with --errors, why its units failed; with --shards, its shards; "
        "alone, its row",
    )
    parser.add_argument(
        "--errors",
        nargs="?",
        const="",
        default=None,
        metavar="RUN",
        help="the stored reasons of a run's failures (failed answers, failed verdicts of its "
        "judging — --judging NAME for another —, failed call attempts), grouped with counts "
        "and one example each: `runs RUN --errors` or `runs --errors RUN`",
    )
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument(
        "--shards",
        action="store_true",
        help="RUN's shards (`run --shard K/N`): host, pid, status, done/planned, started, "
        "finished, last heard of",
    )


def format_runs(frame: pd.DataFrame) -> str:
    if frame.empty:
        return f"no runs yet: start one with `python -m core run {example_run()}`"
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
    if args.delete:
        return _delete(store, args.delete, args.yes)
    if args.epochs_summary or args.self_agreement:
        return _repeats(store, args)
    if args.errors is not None:
        return _errors(store, args.errors or args.run, args.judging, args.format)
    if args.shards:
        return _shards(store, args)
    frame = list_runs(store, args.benchmark, kind=None if args.all_kinds else "eval")
    if args.run:
        frame = frame[frame["run_id"] == args.run]
        if frame.empty:
            print(f"error: no run {args.run!r} (`python -m core runs` lists them)", file=sys.stderr)
            return 1
    print(format_runs(frame))
    return 0


def _delete(store: Store, run_id: str, yes: bool) -> int:
    """`runs --delete RUN [--yes]`: core/services/run_choice.delete_run, confirmed."""
    from core.services import run_choice

    found = run_choice.run_footprint(store, run_id)
    if not found:
        print(f"error: no run {run_id!r} (`python -m core runs` lists them)", file=sys.stderr)
        return 1
    if not yes:
        rows = found["rows"]
        print(
            f"run {run_id} ({found['status']}) has {rows['responses']} responses, "
            f"{rows['results']} results, {rows['judgings']} named judgings and {rows['calls']} "
            f"call records; nothing was deleted. To delete them: "
            f"`python -m core runs --delete {run_id} --yes`",
            file=sys.stderr,
        )
        return 1
    print(run_choice.delete_run(store, run_id))
    return 0


def _errors(store: Store, run_id: str | None, judging: str | None, fmt: str) -> int:
    """`runs RUN --errors [--judging NAME]`: core/services/failures.py, as text, CSV or JSON."""
    import json

    from core.services import failures

    if not run_id:
        print("error: --errors needs a run: `runs RUN --errors`", file=sys.stderr)
        return 2
    if not store.scalar("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]):
        print(f"error: no run {run_id!r} (`python -m core runs` lists them)", file=sys.stderr)
        return 1
    name = judging or "default"
    groups = failures.run_failures(store, run_id, judging=name)
    if fmt == "table":
        print(failures.failures_text(run_id, groups, name))
    elif fmt == "json":
        print(json.dumps([g.as_dict() for g in groups], ensure_ascii=False, indent=1))
    else:
        from core.services.csvsafe import neutralise_formulas

        frame = pd.DataFrame([g.as_dict() for g in groups], columns=list(_ERROR_COLUMNS))
        print(neutralise_formulas(frame).to_csv(index=False), end="")
    return 0


_ERROR_COLUMNS = ("stage", "reason", "count", "example", "item_id", "variant")


def _repeats(store: Store, args: argparse.Namespace) -> int:
    """`--epochs-summary RUN` / `--self-agreement RUN --judging NAME` (core/services/repeats)."""
    from core.services import repeats

    try:
        if args.epochs_summary:
            frame = repeats.run_epochs_summary(store, args.epochs_summary, args.judging)
        else:
            if not args.judging:
                print("error: --self-agreement needs --judging NAME", file=sys.stderr)
                return 2
            frame = repeats.run_self_agreement(store, args.self_agreement, args.judging)
    except LookupError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 1
    print(repeats.as_output(frame, args.format))
    return 0


def _shards(store: Store, args: argparse.Namespace) -> int:
    """`runs RUN --shards`: the run's ledger, one row per shard (core/engine/runner/shards.py)."""
    from core.engine.runner.shards import shard_table
    from core.services import repeats

    if not args.run:
        print("error: use `runs RUN --shards` (a run's shards)", file=sys.stderr)
        return 2
    if store.scalar("SELECT count(*) FROM runs WHERE run_id = ?", [args.run]) == 0:
        print(f"error: no run {args.run!r}", file=sys.stderr)
        return 1
    frame = shard_table(store, args.run)
    if frame.empty:
        print(f"run {args.run!r} was not split into shards (`run ... --shard K/N`)")
        return 0
    print(repeats.as_output(frame, args.format))
    return 0
