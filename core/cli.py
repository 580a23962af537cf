"""`python -m core …`: one entry point over the benchmark registry (core/registry.py).

A command is (words, module, help). The module provides `configure(parser, words)` to add its
flags and `main(args) -> int` to run; both receive the command words so one module can serve
several commands (e.g. `import m2` and `m2-score`). Benchmark commands (`import`, `run`,
`metrics` per benchmark) come from the registry; the rest are listed here.

Modules are imported lazily: only the command being run (or asked for `--help`) is configured,
so `python -m core --help` imports no benchmark code, pandas or duckdb.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from core.registry import BENCHMARKS, Command

# the same names as core.store's (kept import-free here)
DB_ENV_VAR = "EHW_DB"
DATA_PATH_ENV = "EHW_DATA_PATH"
AS_OF_ENV = "EHW_AS_OF"

GENERAL: list[Command] = [
    Command(
        ("init",),
        "core.services.setup",
        "create or migrate the database; load published results and samples",
    ),
    Command(
        ("rescore",),
        "core.services.rescore",
        "{judge_or_score} a run's stored responses again, without asking the model",
    ),
    Command(
        ("export",),
        "core.services.export",
        "export a run, one row per response (or, with --bundle, whole for another store)",
    ),
    Command(
        ("import", "run"),
        "core.services.bundle",
        "bring a run bundle (`export --bundle`) into the store",
    ),
    Command(
        ("import", "results"),
        "core.sources.cli",
        "import results of other tools (Inspect AI, lm-eval, promptfoo, Every Eval Ever"
        "{own_formats}) as runs",
    ),
    Command(
        ("store", "copy"),
        "core.services.store_copy",
        "copy a whole store into an empty one, checking every table's row count",
    ),
    Command(
        ("store", "check"),
        "core.services.store_check",
        "find duplicate keys, orphan rows and missing files in a store; --repair fixes the safe",
    ),
    Command(
        ("runs",),
        "core.services.runs_cli",
        "list runs, cancel or delete one, say why one failed (RUN --errors), its shards "
        "(RUN --shards)",
    ),
    Command(
        ("compare",),
        "core.services.compare_runs",
        "paired comparison of two runs over the items both answered (diff, bootstrap CI, "
        "McNemar, Holm)",
    ),
    Command(
        ("audit",),
        "core.services.audit_cli",
        "judge audit: `audit ppi` gives judge-corrected (prediction-powered) estimates",
    ),
    Command(
        ("serve-local",), "core.engine.local_server", "serve SmolLM2-135M-Instruct on 127.0.0.1"
    ),
]


# Command groups that are not one command per benchmark.
GROUP_HELP = {
    "store": "store copy: move a whole store (file or lake) into another; store check: find "
    "(and --repair) duplicate keys, orphan rows, missing files",
    "import": "import … (one per benchmark), import run DIR (a run bundle), or import "
    "results PATH… (other tools' results)",
}


def _help_words() -> dict[str, str]:
    """What general commands' help says of the registered benchmarks (from their entries)."""
    benches = list(BENCHMARKS.values())
    judged = ", ".join(b.label for b in benches if b.judged_by_model)
    scored = ", ".join(b.label for b in benches if not b.judged_by_model)
    return {
        "judge_or_score": " or ".join(
            [*([f"judge ({judged})"] if judged else []), *([f"score ({scored})"] if scored else [])]
        )
        or "judge or score",
        "own_formats": "".join(
            f"; {b.label}: {', '.join(name for name, _ in b.result_formats)}"
            for b in benches
            if b.result_formats
        ),
    }


def commands() -> list[Command]:
    """Every command: general ones (their help naming the registered benchmarks), then each
    registered benchmark's."""
    words = _help_words()
    out = [replace(c, help=c.help.format(**words)) for c in GENERAL]
    for bench in BENCHMARKS.values():
        out.extend(bench.cli_commands())
    order = {"init": 0, "import": 1, "run": 2, "rescore": 3, "metrics": 4, "export": 5}
    return sorted(out, key=lambda c: order.get(c.words[0], 9))


