"""The append-only action log: who did what, when, on what — one row per action taken in the
app (a run or judging started, an import, a deletion, an audit drawn, labels saved).

Only `record` writes the table and it only inserts: nothing in the program updates or
deletes a row (a team that wants it enforced grants the app's database role INSERT and
SELECT only on `actions`; docs/team-dashboard.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from core.engine.endpoints import looks_like_key, redact_url
from core.store import Store

COLUMNS = ("created_at", "who", "role", "action", "target", "detail")
_MAX_TEXT = 2000  # a detail is a command line or a file name, never a page of text


def record(
    store: Store, who: str, role: str, action: str, target: str = "", detail: str = ""
) -> None:
    """Append one action (its own short transaction)."""
    store.transaction(
        lambda con: con.execute(
            "INSERT INTO actions (created_at, who, role, action, target, detail) "
            "VALUES (current_timestamp, ?, ?, ?, ?, ?)",
            [who[:_MAX_TEXT], role, action, target[:_MAX_TEXT], detail[:_MAX_TEXT]],
        )
    )


def shown_command(args: Sequence[str]) -> str:
    """`python -m core …` as the log keeps it: URL credentials (user:password@, ?code=…) and
    a key pasted where a variable name belongs replaced by *** — the rule of a run's own log
    (core.services.jobs), so the action log holds no secret either."""
    shown = []
    for n, arg in enumerate(args):
        flag = args[n - 1] if n else ""
        if flag.endswith("api-key-env") and looks_like_key(arg):
            shown.append("***")
        else:
            shown.append(redact_url(arg) if "://" in arg else arg)
    return "python -m core " + " ".join(shown)


def actions(
    store: Store,
    who: tuple[str, ...] = (),
    action: tuple[str, ...] = (),
    target: str = "",
    limit: int = 10_000,
) -> pd.DataFrame:
    """The newest `limit` actions, newest first, filtered by person, action and a target
    substring (empty filters keep everything)."""
    where: list[str] = ["TRUE"]
    params: list[object] = []
    if who:
        where.append(f"who IN ({', '.join('?' * len(who))})")
        params.extend(who)
    if action:
        where.append(f"action IN ({', '.join('?' * len(action))})")
        params.extend(action)
    if target:
        where.append("contains(lower(target), lower(?))")
        params.append(target)
    return store.df(
        f"SELECT {', '.join(COLUMNS)} FROM actions WHERE {' AND '.join(where)} "
        f"ORDER BY created_at DESC LIMIT {int(limit)}",
        params,
    )


def people_and_actions(store: Store) -> tuple[list[str], list[str]]:
    """The filters' choices: everyone in the log, every action in it."""
    who = [r[0] for r in store.rows("SELECT DISTINCT who FROM actions ORDER BY who")]
    what = [r[0] for r in store.rows("SELECT DISTINCT action FROM actions ORDER BY action")]
    return who, what
