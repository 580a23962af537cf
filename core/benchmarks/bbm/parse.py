"""Reading a model's answer: a step number or "No" (trace level), Yes/No (step level).

Models rarely answer with exactly "3" or "No": they write "Thought 3", "**Step 3**", "The first
mistake is in step three.", "No mistakes." or reason first and conclude "Answer: No". The rules are
ordered from most to least explicit, and an answer we cannot read is reported as such (never
guessed): the caller counts it and scores it as wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_NUM = r"(\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
_STEP = r"(?:step|thought)\s*(?:number\s*|no\.?\s*|#\s*|:\s*)?" + _NUM + r"\b"

# "the first mistake is in step 3", "error: thought 3", "mistake occurs at step #3"
_MISTAKE_THEN_STEP = re.compile(r"(?:mistake|error|wrong|incorrect|flaw)[^.\n]{0,60}?\b" + _STEP)
# "step 3 is incorrect", "thought 3 contains a mistake"
_STEP_THEN_MISTAKE = re.compile(
    r"\b" + _STEP + r"[^.\n]{0,40}?\b(?:is|was|contains|has|makes|introduces)\s+(?:an?\s+)?"
    r"(?:\w+\s+)?(?:incorrect|wrong|mistake|error|flawed|invalid)"
)
_BARE = re.compile(
    r"^\s*(?:answer\s*[:\-]?\s*)?(?:n\s*=\s*)?\(?\s*(?:(?:step|thought)\s*)?#?\s*"
    + _NUM
    + r"\s*\)?\s*[.!]?\s*$"
)
# a list entry "- Thought 3: incorrect", "Step 3 - wrong"
_STEP_LABEL_MISTAKE = re.compile(
    r"\b" + _STEP + r"\s*[:\-–]\s*(?:this\s+(?:step|thought)\s+)?(?:is\s+)?(?:incorrect|wrong|"
    r"mistaken|flawed|invalid|(?:a\s+)?mistake|(?:an\s+)?error)\b"
)
_NEGATIVE = re.compile(
    r"^\s*(?:answer\s*[:\-]?\s*)?(?:no\b|none\b|no\s+(?:mistakes?|errors?)|"
    r"there\s+(?:are|is|were|was)\s+no\s+(?:mistakes?|errors?)|"
    r"all\s+(?:the\s+)?(?:steps|thoughts)\s+(?:are|were)\s+correct|"
    r"(?:the\s+)?(?:trace|reasoning|steps)\s+(?:is|are)\s+(?:all\s+)?correct)"
)
_NEGATIVE_ANYWHERE = re.compile(
    r"\b(?:there\s+(?:are|is|were|was)\s+no\s+(?:logical\s+)?(?:mistakes?|errors?)|"
    r"no\s+(?:logical\s+)?(?:mistakes?|errors?)\s+(?:found|in\s+(?:the|these|this|any))|"
    r"all\s+(?:the\s+)?(?:steps|thoughts)\s+(?:are|were)\s+correct)"
)
_ANY_STEP = re.compile(r"\b" + _STEP)
_ORDINALS = (
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
)
# "the first Thought contains a logical mistake", "the third step is wrong"
_ORDINAL_STEP_MISTAKE = re.compile(
    r"\b(" + "|".join(_ORDINALS) + r")\s+(?:step|thought)\b[^.\n]{0,40}?\b(?:is|was|contains|has|"
    r"makes|introduces)\s+(?:an?\s+)?(?:\w+\s+)?(?:incorrect|wrong|mistake|error|flawed|invalid)"
)
_STRICT_NO = re.compile(
    r"^\s*(?:answer\s*[:\-]?\s*)?(?:no|none|no\s+(?:mistakes?|errors?))"
    r"\s*[.!]?\s*$"
)
_LEADING_NUMBER = re.compile(r"^\s*" + _NUM + r"\b")
_FINAL_MARKER = re.compile(
    r"(?:final\s+answer|answer|verdict|conclusion)\s*(?:is)?\s*[:\-]\s*|the\s+answer\s+is\s*"
)


def _clean(text: str) -> str:
    """Lowercase, drop markdown emphasis/quotes/code ticks, squeeze blanks."""
    text = text.replace("\u2019", "'").lower()
    text = re.sub(r"[*_`\"]", "", text)
    text = re.sub(r"[ \t]+", " ", text)
    return text.strip()


def _to_int(token: str) -> int:
    return int(token) if token.isdigit() else NUMBER_WORDS[token]


@dataclass(frozen=True)
class TraceAnswer:
    """The parsed trace-level answer.

    `status`: ok (a step or "No"), unparsable, out_of_range (a step number outside 1..n).
    `step` is 1-based as the model sees it; `index` is the 0-based mistake index (None = No).
    """

    status: str
    step: int | None
    rule: str

    @property
    def index(self) -> int | None:
        return None if self.step is None else self.step - 1

    @property
    def parsed(self) -> bool:
        return self.status == "ok"


def _checked(step: int, n_steps: int | None, rule: str) -> TraceAnswer:
    if n_steps is not None and not 1 <= step <= n_steps:
        return TraceAnswer("out_of_range", step, rule)
    return TraceAnswer("ok", step, rule)


def _parse_trace_segment(text: str, n_steps: int | None, weak: bool = True) -> TraceAnswer | None:
    """Strong rules (a bare answer, a mistake phrase, a "no mistake" phrase); with `weak`, also
    a mere step mention or a leading number."""
    if not text:
        return None
    m = _BARE.match(text)
    if m:
        return _checked(_to_int(m.group(1)), n_steps, "bare_number")
    m = (
        _MISTAKE_THEN_STEP.search(text)
        or _STEP_THEN_MISTAKE.search(text)
        or _STEP_LABEL_MISTAKE.search(text)
        or _ORDINAL_STEP_MISTAKE.search(text)
    )
    if m:
        return _checked(_to_int(m.group(1)), n_steps, "mistake_phrase")
    if _NEGATIVE.match(text):
        return TraceAnswer("ok", None, "no")
    if _NEGATIVE_ANYWHERE.search(text):
        return TraceAnswer("ok", None, "no_phrase")
    if not weak:
        return None
    m = _ANY_STEP.search(text)
    if m:
        return _checked(_to_int(m.group(1)), n_steps, "step_mention")
    m = _LEADING_NUMBER.match(text)
    if m:
        return _checked(_to_int(m.group(1)), n_steps, "leading_number")
    return None


def parse_trace_answer(text: str | None, n_steps: int | None = None) -> TraceAnswer:
    """The first wrong step (1-based) or "No" from a direct_trace answer.

    Order: a first line that is exactly a number or "No" (what the prompt asks for) wins, since
    small models often go on to restate the task's answer ("No. The answer is 0."); then a
    final-answer marker ("Answer: 4" after reasoning); then the first line, then the whole text.
    An out-of-range number is kept only if nothing readable follows.
    """
    if text is None:
        return TraceAnswer("unparsable", None, "empty")
    clean = _clean(text)
    if not clean:
        return TraceAnswer("unparsable", None, "empty")
    first_line = clean.split("\n")[0].strip()
    if _STRICT_NO.match(first_line):
        return TraceAnswer("ok", None, "no")
    fallback: TraceAnswer | None = None
    m = _BARE.match(first_line)
    if m:
        found = _checked(_to_int(m.group(1)), n_steps, "bare_number")
        if found.status == "ok":
            return found
        fallback = found
    candidates: list[str] = []
    markers = list(_FINAL_MARKER.finditer(clean))
    if markers:
        candidates.append(clean[markers[-1].end() :].split("\n")[0].strip())
    candidates += [first_line, clean]
    # strong rules on every candidate before a mere step mention anywhere: in a list
    # ("Thought 1 is correct. … Thought 3 is wrong.") the first line names the wrong step
    for weak in (False, True):
        for segment in candidates:
            parsed = _parse_trace_segment(segment, n_steps, weak=weak)
            if parsed is None:
                continue
            if parsed.status == "ok":
                return parsed
            fallback = fallback or parsed
    return fallback or TraceAnswer("unparsable", None, "none")


# -- step level ----------------------------------------------------------------------------

_NO_MISTAKE = re.compile(
    r"\b(?:no|not\s+any|without\s+(?:a|any))\s+(?:logical\s+)?(?:mistakes?|errors?|issues?|"
    r"problems?)\b|\b(?:does\s+not|doesn't|do\s+not|don't)\s+contain\s+(?:a|an|any)\s+"
    r"(?:logical\s+)?(?:mistakes?|errors?)"
)
_LEADING_YN = re.compile(r"^\s*(?:answer\s*[:\-]?\s*)?(yes|no)\b")
# "(?!\s+if)": a model that parrots the instruction ('"Answer: Yes" if … or "Answer: No" if …')
# has not answered
_MARKED_YN = re.compile(
    r"(?:(?:final\s+answer|answer|verdict|conclusion)\s*(?:is)?\s*[:\-]?\s*(yes|no)\b|"
    r"the\s+answer\s+is\s*(yes|no)\b|so\s+the\s+answer\s+is\s*(yes|no)\b)(?![.,]?\s+if\b)"
)
_STEP_IS = re.compile(
    r"(?<!if )\b(?:step|thought)(?:\s*\d+)?\s+(?:is|was)\s+(not\s+correct|incorrect|wrong|invalid|"
    r"correct|right|valid)\b"
)
_WORD_YN = re.compile(r"\b(yes|no)\b(?!\s+if\b)")


def parse_step_answer(  # noqa: C901 - an ordered cascade of answer patterns; order is the rule
    text: str | None, reasoning: bool = False
) -> str:
    """'yes' (step correct), 'no' (step wrong) or 'unparsable'.

    Direct answers are read from their start; with `reasoning` (cot_step) the conclusion counts:
    an explicit "Answer: Yes/No" marker first (its last occurrence), then the last Yes/No word.
    """
    if text is None:
        return "unparsable"
    clean = _clean(text)
    if not clean:
        return "unparsable"
    marked: list[str] = []
    for line in clean.split("\n"):
        found = [next(g for g in m.groups() if g) for m in _MARKED_YN.finditer(line)]
        if len(set(found)) == 1:  # a line offering both "Answer: Yes" and "Answer: No" is an echo
            marked.extend(found)
    if marked:
        return marked[-1]
    if not reasoning:
        if _NO_MISTAKE.search(clean):
            return "yes"
        m = _LEADING_YN.match(clean)
        if m:
            return m.group(1)
    m_is = list(_STEP_IS.finditer(clean))
    if m_is:
        verdict = m_is[-1].group(1)
        return "yes" if verdict in ("correct", "right", "valid") else "no"
    if reasoning and _NO_MISTAKE.search(clean) and not _WORD_YN.search(_NO_MISTAKE.sub(" ", clean)):
        return "yes"
    words = _WORD_YN.findall(clean)
    if words:
        if not reasoning and len(set(words)) > 1:
            return "unparsable"
        return words[-1]
    if reasoning:  # after reasoning, only an explicit verdict counts (keywords are everywhere)
        return "unparsable"
    if re.search(r"\b(?:incorrect|wrong|invalid|mistake|error)\b", clean):
        return "no" if not re.search(r"\bno\s+(?:mistake|error)", clean) else "yes"
    if re.search(r"\b(?:correct|valid|right)\b", clean):
        return "yes"
    return "unparsable"


def first_no(step_answers: list[str]) -> int | None:
    """0-based index of the first 'no' (the paper's rule: later steps are ignored)."""
    for i, a in enumerate(step_answers):
        if a == "no":
            return i
    return None
