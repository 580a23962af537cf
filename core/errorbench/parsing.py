"""Reading a response: its ERROR lines and the reported count n̂ (SPEC §2 Parsing).

n̂ is the number on the last `TOTAL ERRORS FOUND: n` line; without one, the number of ERROR
lines. We record which rule gave n̂ and whether the two disagree, so the page can show how often
models miscount their own list. Markdown decoration (`**ERROR 1:**`, bullets, headings) is
tolerated because models add it even when told not to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DECOR = re.compile(r"^[\s>*#_`\-•]*")
_ERROR = re.compile(r"^ERROR\s*#?\s*(\d+)\s*[*_`]*\s*[:.)\-–—]?\s*[*_`]*\s*(.*)$", re.I)
_TOTAL = re.compile(r"TOTAL\s+ERRORS?\s+FOUND\s*[*_`]*\s*[:=\-–—]?\s*[*_`]*\s*(\d+)", re.I)


@dataclass
class ErrorLine:
    k: int                 # the number the model gave it
    description: str       # text after "ERROR k:", plus continuation lines
    line: int              # 1-based line in the response


@dataclass
class ParsedResponse:
    reported: int                       # n̂
    how: str                            # 'total' | 'error_lines'
    total: int | None                   # the TOTAL line's number, if any
    errors: list[ErrorLine] = field(default_factory=list)

    @property
    def n_error_lines(self) -> int:
        return len(self.errors)

    @property
    def disagree(self) -> bool:
        """A TOTAL line whose number differs from the count of ERROR lines."""
        return self.total is not None and self.total != len(self.errors)

    @property
    def unparsed(self) -> bool:
        """Neither a TOTAL line nor an ERROR line: the format was not followed at all."""
        return self.total is None and not self.errors


def parse_response(text: str | None) -> ParsedResponse:
    errors: list[ErrorLine] = []
    total: int | None = None
    current: ErrorLine | None = None
    for lineno, raw in enumerate((text or "").splitlines(), start=1):
        stripped = _DECOR.sub("", raw).strip()
        total_match = _TOTAL.search(stripped)
        if total_match:
            total = int(total_match.group(1))  # the last TOTAL line wins
            current = None
            continue
        error_match = _ERROR.match(stripped)
        if error_match:
            current = ErrorLine(int(error_match.group(1)), error_match.group(2).strip(), lineno)
            errors.append(current)
            continue
        if not stripped:
            current = None
        elif current is not None:
            # A wrapped description: keep it (extraction looks at the first line first).
            current.description = f"{current.description}\n{stripped}".strip()
    if total is not None:
        return ParsedResponse(total, "total", total, errors)
    return ParsedResponse(len(errors), "error_lines", None, errors)