def add_db_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=None,
        help=f"the store: a DuckDB file (default: ${DB_ENV_VAR} or data/results.duckdb) or a "
        "DuckLake, ducklake:postgres:<libpq conninfo> (password from PGPASSWORD)",
    )


def add_store_args(parser: argparse.ArgumentParser) -> None:
    """--data-path (a new DuckLake's Parquet files) and --as-of (read a lake's snapshot): every
    command takes them; they reach the store through their environment variables."""
    parser.add_argument(
        "--data-path",
        default=None,
        help=f"where a new DuckLake keeps its data: a shared folder or s3://bucket/prefix "
        f"(default: ${DATA_PATH_ENV}; S3 keys from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)",
    )
    parser.add_argument(
        "--as-of",
        type=int,
        default=None,
        metavar="SNAPSHOT",
        help=f"read a DuckLake as it was at this snapshot id (default: ${AS_OF_ENV}; the latest)",
    )


def _wanted(words: tuple[str, ...], argv: Sequence[str]) -> bool:
    """Is `argv` (before any flag) asking for this command? Only that one gets configured."""
    positional = [a for a in argv if not a.startswith("-")]
    return tuple(positional[: len(words)]) == words


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with `argv`, only the command it names is fully configured (lazy imports).
    Without `argv` every command is configured (for tests and documentation)."""
    parser = argparse.ArgumentParser(
        prog="python -m core",
        description="Error-handling workbench: load, run and score LLM error-handling benchmarks.",
    )
    top = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    groups: dict[str, Any] = {}
    for command in commands():
        words = command.words
        if len(words) == 1:
            sub = top.add_parser(words[0], help=command.help, description=command.help)
        else:
            if words[0] not in groups:
                group = top.add_parser(
                    words[0], help=GROUP_HELP.get(words[0], f"{words[0]} … (one per benchmark)")
                )
                groups[words[0]] = group.add_subparsers(
                    dest="subcommand", metavar="BENCHMARK", required=True
                )
            sub = groups[words[0]].add_parser(words[1], help=command.help, description=command.help)
        sub.set_defaults(_words=words, _command=command)
        if argv is not None and not _wanted(words, argv):
            continue
        command.load().configure(sub, words)
        if not any(a.dest == "db" for a in sub._actions):
            add_db_arg(sub)
        if not any(a.dest == "db" and a.help == argparse.SUPPRESS for a in sub._actions):
            add_store_args(sub)  # not for a command that uses no store (serve-local)
    return parser


def describe_os_error(exc: OSError) -> str:
    """'PATH: why' for a file-system error (no Python exception names)."""
    name = exc.filename if exc.filename is not None else ""
    if isinstance(exc, IsADirectoryError):
        why = "is a folder, not a file"
    elif isinstance(exc, NotADirectoryError):
        why = "a part of this path is a file, not a folder"
    else:
        why = exc.strerror or str(exc)
    return f"{name}: {why}" if name else why


def end_startup() -> None:
    """The command starts: when its entry point turned the collector off for start-up
    (core/__main__.py, tests/echo_task.py), what start-up made is frozen (never walked again)
    and the collector comes back on, so a long command's garbage is still collected. When it
    was on (the app, the tests calling main in-process), nothing changes: a long-lived process
    must not freeze its garbage."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    module = args._command.load()
    from core.declared import wire_store
    from core.store import DatabaseError

    wire_store()  # the store learns the benchmarks' views and caches, whatever the command

    if getattr(args, "data_path", None):
        os.environ[DATA_PATH_ENV] = args.data_path
    if getattr(args, "as_of", None) is not None:
        os.environ[AS_OF_ENV] = str(args.as_of)

    end_startup()
    try:
        return int(module.main(args) or 0)
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # e.g. --out naming a folder, an unwritable path: one line, no traceback
        print(f"error: {describe_os_error(exc)}", file=sys.stderr)
        return 1
    except RecursionError:
        print(
            "error: input nested too deeply to read (e.g. JSON with thousands of levels)",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("interrupted: re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
