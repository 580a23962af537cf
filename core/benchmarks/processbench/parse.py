"""Reading a critique's answer: the index in its last `\\boxed{...}`.

The paper's rule (github.com/QwenLM/ProcessBench, code/run_eval.py `extract_answer`): the
content of the LAST `\\boxed{…}` (regex `\\boxed\\{([^}]*)\\}`), stripped, read with `int()`;
anything else is no prediction, which never matches the label. The same rule here, with the
answers that cannot be scored kept apart as BIG-Bench Mistake does:

- `ok`: an integer from -1 to the last paragraph's index (-1 = "no wrong paragraph");
- `out_of_range`: an integer, but below -1 or past the last paragraph (wrong, as in the paper);
- `unparsable`: no `\\boxed{}`, or its content is not an integer (wrong, as in the paper);
- `truncated` (set by the task): unparsable AND cut at max_tokens — the verdict never came.
"""

from __future__ import annotations

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
