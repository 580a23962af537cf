"""How an exchange reads to people: long or repetitive answers collapsed, verdict chips and notes."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from core import registry
from core.engine.endpoints import (
    is_weak,
)
from core.engine.results import Result
from core.services.playground.exchange import Exchange
from core.services.playground.roles import label_names, role_of

# ---------------------------------------------------------------------------------------------
# Display of long or repetitive answers
# ---------------------------------------------------------------------------------------------

PREVIEW_CHARS = 600


@dataclass(frozen=True)
class Collapsed:
    """A shortened answer for display: `preview` (runs of a repeated line folded into one line
    with a "line repeated ×N" note, then cut at PREVIEW_CHARS) and whether anything was hidden."""

    preview: str
    hidden: bool
    repeats: tuple[tuple[str, int], ...] = ()


def collapse_text(text: str, limit: int = PREVIEW_CHARS) -> Collapsed:
    """Fold consecutive repeats of a line (blank lines between them ignored), then cut to
    `limit` characters at a line or word boundary. The full text stays for an expander."""
    text = text or ""
    lines = text.splitlines()
    out: list[str] = []
    repeats: list[tuple[str, int]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        j, count = i + 1, 1
        if line.strip():
            while j < len(lines):
                k = j
                while k < len(lines) and not lines[k].strip():
                    k += 1
                if k < len(lines) and lines[k].strip() == line.strip():
                    count, j = count + 1, k + 1
                else:
                    break
        if count > 1:
            out.append(f"{line}\n[line repeated ×{count}]")
            repeats.append((line.strip(), count))
        else:
            out.append(line)
        i = j if count > 1 else i + 1
    folded = "\n".join(out)
    cut = len(folded) > limit
    if cut:
        head = folded[:limit]
        stop = max(head.rfind("\n"), head.rfind(" "))
        folded = (
            head[:stop] if stop > limit // 2 else head
        ).rstrip() + f" … [{len(text) - len(head):,} more characters]"
    return Collapsed(folded, hidden=cut or bool(repeats), repeats=tuple(repeats))


def verdict_badges(exchange: Exchange, result: Result | None) -> list[tuple[str, bool | None, str]]:
    """(label, value, rationale) for each of the benchmark's labels, in its tables' order."""
    if result is None or not result.labels:
        return []
    bench = registry.get(exchange.benchmark)
    role = role_of(bench)
    return [
        (name, result.labels.get(name), role.rationale(result, name) or "")
        for name in label_names(bench)
    ]


def judge_is_weak(exchange: Exchange) -> bool:
    """The exchange's LLM judge is a weak model (the shipped SmolLM2): its verdicts are shown
    with the warning on them, not as confident chips."""
    judge = exchange.judge_endpoint or {}
    return is_weak(SimpleNamespace(model=judge.get("model") or "", weak=bool(judge.get("weak"))))


def verdict_warning(exchange: Exchange, result: Result | None) -> str | None:
    """The benchmark's note on a result worth reading (e.g. inconsistent labels), if any."""
    if result is None:
        return None
    return role_of(registry.get(exchange.benchmark)).warning(result)
