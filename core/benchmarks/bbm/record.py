"""How a BIG-Bench Mistake scoring becomes the generic result record.

`answer` is the step the model named as the first mistake (`step 3`), `none` for "no mistake",
or `?` when nothing could be read; `correct` is the paper's exact-location match; `status` the
parse status (ok / partial / unparsable / ambiguous / out_of_range / truncated: an answer cut at
max_tokens with no verdict to read, see task.read_step). The parsed numbers stay in `metadata`
(what this package's metrics read).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.engine.results import Result


def answer_of(scores: Mapping[str, Any]) -> str:
    status = scores.get("parse_status") or "unparsable"
    if status in ("unparsable", "ambiguous", "truncated"):
        return "?"
    step = scores.get("predicted_step")
    return "none" if step is None else f"step {step}"


def to_result(scores: Mapping[str, Any]) -> Result:
    correct = scores.get("location_correct")
    return Result(
        status=str(scores.get("parse_status") or "unparsable"),
        answer=answer_of(scores),
        correct=None if correct is None else bool(correct),
        metadata=dict(scores),
    )


_STATUS = "coalesce(v.metadata->>'parse_status', 'unparsable')"
_STEP = "TRY_CAST(v.metadata->>'predicted_step' AS INTEGER)"

# Schema v4 (core/store/database.py): the derived fields of scorings migrated from schema 3.
MIGRATE_SQL: str = f"""
UPDATE results AS v SET
    status = {_STATUS},
    answer = CASE WHEN {_STATUS} = 'unparsable' THEN '?'
                  WHEN {_STEP} IS NULL THEN 'none' ELSE 'step ' || {_STEP} END,
    correct = TRY_CAST(v.metadata->>'location_correct' AS BOOLEAN)
FROM runs r
WHERE r.run_id = v.run_id AND r.benchmark = 'bbm' AND v.status = 'ok';
"""
