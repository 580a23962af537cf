"""Bounds of the numeric command-line flags: each flag's type is a `Bounded`, which refuses a
value outside [low, high] as one line (`error: --epochs must be ≤ 100 (got 1000000)`, exit 1)
while the command line is read — before a store is opened or a unit planned.

Why a cap on every number: `--epochs 99999999999999999999` planned units until memory ran out,
`rescore --repeat 1000000` judged for 41 minutes; 0 ran as 1. The caps are far above any real
use and stated in `--help` (docs/runs-and-endpoints.md lists them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_EPOCHS = 100  # answers per item (`run --epochs K`); pass^k past ~20 is already 0 or 1
MAX_REPEATS = 50  # judgings of one run (`rescore --repeat K`); κ is stable well before
MAX_CONCURRENCY = 4096  # requests in flight; one runner process drives ~600 calls/s
MAX_RETRIES = 50  # backoff grows exponentially: 50 retries are hours of waiting
MAX_TOKENS = 1_000_000  # per call; no served context is larger
MAX_ITEMS = 100_000_000  # --limit, --dyck-sample, --per-count: more items than any set
MAX_SEED = 2**63 - 1  # numpy's and Python's generators take any non-negative int this size
MAX_DRAWS = 1_000_000  # bootstrap draws; 10,000 is the default and plenty
MAX_ERRORS = 10_000  # error counts per passage (a gold count, a model's answer)
MAX_SHOTS = 100  # solved examples shown before a trace


@dataclass(frozen=True)
class Bounded:
    """An argparse `type` for one flag: a whole number (or, `real`, a finite number) within
    [low, high]; anything else exits with one line naming the flag."""

    flag: str
    low: float
    high: float
    real: bool = False

    def __call__(self, text: str) -> int | float:
        value: int | float
        try:
            value = float(text) if self.real else int(text)
        except ValueError:
            kind = "a number" if self.real else "a whole number"
            raise SystemExit(f"error: {self.flag} must be {kind} (got {text!r})") from None
        if self.real and not math.isfinite(value):
            raise SystemExit(f"error: {self.flag} must be a number (got {text!r})")
        if value < self.low:
            raise SystemExit(f"error: {self.flag} must be ≥ {_shown(self.low)} (got {text})")
        if value > self.high:
            raise SystemExit(f"error: {self.flag} must be ≤ {_shown(self.high)} (got {text})")
        return value

    def __repr__(self) -> str:  # argparse names the type in some messages
        return "number" if self.real else "int"


def _shown(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def whole(flag: str, low: int, high: int) -> Bounded:
    """A whole-number flag within [low, high]."""
    return Bounded(flag, low, high)


def real(flag: str, low: float, high: float) -> Bounded:
    """A finite real-number flag within [low, high] (NaN and infinities refused)."""
    return Bounded(flag, low, high, real=True)
