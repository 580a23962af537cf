"""Small checks the runner's steps share: whether a process still runs (`pid_alive`) and what a
`--shard K/N` flag says (`parse_shard`).

Why a module of their own: `spec` (the flags), `plan` (the run row) and `shards` (the ledger)
all need them, and each of those imports another; kept here, importing nothing of the runner,
they tie no loop between the steps."""

from __future__ import annotations

import os
import re

MAX_SHARDS = 1000
_SHARD_RE = re.compile(r"^\s*(\d{1,4})\s*/\s*(\d{1,4})\s*$")


def pid_alive(pid: int | None) -> bool:
    """Whether process `pid` runs on this machine (a zombie does not)."""
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OSError, ValueError):
        return False
    # a zombie (killed child not yet reaped) is not running
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii") as handle:
            return handle.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` with 1 ≤ K ≤ N ≤ MAX_SHARDS, else a SystemExit saying what is allowed."""
    match = _SHARD_RE.match(text or "")
    if not match:
        raise SystemExit(f"error: --shard {text!r}: write K/N, e.g. 2/4 (shard 2 of 4)")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= n <= MAX_SHARDS:
        raise SystemExit(f"error: --shard {text!r}: N must be 1..{MAX_SHARDS}")
    if not 1 <= k <= n:
        raise SystemExit(f"error: --shard {text!r}: K must be 1..{n}")
    return k, n
