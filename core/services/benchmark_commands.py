"""Every benchmark's `import <word>`, `run <name>` and `metrics <name>` (and its own extra
commands): one command module for core/cli.py that finds the benchmark whose words these are
in the registry and hands the parser and the arguments to its typed hooks
(`Benchmark.cli` -> `core.registry.BenchmarkCommands`), which live in its package."""

from __future__ import annotations

import argparse

from core.registry import BENCHMARKS, Verb


def verb_for(words: tuple[str, ...]) -> Verb:
    """The hook of the benchmark that owns `words` (`import <import_word>`, `run <name>`, or
    one of its own commands)."""
    for bench in BENCHMARKS.values():
        owned = {("import", bench.import_word), ("run", bench.name), ("metrics", bench.name)}
        if words in owned or words in {c.words for c in bench.commands}:
            return bench.cli().verb(words)
    raise KeyError(f"no benchmark serves `{' '.join(words)}`")


def configure(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    verb_for(words).configure(parser)


def main(args: argparse.Namespace) -> int:
    return verb_for(tuple(args._words)).main(args)
