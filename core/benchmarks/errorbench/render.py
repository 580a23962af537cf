"""HTML for the passage drill-down: a passage with edits highlighted on its tokens.

Pure (no Streamlit) so it can be tested: every token is escaped; a span edit wraps its tokens in
a <mark> whose title shows the correction; an insertion (start == end) is a caret before the
token it precedes. Each mark carries a class (gold / hit / miss) and data attributes so a test or
a browser can find it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

STYLES = {
    "gold": "background:#fff3c4;border-bottom:2px solid #d4a72c",
    "hit": "background:#d8f3dc;border-bottom:2px solid #2d6a4f",
    "miss": "background:#fde2e1;border-bottom:2px solid #c0392b",
}


# Characters Markdown / LaTeX / Streamlit directives act on: the HTML goes through
# st.markdown(unsafe_allow_html=True), so passage text must reach it as character references.
_MD_CHARS = set("$*_`[]!\\~|:{}")


def _esc(text: str) -> str:
    """HTML-escape, and write Markdown/LaTeX specials and line breaks as character references,
    so `$5 and $10` or `![x](http://host/x)` in a passage stays text."""
    return "".join(
        html.escape(ch)
        if ch in "&<>\"'"
        else f"&#{ord(ch)};"
        if ch in _MD_CHARS or ch in "\n\r"
        else ch
        for ch in text
    )


@dataclass(frozen=True)
class Mark:
    sentence: int
    start: int
    end: int
    label: str  # shown after the span, e.g. "→ diseases" or "#2"
    kind: str  # gold | hit | miss


def highlight(tokens_per_sentence: list[list[str]], marks: list[Mark]) -> str:
    """The passage as HTML, one <div> per sentence, marks applied (overlaps: first mark wins)."""
    out = []
    for s, tokens in enumerate(tokens_per_sentence):
        mine = sorted((m for m in marks if m.sentence == s), key=lambda m: (m.start, m.end))
        covered: set[int] = set()
        opens: dict[int, list[Mark]] = {}
        inserts: dict[int, list[Mark]] = {}
        for m in mine:
            if m.start == m.end:
                inserts.setdefault(m.start, []).append(m)
            elif not covered.intersection(range(m.start, m.end)):
                covered.update(range(m.start, m.end))
                opens.setdefault(m.start, []).append(m)
        parts: list[str] = []
        i = 0
        while i <= len(tokens):
            for m in inserts.get(i, []):
                parts.append(_mark("‸", m))
            if i == len(tokens):
                break
            if i in opens:
                m = opens[i][0]
                text = " ".join(_esc(t) for t in tokens[m.start : m.end])
                parts.append(_mark(text, m, raw=True))
                i = m.end
                continue
            parts.append(_esc(tokens[i]))
            i += 1
        out.append(
            f"<div class='eb-sentence' data-sentence='{s}' style='margin:2px 0;"
            f"line-height:1.9'><span style='color:#888;font-size:0.8em'>S{s + 1}</span> "
            + " ".join(parts)
            + "</div>"
        )
    return "\n".join(out)


def _mark(text: str, m: Mark, raw: bool = False) -> str:
    body = text if raw else _esc(text)
    label = _esc(m.label)
    return (
        f"<mark class='eb-{m.kind}' data-span='{m.sentence}:{m.start}:{m.end}' "
        f"title='{label}' style='{STYLES.get(m.kind, '')};padding:0 2px;border-radius:3px'>"
        f"{body}<sup style='font-size:0.7em;margin-left:2px'>{label}</sup></mark>"
    )


def gold_marks(gold: list[list]) -> list[Mark]:
    """[sentence, start, end, correction, type] → marks labelled with the correction."""
    return [Mark(g[0], g[1], g[2], f"→ {g[3] or '∅'} ({g[4]})", "gold") for g in gold]


def hypothesis_marks(edits: list[dict], matching: str = "overlap") -> list[Mark]:
    """Located extracted edits, green when they matched a gold edit under `matching`."""
    out = []
    for e in edits:
        if not e.get("located"):
            continue
        matched = (e.get("match") or {}).get(matching) is not None
        corr = e.get("corr")
        shown = "?" if corr is None else (corr or "∅")
        label = f"#{e.get('k')} → {shown}"
        out.append(Mark(e["sentence"], e["start"], e["end"], label, "hit" if matched else "miss"))
    return out
