"""Hypothesis edits from ERROR descriptions, deterministically (SPEC §2 Span metrics).

From each description we take the first quoted pair "src" → "corr" (connectors →, ->, =>,
"should be", "to"; straight or curly double quotes, single quotes as a fallback), or failing
that the first quoted fragment alone (src with no correction: it can match under detection and
overlap, never strict). src is split on whitespace — the same tokens as M2 — and found in the
passage at its first occurrence not already taken by an earlier ERROR line of the same response.
Two relaxations, tried only when the exact search fails and recorded in `how`: ignoring case,
then splitting punctuation off words ("disease." → "disease ."). An edit that cannot be located
is kept, unlocated, and counts as a false positive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.benchmarks.errorbench.parse import ErrorLine

_QUOTE_MAP = str.maketrans(
    {
        "“": '"',
        "”": '"',
        "„": '"',
        "‟": '"',
        "″": '"',
        "«": '"',
        "»": '"',
        "‘": "'",
        "’": "'",
        "‚": "'",
        "‛": "'",
    }
)
_DQ = r'"([^"\n]*)"'
_SQ = r"(?<![\w'])'([^'\n]*?)'(?![\w])"
_CONNECTOR = (
    r"\s*[,:]?\s*(?:→|⟶|⇒|->|-->|=>|"
    r"should\s+(?:instead\s+)?(?:be|read)(?:\s+(?:changed|corrected|replaced))?"
    r"(?:\s+(?:to|with|by))?|"
    r"(?:(?:be\s+)?(?:changed|corrected)\s+)?to|(?:replaced\s+)?with)\s*[,:]?\s*"
)
_PAIR_DQ = re.compile(_DQ + _CONNECTOR + _DQ, re.I)
_PAIR_SQ = re.compile(_SQ + _CONNECTOR + _SQ, re.I)
_ONE_DQ = re.compile(_DQ)
_ONE_SQ = re.compile(_SQ)
_EMPHASIS = re.compile(r"\*\*|__")  # markdown bold around quotes: **"their"** -> **"there"**
_PUNCT = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


@dataclass
class HypEdit:
    k: int  # ERROR number as the model wrote it
    line: int  # line in the response
    description: str
    src: str | None  # quoted wrong text (None: nothing quoted)
    corr: str | None  # quoted correction (None: no pair found)
    pattern: str  # 'pair' | 'src_only' | 'none'
    located: bool = False
    sentence: int | None = None  # index within the passage
    start: int | None = None
    end: int | None = None
    how: str | None = None  # 'exact' | 'casefold' | 'punct' (how src was found)

    def span(self) -> tuple[int, int, int] | None:
        if not self.located:
            return None
        return (self.sentence, self.start, self.end)  # type: ignore[return-value]

    def to_dict(self) -> dict:
        # by hand: dataclasses.asdict deep-copies and is the scorer's hot spot
        return {
            "k": self.k,
            "line": self.line,
            "description": self.description,
            "src": self.src,
            "corr": self.corr,
            "pattern": self.pattern,
            "located": self.located,
            "sentence": self.sentence,
            "start": self.start,
            "end": self.end,
            "how": self.how,
        }


def find_quotes(description: str) -> tuple[str | None, str | None, str]:
    """(src, corr, pattern) from one description."""
    text = _EMPHASIS.sub("", description.translate(_QUOTE_MAP))
    first_line = text.split("\n", 1)[0]
    for scope in (first_line, text):
        for pair in (_PAIR_DQ, _PAIR_SQ):
            match = pair.search(scope)
            if match:
                return match.group(1), match.group(2), "pair"
    for scope in (first_line, text):
        for one in (_ONE_DQ, _ONE_SQ):
            match = one.search(scope)
            if match and match.group(1).strip():
                return match.group(1), None, "src_only"
    return None, None, "none"


def _normalise_corr(corr: str | None) -> str | None:
    return None if corr is None else " ".join(corr.split())


def _find(
    tokens_per_sentence: list[list[str]],
    needle: list[str],
    used: set[tuple[int, int, int]],
    fold: bool,
) -> tuple[int, int, int] | None:
    n = len(needle)
    if n == 0:
        return None
    if fold:
        needle = [t.casefold() for t in needle]
    for s, tokens in enumerate(tokens_per_sentence):
        hay = [t.casefold() for t in tokens] if fold else tokens
        for i in range(len(hay) - n + 1):
            if hay[i : i + n] == needle and (s, i, i + n) not in used:
                return (s, i, i + n)
    return None


def locate(
    src: str, tokens_per_sentence: list[list[str]], used: set[tuple[int, int, int]]
) -> tuple[tuple[int, int, int] | None, str | None]:
    """First not-yet-used occurrence of src's tokens; ((sentence, start, end), how)."""
    plain = src.translate(_QUOTE_MAP).split()
    hit = _find(tokens_per_sentence, plain, used, fold=False)
    if hit:
        return hit, "exact"
    hit = _find(tokens_per_sentence, plain, used, fold=True)
    if hit:
        return hit, "casefold"
    split = _PUNCT.findall(src.translate(_QUOTE_MAP))
    if split != plain:
        hit = _find(tokens_per_sentence, split, used, fold=False) or _find(
            tokens_per_sentence, split, used, fold=True
        )
        if hit:
            return hit, "punct"
    return None, None


def normalise_tokens(tokens_per_sentence: list[list[str]]) -> list[list[str]]:
    """Curly quotes/apostrophes in the passage compared as straight ones (done once per passage)."""
    return [[t.translate(_QUOTE_MAP) for t in toks] for toks in tokens_per_sentence]


def extract_edits(
    errors: list[ErrorLine], tokens_per_sentence: list[list[str]], *, normalised: bool = False
) -> list[HypEdit]:
    """One HypEdit per ERROR line, in order; each located span is used at most once.
    `normalised`: the tokens already went through normalise_tokens."""
    norm_tokens = tokens_per_sentence if normalised else normalise_tokens(tokens_per_sentence)
    used: set[tuple[int, int, int]] = set()
    out: list[HypEdit] = []
    for err in errors:
        src, corr, pattern = find_quotes(err.description)
        edit = HypEdit(err.k, err.line, err.description, src, _normalise_corr(corr), pattern)
        if src is not None:
            hit, how = locate(src, norm_tokens, used)
            if hit is not None:
                used.add(hit)
                edit.located = True
                edit.sentence, edit.start, edit.end = hit
                edit.how = how
        out.append(edit)
    return out
