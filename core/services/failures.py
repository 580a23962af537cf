"""Why a run's or a judging's units failed: the reasons stored with them, grouped.

A run whose 88 answers all failed said only "0 of 88 done, 88 failed" while the reason sat in
`responses.error` / `results.error` / `calls.error`. This groups those stored texts by reason
(the text with long quoted parts and numbers of the item's own masked), each with its count
and one full example, for the Runs page, the run's drill-down, the Responses grid and
`python -m core runs RUN --errors`. Plain Python over the store; the pages only draw it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from core.store import Store

STAGES = {
    "response": "model answers that failed",
    "judging": "verdicts that failed",
    "call": "failed call attempts (retried ones included)",
}
MAX_REASON = 240  # characters of a reason as shown (the example keeps the whole text)
_QUOTED = re.compile(r"'[^'\n]{24,}'|\"[^\"\n]{24,}\"")  # an item's or a model's text
_ITEM_NUMBER = re.compile(r"\b\d{6,}\b")  # ids and timestamps, not HTTP codes or counts


@dataclass(frozen=True)
class FailureGroup:
    """One reason: where it was stored, how many units carry it, one of them in full."""

    stage: str  # response | judging | call
    reason: str
    count: int
    example: str
    item_id: str | None
    variant: str | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def reason_of(error: str | None) -> str:
    """The part of a stored error that is the same for every unit it hit: the first line,
    quoted texts of the item or the model and long numbers masked, at most MAX_REASON chars."""
    lines = (error or "").strip().splitlines()
    text = lines[0] if lines else "(no reason stored)"
    text = _ITEM_NUMBER.sub("N", _QUOTED.sub("'…'", text))
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def _grouped(stage: str, rows: list[tuple[Any, ...]]) -> list[FailureGroup]:
    """rows: (error, count, example item, example variant) per distinct stored error."""
    groups: dict[str, list[Any]] = {}
    for error, count, item_id, variant in rows:
        key = reason_of(error)
        if key not in groups:
            groups[key] = [0, error or "(no reason stored)", item_id, variant]
        groups[key][0] += int(count)
    return [
        FailureGroup(stage, reason, n, str(example), _text(item), _text(variant))
        for reason, (n, example, item, variant) in sorted(
            groups.items(), key=lambda kv: (-kv[1][0], kv[0])
        )
    ]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def run_failures(
    store: Store, run_id: str, judging: str | None = "default", calls: bool = True
) -> list[FailureGroup]:
    """The failure reasons of a run: its failed model answers, the failed verdicts of
    `judging` ('default': the run's own; None: none), and (`calls`) its failed call attempts.
    Largest group first within each stage."""
    with store.connect() as con:
        responses = con.execute(
            "SELECT error, count(*), min(item_id), min(variant) FROM responses "
            "WHERE run_id = ? AND status <> 'ok' GROUP BY error",
            [run_id],
        ).fetchall()
        verdicts = (
            con.execute(
                "SELECT error, count(*), min(item_id), min(variant) FROM results "
                "WHERE run_id = ? AND judging = ? AND status = 'failed' GROUP BY error",
                [run_id, judging],
            ).fetchall()
            if judging is not None
            else []
        )
        attempts = (
            con.execute(
                "SELECT coalesce(role, '') || ': ' || coalesce(error, '(no reason stored)'), "
                "count(*), min(item_id), min(variant) FROM calls "
                "WHERE run_id = ? AND status <> 'ok' GROUP BY ALL",
                [run_id],
            ).fetchall()
            if calls
            else []
        )
    return (
        _grouped("response", responses)
        + _grouped("judging", verdicts)
        + _grouped("call", [(e, n, i, v) for e, n, i, v in attempts])
    )


def failures_text(run_id: str, groups: list[FailureGroup], judging: str = "default") -> str:
    """The CLI's and a log's view: per stage its total, then each reason with its count and one
    example (the whole stored text, with its item)."""
    if not groups:
        return f"run {run_id}: no failure stored (judging {judging})"
    lines = [f"run {run_id}: the stored reasons of its failures (judging {judging})"]
    for stage, title in STAGES.items():
        part = [g for g in groups if g.stage == stage]
        if not part:
            continue
        lines.append(f"{title}: {sum(g.count for g in part)}")
        for group in part:
            lines.append(f"  {group.count:>6} × {group.reason}")
            where = f"item {group.item_id}" + (f" ({group.variant})" if group.variant else "")
            if group.example.strip() != group.reason:
                lines.append(f"         e.g. {where}: {group.example.strip()}")
            else:
                lines.append(f"         e.g. {where}")
    return "\n".join(lines)


def top_reasons(store: Store, run_ids: list[str]) -> dict[str, str]:
    """Per run, its most common failure reason (failed answers and failed verdicts of its own
    judging together), for a runs table's `why` column; runs without failures are absent."""
    if not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    rows = store.rows(
        f"""
        WITH e AS (
            SELECT run_id, error FROM responses WHERE status <> 'ok' AND run_id IN ({marks})
            UNION ALL
            SELECT run_id, error FROM results
            WHERE judging = 'default' AND status = 'failed' AND run_id IN ({marks})
        )
        SELECT run_id, error, count(*) AS n FROM e GROUP BY run_id, error
        QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY n DESC, error) = 1
        """,
        [*run_ids, *run_ids],
    )
    return {str(run_id): reason_of(error) for run_id, error, _n in rows}


def failure_frame(groups: list[FailureGroup]) -> Any:
    """The groups as a table (stage, count, reason, example, item): what the pages show."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "stage": STAGES.get(g.stage, g.stage),
                "count": g.count,
                "reason": g.reason,
                "example": g.example,
                "item_id": g.item_id,
                "variant": g.variant,
            }
            for g in groups
        ],
        columns=["stage", "count", "reason", "example", "item_id", "variant"],
    )


def runs_failure_frame(store: Store, run_ids: list[str]) -> Any:
    """The failure reasons of several runs (each with its current judging, as the Responses
    grid shows it), one table with a `run_id` column; empty when none failed."""
    import pandas as pd

    current = dict(
        store.rows(
            "SELECT run_id, judging FROM current_judgings WHERE run_id IN ("
            + ", ".join("?" for _ in run_ids)
            + ")",
            list(run_ids),
        )
        if run_ids
        else []
    )
    frames = []
    for run_id in run_ids:
        groups = run_failures(store, run_id, current.get(run_id, "default"), calls=False)
        if groups:
            frames.append(failure_frame(groups).assign(run_id=run_id))
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    return frame[["run_id", *[c for c in frame.columns if c != "run_id"]]]
