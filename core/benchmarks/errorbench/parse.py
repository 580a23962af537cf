"""Reading a response: its ERROR lines and the reported count n̂ (SPEC §2 Parsing).

n̂ is the number on the last `TOTAL ERRORS FOUND: n` line; without one, the number of ERROR
lines. We record which rule gave n̂ and whether the two disagree, so the page can show how often
models miscount their own list. Markdown decoration (`**ERROR 1:**`, bullets, headings) is
tolerated because models add it even when told not to.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from core.engine.words import NUMBER_WORDS as ENGLISH_NUMBERS

_DECOR = re.compile(r"^[\s>*#_`\-•]*(?:\d+[.)]\s+(?=[*_`]*ERROR\b)[*_`]*)?", re.I)
_ERROR = re.compile(r"^ERROR\s*#?\s*(\d+)\s*[*_`]*\s*[:.)\-–—]?\s*[*_`]*\s*(.*)$", re.I)
NUMBER_WORDS = {
    "zero": 0,
    "no": 0,
    "none": 0,
    **{w: n for w, n in ENGLISH_NUMBERS.items() if n <= 12},
}
_TOTAL = re.compile(
    r"TOTAL\s+ERRORS?\s+FOUND\s*[*_`]*\s*[:=\-–—]?\s*[*_`]*\s*(\d+|"
    + "|".join(NUMBER_WORDS)
    + r")\b",
    re.I,
)
# a whole answer saying there is nothing to report ("No errors found.", "The passage has no
# errors."): a parsed n̂ = 0, not a format failure
_NO_ERRORS = re.compile(
    r"\b(?:no\s+(?:grammatical\s+|spelling\s+)?(?:errors?|mistakes?)\s+"
    r"(?:were\s+|was\s+)?(?:found|detected|in\b)|(?:there\s+(?:are|is)|has|"
    r"contains)\s+no\s+(?:\w+\s+)?(?:errors?|mistakes?)|"
    r"(?:is|looks)\s+(?:error-free|free\s+of\s+errors))",
    re.I,
)


@dataclass
class ErrorLine:
    k: int  # the number the model gave it
    description: str  # text after "ERROR k:", plus continuation lines
    line: int  # 1-based line in the response


@dataclass
class ParsedResponse:
    reported: int  # n̂
    how: str  # 'total' | 'error_lines' | 'no_errors'
    total: int | None  # the TOTAL line's number, if any
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
        """Neither a TOTAL line nor an ERROR line nor a "no errors" statement: the format was
        not followed at all."""
        return self.total is None and not self.errors and self.how != "no_errors"


def parse_response(text: str | None) -> ParsedResponse:
    errors: list[ErrorLine] = []
    total: int | None = None
    current: ErrorLine | None = None
    for lineno, raw in enumerate((text or "").splitlines(), start=1):
        stripped = _DECOR.sub("", raw).strip()
        total_match = _TOTAL.search(stripped)
        if total_match:
            word = total_match.group(1).lower()  # the last TOTAL line wins
            total = int(word) if word.isdigit() else NUMBER_WORDS[word]
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
    if not errors and _NO_ERRORS.search(text or ""):
        return ParsedResponse(0, "no_errors", None, errors)
    return ParsedResponse(len(errors), "error_lines", None, errors)


# -- structured output (errorbench/structured.v1: NOT the paper's protocol) ----------------------


def structured_text(raw: str | None) -> tuple[str | None, str | None]:
    """A JSON answer of the structured template as the equivalent quoted-pair text answer
    (`ERROR k: "wrong" -> "correct"` lines, then `TOTAL ERRORS FOUND: n`), so it is parsed,
    located and scored by exactly the rules a text answer is; (None, why) when the JSON cannot
    be read (cut at max_tokens, not JSON, not the schema's shape)."""
    try:
        data = json.loads(raw or "")
    except ValueError as exc:
        return None, f"invalid JSON: {exc}"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    errors, total = data.get("errors"), data.get("total")
    if not isinstance(errors, list):
        return None, "no list 'errors'"
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        return None, "no count 'total' (a non-negative integer)"
    lines = []
    for k, entry in enumerate(errors, start=1):
        if not isinstance(entry, dict):
            return None, f"error {k} is not an object"
        wrong, correct = entry.get("wrong"), entry.get("correct")
        if not isinstance(wrong, str) or not isinstance(correct, str):
            return None, f"error {k} lacks 'wrong'/'correct' strings"
        lines.append(f'ERROR {k}: "{" ".join(wrong.split())}" -> "{" ".join(correct.split())}"')
    lines.append(f"TOTAL ERRORS FOUND: {total}")
    return "\n".join(lines), None
