"""Passages: consecutive, non-overlapping groups of 4 M2 sentences, and seeded selection by N.

Default grouping is in file order from the first sentence, ignoring essays: that is what
reproduces the paper's counts (30 passages for each N = 3…6 and 23 eligible with N = 7 on
CoNLL-2014). `grouping="essay"` restarts the groups at every essay boundary (from the SGML) and
drops each essay's short tail. N = annotator-0 edits, noop excluded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from core.benchmarks.errorbench.m2 import Sentence, annotators_in
from core.store import ITEM_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

PASSAGE_SIZE = 4
GROUPINGS = ("file", "essay")


@dataclass
class Passage:
    passage_id: str
    group: int  # position among all groups (file order)
    sentences: list[Sentence]
    n: int  # annotator-0 non-noop edits
    grouping: str  # file | essay
    essay: str | None = None

    @property
    def text(self) -> str:
        """What the model sees: the tokenised sentences, space-joined (one paragraph).

        The tokens are M2's, so a fragment the model quotes can be found token by token.
        """
        return " ".join(s.text for s in self.sentences)

    def gold(self, annotator: int) -> list[list]:
        """[sentence index in passage, start, end, correction, type] for one annotator."""
        return [
            [i, e.start, e.end, e.correction, e.type]
            for i, s in enumerate(self.sentences)
            for e in s.edits_by(annotator)
        ]

    def payload(self, annotators: list[int]) -> dict:
        return {
            "n": self.n,
            "grouping": self.grouping,
            "essay": self.essay,
            "group": self.group,
            "first_sentence": self.sentences[0].index,
            "sentences": [
                {"tokens": s.tokens, "m2_line": s.line, "annotators": sorted(s.annotators())}
                for s in self.sentences
            ],
            "gold": {str(k): self.gold(k) for k in annotators},
        }


def group_passages(
    sentences: list[Sentence], *, essays: list[str] | None = None, size: int = PASSAGE_SIZE
) -> list[Passage]:
    """Group sentences; with `essays` (one id per sentence) groups never cross an essay."""
    grouping = "essay" if essays is not None else "file"
    runs: list[tuple[str | None, list[Sentence]]] = []
    if essays is None:
        runs.append((None, sentences))
    else:
        if len(essays) != len(sentences):
            raise ValueError("one essay id per sentence is needed")
        for sent, essay in zip(sentences, essays):
            if not runs or runs[-1][0] != essay:
                runs.append((essay, []))
            runs[-1][1].append(sent)
    out: list[Passage] = []
    group = 0
    for run_essay, sents in runs:
        for start in range(0, len(sents) - size + 1, size):
            chunk = sents[start : start + size]
            n = sum(len(s.edits_by(0)) for s in chunk)
            pid = f"p{group:04d}" if run_essay is None else f"e{run_essay}-p{group:04d}"
            out.append(Passage(pid, group, chunk, n, grouping, run_essay))
            group += 1
    return out


@dataclass
class Selection:
    passages: list[Passage]
    eligible_per_count: dict[int, int]
    selected_per_count: dict[int, int]
    total_groups: int


def select_passages(
    passages: list[Passage],
    *,
    per_count: int = 30,
    min_errors: int = 3,
    max_errors: int = 7,
    seed: int = 0,
) -> Selection:
    """Keep min ≤ N ≤ max; per N, a seeded random sample of up to `per_count`, in file order.

    Each N is sampled with its own generator seeded by (seed, N), so changing the range or
    another bucket never changes which passages a bucket gets.
    """
    if min_errors > max_errors:
        raise ValueError(f"--min-errors {min_errors} is larger than --max-errors {max_errors}")
    if per_count < 1:
        raise ValueError("--per-count must be at least 1")
    eligible: dict[int, int] = {}
    selected: dict[int, int] = {}
    chosen: list[Passage] = []
    for n in range(min_errors, max_errors + 1):
        bucket = [p for p in passages if p.n == n]
        eligible[n] = len(bucket)
        if len(bucket) > per_count:
            rng = np.random.default_rng([seed, n])
            keep = sorted(rng.choice(len(bucket), size=per_count, replace=False).tolist())
            bucket = [bucket[i] for i in keep]
        selected[n] = len(bucket)
        chosen.extend(bucket)
    chosen.sort(key=lambda p: p.group)
    return Selection(chosen, eligible, selected, len(passages))


def items_frame(selection: Selection, sentences: list[Sentence], set_name: str) -> pd.DataFrame:
    """Rows for the `items` table (benchmark 'errorbench'): the error count N is the gold answer
    (`gold` = str(N), also `payload.n`); no category (the essay is the secondary one)."""
    import pandas as pd

    annotators = annotators_in(sentences) or [0]
    rows = []
    for p in selection.passages:
        rows.append(
            {
                "item_set": set_name,
                "item_id": p.passage_id,
                "benchmark": "errorbench",
                "split": p.grouping,
                "is_error": True,
                "primary_category": None,
                "secondary_category": p.essay,
                "prompt": p.text,
                "explanation": None,
                "gold": str(p.n),
                "payload": json.dumps(p.payload(annotators)),
            }
        )
    return pd.DataFrame(
        rows,
        columns=["item_set", *ITEM_COLUMNS],
    )
