"""How an ErrorBench scoring becomes the generic result record.

`answer` is the reported error count (`n̂ 3`, marked when no TOTAL line was found and the listed
errors were counted instead), `correct` is "reported count = the passage's gold count", `score`
the reported count itself; status `unparsable` when no count could be read at all, `truncated`
when a structured template's JSON answer was cut at max_tokens and nothing could be read (not
scored; `metadata.json` / `json_error` say why). The parsed numbers stay in `metadata` (what
this package's metrics read).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.engine.results import Result


def to_result(scores: Mapping[str, Any]) -> Result:
    reported = scores.get("reported")
    n = scores.get("n")
    if reported is None:
        status = "truncated" if scores.get("unreadable") == "truncated" else "unparsable"
        return Result(status=status, answer="?", metadata=dict(scores))
    answer = f"n̂ {reported}" + (" (unparsed)" if scores.get("unparsed") else "")
    if scores.get("read_as") == "text":  # structured template, JSON unreadable: text fallback
        answer += " (JSON unreadable, read as text)"
    return Result(
        status="ok",
        answer=answer,
        correct=None if n is None else int(reported) == int(n),
        score=float(reported),
        metadata=dict(scores),
    )


_REPORTED = "TRY_CAST(v.metadata->>'reported' AS INTEGER)"
_N = "TRY_CAST(v.metadata->>'n' AS INTEGER)"
_UNPARSED = "coalesce(TRY_CAST(v.metadata->>'unparsed' AS BOOLEAN), false)"

# Schema v4 (core/store/database.py): the derived fields of scorings migrated from schema 3.
MIGRATE_SQL: str = f"""
UPDATE results AS v SET
    status = CASE WHEN {_REPORTED} IS NULL THEN 'unparsable' ELSE 'ok' END,
    answer = 'n̂ ' || {_REPORTED} || CASE WHEN {_UNPARSED} THEN ' (unparsed)' ELSE '' END,
    correct = {_REPORTED} = {_N},
    score = {_REPORTED}
FROM runs r
WHERE r.run_id = v.run_id AND r.benchmark = 'errorbench' AND v.status = 'ok';
"""
