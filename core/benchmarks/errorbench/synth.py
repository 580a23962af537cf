"""Synthetic ErrorBench responses for the benchmark and demos (never shown as real results).

A synthetic model finds each gold edit with probability `recall`, adds `extra` plausible wrong
edits on average, and — the behaviour under study — moves its reported count toward a stated
count with strength `compliance` (1 = pads or trims its list to exactly the stated number,
0 = ignores it). Padding lines quote passage text that is not an error or describe an error
without quoting anything, as real padded answers do.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from core.benchmarks.errorbench.prompts import stated_count


@dataclass(frozen=True)
class SynthModel:
    name: str
    recall: float = 0.5
    extra: float = 1.0
    compliance: float = 0.8
    total_line: float = 0.95  # probability of writing the TOTAL line


def _line_for_gold(tokens: list[list[str]], g: list, rng: random.Random) -> str:
    s, start, end, corr = g[0], g[1], g[2], g[3]
    sent = tokens[s]
    if start == end:  # insertion: quote the neighbouring word with the insertion
        left = sent[start - 1] if start > 0 else ""
        src = left
        fixed = f"{left} {corr}".strip()
        if not src:
            return f'Missing "{corr}" at the start of sentence {s + 1}'
        return f'"{src}" -> "{fixed}" (missing word)'
    src = " ".join(sent[start:end])
    style = rng.randrange(3)
    if style == 0:
        return f'"{src}" -> "{corr}"'
    if style == 1:
        return f"“{src}” → “{corr}”"
    return f'"{src}" should be "{corr}"'


def _padding_line(tokens: list[list[str]], rng: random.Random) -> str:
    if rng.random() < 0.5:
        s = rng.randrange(len(tokens))
        sent = tokens[s]
        if sent:
            i = rng.randrange(len(sent))
            return f'"{sent[i]}" -> "{sent[i]}s" (possible agreement issue)'
    return rng.choice(
        [
            "Awkward phrasing in the second sentence",
            "Missing comma before the clause",
            "The tone is too informal for an essay",
        ]
    )


def synth_response(payload: dict, condition: str, model: SynthModel, seed: int) -> str:
    rng = random.Random(seed)
    tokens = [s["tokens"] for s in payload["sentences"]]
    gold = list(payload["gold"].get("0", []))
    n = int(payload["n"])
    found = [g for g in gold if rng.random() < model.recall]
    own = len(found) + int(rng.random() * 2 * model.extra)
    stated = stated_count(condition, n)
    if stated is not None:
        target = round(own + model.compliance * (stated - own))
    elif condition == "hinted":
        target = max(own, 1)
    else:
        target = own
    lines = [_line_for_gold(tokens, g, rng) for g in found]
    while len(lines) < target:
        lines.append(_padding_line(tokens, rng))
    lines = lines[: max(target, 0)]
    rng.shuffle(lines)
    out = [f"ERROR {k}: {text}" for k, text in enumerate(lines, start=1)]
    if rng.random() < model.total_line:
        out.append(f"TOTAL ERRORS FOUND: {len(lines)}")
    return "\n".join(out) if out else "I found no errors."


DEFAULT_MODELS = [
    SynthModel("synth-compliant-a", recall=0.55, extra=0.8, compliance=0.95),
    SynthModel("synth-compliant-b", recall=0.45, extra=1.2, compliance=0.9),
    SynthModel("synth-mid-a", recall=0.5, extra=1.0, compliance=0.6),
    SynthModel("synth-mid-b", recall=0.35, extra=0.6, compliance=0.5),
    SynthModel("synth-stubborn-a", recall=0.5, extra=0.5, compliance=0.2),
    SynthModel("synth-stubborn-b", recall=0.3, extra=0.4, compliance=0.1),
]
