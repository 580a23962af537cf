"""placeholder"""

from __future__ import annotations

from pathlib import Path

from core.sources import SourceError, SourceRun

NAME = "promptfoo"


def detect(path: Path, head: bytes) -> bool:  # noqa: ARG001 - not written yet
    return False


def read(path: Path) -> list[SourceRun]:
    raise SourceError(f"{path}: not yet")
