"""Reading a critique's answer: the index in its last `\\boxed{...}`.

The paper's rule (github.com/QwenLM/ProcessBench, code/run_eval.py `extract_answer`): the
content of the LAST `\\boxed{…}` (regex `\\boxed\\{([^}]*)\\}`), stripped, read with `int()`;
anything else is no prediction, which never matches the label. The same rule here, with the
answers that cannot be scored kept apart as BIG-Bench Mistake does:

- `ok`: an integer from -1 to the last paragraph's index (-1 = "no wrong paragraph");
- `out_of_range`: an integer, but below -1 or past the last paragraph (wrong, as in the paper);
- `unparsable`: no `\\boxed{}`, or its content is not an integer (wrong, as in the paper);
- `truncated` (set by the task): unparsable AND cut at max_tokens — the verdict never came.

A structured-output run (processbench/critique_structured.v1, NOT the paper's protocol) is read
as JSON `{"earliest_wrong_paragraph": k}` first (`parse_structured`), and by the box rule when
that JSON cannot be read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

BOXED = re.compile(r"\\boxed\{([^}]*)\}")
OK = "ok"
UNPARSABLE = "unparsable"
OUT_OF_RANGE = "out_of_range"
TRUNCATED = "truncated"


@dataclass(frozen=True)
class Parsed:
    """What was read: `index` (-1 = none wrong) only when `status` is ok; `boxed` the raw
    content of the last box (None when there is none)."""

    status: str
    index: int | None
    boxed: str | None
    value: int | None = None  # the integer read, also when out of range


def boxed_content(text: str | None) -> str | None:
    """The stripped content of the last `\\boxed{…}`, None when there is none."""
    matches = BOXED.findall(text or "")
    return matches[-1].strip() if matches else None


def parse_answer(text: str | None, n_steps: int) -> Parsed:
    """The predicted earliest-wrong index of a critique of a solution with `n_steps` steps."""
    boxed = boxed_content(text)
    if boxed is None:
        return Parsed(UNPARSABLE, None, None)
    try:
        value = int(boxed)
    except ValueError:
        return Parsed(UNPARSABLE, None, boxed)
    if -1 <= value < n_steps:
        return Parsed(OK, value, boxed, value)
    return Parsed(OUT_OF_RANGE, None, boxed, value)


STRUCTURED_KEY = "earliest_wrong_paragraph"


def parse_structured(text: str | None, n_steps: int) -> tuple[Parsed | None, str | None]:
    """A structured answer {"earliest_wrong_paragraph": k}: (Parsed, None), or (None, why) when
    it is not JSON of that shape (cut, prose, a missing field, not an integer)."""
    try:
        data = json.loads(text or "")
    except ValueError as exc:
        return None, f"invalid JSON: {exc}"
    if not isinstance(data, dict) or STRUCTURED_KEY not in data:
        return None, f"no field {STRUCTURED_KEY!r}"
    value = data[STRUCTURED_KEY]
    if isinstance(value, bool) or not isinstance(value, int):
        return None, f"{STRUCTURED_KEY} is not an integer"
    if -1 <= value < n_steps:
        return Parsed(OK, value, str(value), value), None
    return Parsed(OUT_OF_RANGE, None, str(value), value), None
