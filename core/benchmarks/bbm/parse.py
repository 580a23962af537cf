"""Reading a model's answer: a step number or "No" (trace level), Yes/No (step level).

Models rarely answer with exactly "3" or "No": they write "Thought 3", "**Step 3**", "The first
mistake is in step three.", "No mistakes." or reason first and conclude "Answer: No". The rules are
ordered from most to least explicit, and an answer we cannot read is reported as such (never
guessed): the caller counts it and scores it as wrong.

Negation is read ("not correct", "isn't right" = a mistake; "not wrong" = correct), and in a
trace answer the Thought that counts is the one the answer says is wrong, not the first one it
mentions ("Thought 3 is correct, but Thought 4 contains an error" → 4): each step mention is
read with the words between it and the next mention. A held-out corpus no rule was tuned on
(tests/data/bbm_heldout_answers.jsonl) measures how well this generalises.
"""

from __future__ import annotations

import json
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

_BARE = re.compile(
    r"^\s*(?:answer\s*[:\-]?\s*)?(?:n\s*=\s*)?\(?\s*(?:(?:step|thought)\s*)?#?\s*"
    + _NUM
    + r"\s*\)?\s*[.!]?\s*$"
)
_NEGATIVE = re.compile(
    r"^\s*(?:answer\s*[:\-]?\s*)?(?:no\b|none\b|no\s+(?:mistakes?|errors?)|"
    r"there\s+(?:are|is|were|was)\s+no\s+(?:mistakes?|errors?)|"
    r"all\s+(?:the\s+)?(?:steps|thoughts)\s+(?:are|were)\s+correct|"
    r"(?:the\s+)?(?:trace|reasoning|steps)\s+(?:is|are)\s+(?:all\s+)?correct)"
)
_NOT_SEEN = (
    r"\b(?:do|did|can|could)\s+not\s+(?:see|find|spot|detect|notice)\s+(?:a|an|any)\s+"
    r"(?:logical\s+)?(?:mistakes?|errors?)"
)
_NEGATIVE_ANYWHERE = re.compile(
    r"\b(?:there\s+(?:are|is|were|was)\s+no\s+(?:logical\s+)?(?:mistakes?|errors?)|"
    r"no\s+(?:logical\s+)?(?:mistakes?|errors?)\s+(?:found|in\s+(?:the|these|this|any))|"
    r"(?:the\s+)?(?:whole\s+)?(?:sequence|trace|reasoning|chain|everything|"
    r"all\s+(?:of\s+)?(?:the\s+)?(?:steps|thoughts)|every\s+(?:step|thought))"
    r"\s+(?:is|are|was|were)\s+(?:all\s+)?(?:correct|right|valid)\b)|" + _NOT_SEEN
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
# a step reference: "thought 3", "step #2", "thought five", or an ordinal "the fourth thought"
_STEP_REF = re.compile(r"\b" + _STEP + r"|\b(" + "|".join(_ORDINALS) + r")\s+(?:step|thought)\b")
_MISTAKE_WORD = r"(?:incorrect|wrong|mistaken|flawed|invalid|mistakes?|errors?)"
_RIGHT_WORD = r"(?:correct|right|valid)"
# what a mention says of itself: "is (not) wrong", "contains an error", "does not contain a
# mistake", "has no error", a label "- Thought 3: incorrect"
_SAYS = re.compile(
    r"^\s*(?:[:\-\u2013]\s*(?:this\s+(?:step|thought)\s+)?(?:is\s+)?(?P<neg0>not\s+)?|"
    r"[^.\n]{0,40}?\b(?P<neg1>(?:does|do|did)\s+not\s+)?(?:is|was|are|were|contains?|has|have|"
    r"makes?|introduces?)\s+(?P<neg2>not\s+|no\s+)?)(?:an?\s+|the\s+)?(?:\w+\s+)?"
    r"(?P<word>" + _MISTAKE_WORD + "|" + _RIGHT_WORD + r")\b"
)
# the mistake named before the mention: "the mistake is in thought 2", "error: thought 3"
_NAMED_BEFORE = re.compile(r"\b(?:mistake|error|wrong|incorrect|flaw)[^.\n]{0,60}$")
_NEGATED_MISTAKE = re.compile(
    r"\b(?:no|not|without|none)\s+(?:\w+\s+)?(?:mistake|error|wrong|incorrect|flaw)"
)
_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)|\n|\b(?:but|whereas|however)\b")


def _ref_number(m: re.Match[str]) -> int:
    return _to_int(next(g for g in m.groups() if g))


def _verdict_of(after: str) -> bool | None:
    """True when the words after a step mention call it wrong, False when they call it right
    (negation flips either), None when they say neither."""
    m = _SAYS.match(after)
    if not m:
        return None
    wrong = re.fullmatch(_MISTAKE_WORD, m.group("word")) is not None
    negated = bool(m.group("neg0") or m.group("neg1") or m.group("neg2"))
    return wrong != negated


