"""`python -m core …`: one entry point; each command lives in the module named for its concept.

A command is registered here as (words, module, help). The module provides
`configure(parser, words)` to add its flags and `main(args) -> int` to run; both receive the
command words so one module can serve several commands (e.g. `import m2` and `m2-score`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from core.storage import DB_ENV_VAR, DatabaseError

COMMANDS: list[tuple[tuple[str, ...], str, str]] = [
    (("init",), "core.setup", "create or migrate the database; load published results and samples"),
    (("metrics", "misprompt"), "core.misprompt.metrics", "Mis-prompt F1 per model/setting/category"),
    (("metrics", "errorbench"), "core.errorbench.cli", "ErrorBench count and span metrics"),
    (("metrics", "bbm"), "core.bbm", "BIG-Bench Mistake accuracy and F1"),
    (("import", "misprompt"), "core.misprompt.items", "import Mis-prompt items (CSV, JSON, JSONL)"),
    (("import", "m2"), "core.errorbench.cli", "build ErrorBench passages from an M2 file"),
    (("import", "bbm"), "core.bbm", "import BIG-Bench Mistake traces (JSONL)"),
    (("run", "misprompt"), "core.misprompt.task", "run Mis-prompt items against a model, judged"),
    (("run", "errorbench"), "core.errorbench.cli", "run ErrorBench passages under prompt conditions"),
    (("run", "bbm"), "core.bbm", "run BIG-Bench Mistake mistake finding"),
    (("export",), "core.export", "export a run, one row per response"),
    (("serve-local",), "core.local_server", "serve SmolLM2-135M-Instruct on 127.0.0.1"),
    (("m2-score",), "core.errorbench.cli", "score a hypothesis M2 file against a gold M2 file"),
    (("runs",), "core.runs_cli", "list runs, or cancel one"),
]


def add_db_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=None,
        help=f"DuckDB file (default: ${DB_ENV_VAR} or data/results.duckdb)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m core",
        description="Error-handling workbench: load, run and score LLM error-handling benchmarks.",
    )
    top = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    groups: dict[str, argparse._SubParsersAction] = {}
    for words, module_name, help_text in COMMANDS:
        if len(words) == 1:
            sub = top.add_parser(words[0], help=help_text, description=help_text)
        else:
            if words[0] not in groups:
                group = top.add_parser(words[0], help=f"{words[0]} … (one per benchmark)")
                groups[words[0]] = group.add_subparsers(
                    dest="subcommand", metavar="BENCHMARK", required=True
                )
            sub = groups[words[0]].add_parser(words[1], help=help_text, description=help_text)
        sub.set_defaults(_words=words, _module=module_name)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                sub.set_defaults(_missing=f"{' '.join(words)} is not available in this build")
                continue
            raise
        module.configure(sub, words)
        if not any(a.dest == "db" for a in sub._actions):
            add_db_arg(sub)
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_missing", None):
        print(args._missing, file=sys.stderr)
        return 2
    module = importlib.import_module(args._module)
    try:
        return int(module.main(args) or 0)
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # e.g. --out naming a folder, an unwritable path: one line, no traceback
        print(f"error: {describe_os_error(exc)}", file=sys.stderr)
        return 1
    except RecursionError:
        print("error: input nested too deeply to read (e.g. JSON with thousands of levels)",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
