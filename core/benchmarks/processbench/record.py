"""How a ProcessBench scoring becomes the generic result record.

`answer` is the index the critique named (`-1` = no wrong paragraph, else `paragraph k`), or `?`
when nothing could be read; `correct` is the paper's match (prediction == label); `status` the
parse status (ok / unparsable / out_of_range / truncated, see parse.py). The numbers stay in
`metadata` (what this package's metrics read: predicted_index, label, parse_status).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.engine.results import Result


def answer_of(scores: Mapping[str, Any]) -> str:
    status = scores.get("parse_status") or "unparsable"
    if status == "ok":
        index = scores.get("predicted_index")
        return "-1 (none wrong)" if index == -1 else f"paragraph {index}"
    if status == "out_of_range":
        return f"{scores.get('boxed')} (out of range)"
    return "?"


def to_result(scores: Mapping[str, Any]) -> Result:
    return Result(
        status=str(scores.get("parse_status") or "unparsable"),
        answer=answer_of(scores),
        correct=bool(scores.get("match")),
        metadata=dict(scores),
    )
