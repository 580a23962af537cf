"""`m2-score`: score a hypothesis M2 file against a gold M2 file, as ERRANT's compare does.

Per sentence the hypothesis edits (one annotator of the hypothesis file) are matched one-to-one
to one gold annotator's edits under strict (span and correction), detection (span) and overlap
(intersecting spans) matching; noop edits are ignored. With several gold annotators, each
sentence uses the one that maximises the running corpus F0.5 — ERRANT's rule, including its
tie-breaks (more TP, then fewer FP, then fewer FN) and its 4-decimal rounding of F, and its
choice among only the annotators that have a line for the sentence. Like ERRANT, `UNK` edits are
left out of strict (correction) scoring.

Where this differs from ERRANT on purpose: ERRANT keys edits by span, so several edits with the
same span count once on the hypothesis side but as often as the reference lists them; here
every edit is used at most once on either side. On CoNLL-2014 that changes a handful of counts
(see tests/test_errorbench_m2score.py, which checks the exact difference).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.benchmarks.errorbench.m2 import M2Error, Sentence, annotators_in
from core.benchmarks.errorbench.metrics import MATCHINGS, precision_recall_f, span_counts


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def scores(self, beta: float = 0.5) -> dict[str, float | int]:
        p, r, f = precision_recall_f(self.tp, self.fp, self.fn, beta)
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "precision": p, "recall": r, "f05": f}


def _keys(sent: Sentence, annotator: int, matching: str) -> list[tuple]:
    out = []
    for e in sent.edits_by(annotator):
        if matching == "strict" and e.type == "UNK":
            continue
        out.append((0, e.start, e.end, e.correction))
    return out


def _candidates(sent: Sentence, wanted: list[int]) -> list[int]:
    """Requested annotators with a line for this sentence, in order of first appearance."""
    seen: list[int] = []
    for e in sent.edits:
        if e.annotator in wanted and e.annotator not in seen:
            seen.append(e.annotator)
    return seen


@dataclass
class Coverage:
    """How many gold sentences lack a line (edit or noop) from each chosen annotator."""

    sentences: int
    missing: dict[int, int]  # annotator -> sentences without any line from it
    none_present: int  # sentences where no chosen annotator has a line

    def warnings(self) -> list[str]:
        """One line per annotator missing somewhere (empty list: nothing to say)."""
        out = []
        for k, n in self.missing.items():
            if n:
                out.append(
                    f"warning: gold annotator {k} has no line (edit or noop) in {n} of "
                    f"{self.sentences} sentences"
                )
        if self.none_present:
            chosen = ", ".join(str(k) for k in self.missing)
            out.append(
                f"warning: {self.none_present} sentence(s) have no line from any chosen "
                f"annotator ({chosen}): they are scored as having no gold edits"
            )
        if any(self.missing.values()) and len(self.missing) > 1:
            out.append(
                "warning: in the other sentences lacking an annotator, only the "
                "annotators present are candidates (ERRANT's rule)"
            )
        return out


def annotator_coverage(gold: list[Sentence], annotators: list[int]) -> Coverage:
    present = [s.annotators() for s in gold]
    missing = {k: sum(k not in p for p in present) for k in annotators}
    none = sum(not (p & set(annotators)) for p in present)
    return Coverage(len(gold), missing, none)


def chosen_annotators(gold: list[Sentence], gold_annotators: list[int] | None) -> list[int]:
    return list(gold_annotators) if gold_annotators else (annotators_in(gold) or [0])


def score_m2(
    gold: list[Sentence],
    hyp: list[Sentence],
    *,
    gold_annotators: list[int] | None = None,
    hyp_annotator: int = 0,
    beta: float = 0.5,
    matchings: tuple[str, ...] = MATCHINGS,
) -> dict[str, Counts]:
    if len(gold) != len(hyp):
        raise M2Error(
            f"the gold file has {len(gold)} sentences but the hypothesis file has "
            f"{len(hyp)}; they must be the same sentences in the same order"
        )
    for g, h in zip(gold, hyp):
        if g.tokens != h.tokens:
            raise M2Error(
                f"sentence {g.index + 1} differs: gold line {g.line} {g.text[:50]!r} vs "
                f"hypothesis line {h.line} {h.text[:50]!r}"
            )
    wanted = chosen_annotators(gold, gold_annotators)
    totals = {m: Counts() for m in matchings}
    for g, h in zip(gold, hyp):
        refs: list[int | None] = list(_candidates(g, wanted)) or [None]
        for m in matchings:
            hyp_keys = _keys(h, hyp_annotator, m)
            best: tuple | None = None
            for ref in refs:
                ref_keys = [] if ref is None else _keys(g, ref, m)
                tp, fp, fn, _ = span_counts(hyp_keys, ref_keys, m)
                t = totals[m]
                f = round(precision_recall_f(t.tp + tp, t.fp + fp, t.fn + fn, beta)[2], 4)
                if best is None or (f, tp, -fp, -fn) > best[0]:
                    best = ((f, tp, -fp, -fn), tp, fp, fn)
            assert best is not None
            totals[m].tp += best[1]
            totals[m].fp += best[2]
            totals[m].fn += best[3]
    return totals
