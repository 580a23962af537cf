"""BIG-Bench Mistake commands: `import bbm`, `run bbm`, `metrics bbm` (see core.bbm)."""

from __future__ import annotations

import argparse

from core import bbm


def configure(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    bbm.configure(parser, words)


def main(args: argparse.Namespace) -> int:
    return int(bbm.main(args) or 0)
