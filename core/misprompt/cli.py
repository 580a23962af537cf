"""Mis-prompt commands: `import misprompt`, `run misprompt`, `metrics misprompt`.

Each verb's flags and body live beside the code they drive (items, task, metrics); this module
is the one place the CLI reaches Mis-prompt through, as the registry names it.
"""

from __future__ import annotations

import argparse
import importlib

_MODULES = {"import": "core.misprompt.items", "run": "core.misprompt.task",
            "metrics": "core.misprompt.metrics"}


def configure(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    importlib.import_module(_MODULES[words[0]]).configure(parser, words)


def main(args: argparse.Namespace) -> int:
    return int(importlib.import_module(_MODULES[args._words[0]]).main(args) or 0)