def _named_mistake(text: str) -> tuple[int | None, bool]:
    """(the step the text says is wrong, whether some mention was called right) — the first
    mention called wrong, sentence by sentence; each mention is read up to the next one."""
    called_right = False
    start = 0
    bounds = [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for end in bounds:
        sentence = text[start:end]
        start = end
        refs = list(_STEP_REF.finditer(sentence))
        for i, ref in enumerate(refs):
            before = sentence[refs[i - 1].end() if i else 0 : ref.start()]
            after = sentence[ref.end() : refs[i + 1].start() if i + 1 < len(refs) else None]
            verdict = _verdict_of(after)
            if verdict is False:
                called_right = True
                continue
            named = _NAMED_BEFORE.search(before) and not _NEGATED_MISTAKE.search(before)
            if verdict or named:
                return _ref_number(ref), called_right
    return None, called_right


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
    text = re.sub(r"\bcan(?:'t|not)\b", "can not", text)
    text = re.sub(r"\bwon't\b", "will not", text)
    text = re.sub(r"n't\b", " not", text)  # "isn't" -> "is not": one form of negation to read
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
    """Strong rules (a bare answer, the mention called wrong, a "no mistake" phrase); with
    `weak`, also a mere step mention not called right, or a leading number."""
    if not text:
        return None
    m = _BARE.match(text)
    if m:
        return _checked(_to_int(m.group(1)), n_steps, "bare_number")
    step, _ = _named_mistake(text)
    if step is not None:
        return _checked(step, n_steps, "mistake_phrase")
    if _NEGATIVE.match(text):
        return TraceAnswer("ok", None, "no")
    if _NEGATIVE_ANYWHERE.search(text):
        return TraceAnswer("ok", None, "no_phrase")
    if not weak:
        return None
    for m in _ANY_STEP.finditer(text):
        if _verdict_of(text[m.end() :]) is not False:  # "Thought 3 is correct." names nothing
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
    r"(?:logical\s+)?(?:mistakes?|errors?)|" + _NOT_SEEN
)
_LEADING_YN = re.compile(r"^\s*(?:answer\s*[:\-]?\s*)?(yes|no)\b")
# "(?!\s+if)": a model that parrots the instruction ('"Answer: Yes" if … or "Answer: No" if …')
# has not answered
_MARKED_YN = re.compile(
    r"(?:(?:final\s+answer|answer|verdict|conclusion)\s*(?:is)?\s*[:\-]?\s*(yes|no)\b|"
    r"the\s+answer\s+is\s*(yes|no)\b|so\s+the\s+answer\s+is\s*(yes|no)\b)(?![.,]?\s+if\b)"
)
_STEP_IS = re.compile(
    r"(?<!if )\b(?:step|thought)(?:\s*\d+)?\s+(?:is|was)\s+(not\s+)?(incorrect|wrong|invalid|"
    r"correct|right|valid)\b"
)
# a bare verdict word, negated or not: "Not correct.", "This is not right.", "Incorrect."
_VERDICT_WORD = re.compile(
    r"(?<!if )\b(not\s+)?(incorrect|wrong|invalid|mistaken|flawed|correct|right|valid)\b"
)
_MISTAKE_NOUN = re.compile(r"\b(?:mistakes?|errors?)\b")


def _is_right(negated: str | None, word: str) -> bool:
    """A verdict word's reading: "correct" / "not wrong" are right, "not correct" is wrong."""
    return (word in ("correct", "right", "valid")) != bool(negated)


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
        return "yes" if _is_right(*m_is[-1].groups()) else "no"
    if reasoning and _NO_MISTAKE.search(clean) and not _WORD_YN.search(_NO_MISTAKE.sub(" ", clean)):
        return "yes"
    words = _WORD_YN.findall(clean)
    if words:
        if not reasoning and len(set(words)) > 1:
            return "unparsable"
        return words[-1]
    if reasoning:  # after reasoning, only an explicit verdict counts (keywords are everywhere)
        return "unparsable"
    # a direct answer leads with its verdict: "Incorrect; the correct value is 5" is a no
    first = _VERDICT_WORD.search(clean)
    if first:
        return "yes" if _is_right(*first.groups()) else "no"
    if _MISTAKE_NOUN.search(clean):  # "This step contains an error."
        return "no"
    return "unparsable"


def first_no(step_answers: list[str]) -> int | None:
    """0-based index of the first 'no' (the paper's rule: later steps are ignored)."""
    for i, a in enumerate(step_answers):
        if a == "no":
            return i
    return None


# -- structured output (bbm/direct_trace_structured.v1: NOT the paper's protocol) -----------------


def parse_structured_trace(
    text: str | None, n_steps: int | None = None, key: str = "first_wrong_step"
) -> tuple[TraceAnswer | None, str | None]:
    """A structured trace answer {"first_wrong_step": k | null}: (TraceAnswer with rule 'json',
    None), or (None, why) when the JSON cannot be read (cut, not JSON, not the schema's shape)."""
    try:
        data = json.loads(text or "")
    except ValueError as exc:
        return None, f"invalid JSON: {exc}"
    if not isinstance(data, dict) or key not in data:
        return None, f"no field {key!r}"
    step = data[key]
    if step is None:
        return TraceAnswer("ok", None, "json"), None
    if isinstance(step, bool) or not isinstance(step, int):
        return None, f"{key} is neither an integer nor null"
    return _checked(step, n_steps, "json"), None
