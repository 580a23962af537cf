"""M2 files: parse sentences and every annotator's edits, keeping line numbers for errors.

M2 (CoNLL-2014, ERRANT) is `S <tokens>` then `A start end|||type|||correction|||REQUIRED|||
-NONE-|||annotator` lines, a blank line between sentences. `A -1 -1|||noop|||…` says an annotator
made no change. Essay boundaries are not in the M2; `essays_from_sgml` recovers them from the
CoNLL SGML by aligning non-whitespace characters (the tokenisation only inserts spaces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from core.engine.textio import InputFileError, read_text, split_lines


class M2Error(ValueError):
    """Malformed input; the message names the file, the line and why."""


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    type: str
    correction: str
    annotator: int
    line: int = 0  # 1-based line in the M2 file (0 when built in code)

    @property
    def is_noop(self) -> bool:
        return self.type == "noop" or self.start < 0


@dataclass
class Sentence:
    index: int  # 0-based position in the file
    tokens: list[str]
    edits: list[Edit] = field(default_factory=list)
    line: int = 0  # line of the `S` line

    @property
    def text(self) -> str:
        return " ".join(self.tokens)

    def annotators(self) -> set[int]:
        """Annotators with at least one line (edit or noop) for this sentence."""
        return {e.annotator for e in self.edits}

    def edits_by(self, annotator: int, *, include_noop: bool = False) -> list[Edit]:
        return [
            e for e in self.edits if e.annotator == annotator and (include_noop or not e.is_noop)
        ]


def parse_m2(text: str, path: str = "<m2>") -> list[Sentence]:
    """Parse M2 text; raise M2Error naming the first bad line."""
    sentences: list[Sentence] = []
    current: Sentence | None = None
    for lineno, line in enumerate(split_lines(text), start=1):  # "\n" only: U+2028 is text
        if not line.strip():
            current = None
            continue
        if line.startswith("S ") or line == "S":
            # tokens are separated by spaces; other whitespace (U+2028, NBSP) is part of a token
            current = Sentence(
                index=len(sentences), tokens=[t for t in line[2:].split(" ") if t], line=lineno
            )
            sentences.append(current)
            continue
        if line.startswith("A "):
            if current is None:
                raise M2Error(
                    f"{path}, line {lineno}: an A (edit) line that does not follow an S line "
                    "(edits must come right after their sentence, before the blank line)"
                )
            current.edits.append(_parse_edit(line, lineno, path, len(current.tokens)))
            continue
        raise M2Error(
            f"{path}, line {lineno}: expected a line starting with 'S ' or 'A ' (or a blank "
            f"line), got {line[:60]!r}"
        )
    return sentences


def _parse_edit(line: str, lineno: int, path: str, n_tokens: int) -> Edit:
    fields = line[2:].split("|||")
    if len(fields) < 6:
        raise M2Error(
            f"{path}, line {lineno}: an edit needs 6 '|||'-separated fields "
            f"(span|||type|||correction|||REQUIRED|||-NONE-|||annotator), found {len(fields)}"
        )
    span = fields[0].split()
    if len(span) != 2:
        raise M2Error(f"{path}, line {lineno}: the span must be two integers, got {fields[0]!r}")
    try:
        start, end = int(span[0]), int(span[1])
    except ValueError:
        raise M2Error(
            f"{path}, line {lineno}: the span must be two integers, got {fields[0]!r}"
        ) from None
    try:
        annotator = int(fields[-1])
    except ValueError:
        raise M2Error(
            f"{path}, line {lineno}: the annotator id must be an integer, got {fields[-1]!r}"
        ) from None
    etype = fields[1]
    noop = etype == "noop" or (start == -1 and end == -1)
    if not noop:
        if start < 0 or end < start:
            raise M2Error(f"{path}, line {lineno}: bad span {start} {end} (need 0 <= start <= end)")
        if end > n_tokens:
            raise M2Error(
                f"{path}, line {lineno}: span {start} {end} runs past the sentence's "
                f"{n_tokens} tokens"
            )
    correction = fields[2]
    if correction == "-NONE-":
        correction = ""
    return Edit(
        start=start, end=end, type=etype, correction=correction, annotator=annotator, line=lineno
    )


def read_m2(path: str | Path) -> list[Sentence]:
    p = Path(path)
    text = read_input(p)
    sentences = parse_m2(text, str(p))
    if not sentences:
        raise M2Error(f"{p}: no sentences (no line starts with 'S ')")
    return sentences


def _m2_where(label: str, line: int | None) -> str:
    return f"{label}, line {line}" if line else label


def read_input(path: str | Path) -> str:
    """A text file for the M2/SGML readers: M2Error naming the file (and line) for a folder, a
    missing or unreadable file, non-UTF-8 text or a NUL byte."""
    try:
        return read_text(path, fmt=_m2_where)
    except InputFileError as exc:
        raise M2Error(str(exc)) from None


def annotators_in(sentences: list[Sentence]) -> list[int]:
    return sorted({e.annotator for s in sentences for e in s.edits})


# -- essays from SGML -------------------------------------------------------------------------

_DOC = re.compile(r'<DOC\s+nid="([^"]*)"\s*>(.*?)</DOC>', re.S)
_TEXT = re.compile(r"<TEXT>(.*?)</TEXT>", re.S)
_PART = re.compile(r"<(TITLE|P)>(.*?)</\1>", re.S)


def essays_from_sgml(sentences: list[Sentence], sgml_text: str, path: str = "<sgml>") -> list[str]:
    """The essay id (DOC nid) of each sentence, aligning text without whitespace.

    CoNLL's M2 is the SGML's TITLE and P text, sentence-split and tokenised by inserting spaces,
    so the non-whitespace characters line up exactly. A sentence must start and end in one essay.
    """
    docs = _DOC.findall(sgml_text)
    if not docs:
        raise M2Error(f'{path}: no <DOC nid="…"> elements found')
    bounds: list[tuple[int, str]] = []  # (end offset exclusive, nid)
    chars: list[str] = []
    offset = 0
    for nid, body in docs:
        match = _TEXT.search(body)
        text = match.group(1) if match else ""
        doc_chars = "".join("".join(part.split()) for _, part in _PART.findall(text))
        chars.append(doc_chars)
        offset += len(doc_chars)
        bounds.append((offset, nid))
    sgml_chars = "".join(chars)
    out: list[str] = []
    pos = 0
    doc = 0
    for sent in sentences:
        sent_chars = "".join(sent.tokens)
        if sgml_chars[pos : pos + len(sent_chars)] != sent_chars:
            raise M2Error(
                f"{path}: the SGML text does not match M2 sentence {sent.index + 1} "
                f"(line {sent.line}): {sent.text[:60]!r}. Are they from the same release?"
            )
        while doc < len(bounds) and pos >= bounds[doc][0]:
            doc += 1
        if doc >= len(bounds) or pos + len(sent_chars) > bounds[doc][0]:
            raise M2Error(
                f"{path}: M2 sentence {sent.index + 1} (line {sent.line}) crosses an essay "
                "boundary in the SGML"
            )
        out.append(bounds[doc][1])
        pos += len(sent_chars)
    if pos != len(sgml_chars):
        raise M2Error(
            f"{path}: the SGML has {len(sgml_chars) - pos} characters of text after the last "
            "M2 sentence. Are they from the same release?"
        )
    return out
