"""Drill-down HTML and chart builders: escaping, insertions, empty inputs, headline table."""

from __future__ import annotations

from typing import Any

import pandas as pd

from core.benchmarks.errorbench.charts import (
    bootstrap_forest,
    count_bias_box,
    headline_comparison,
    inflation_bars,
    span_precision_recall,
)
from core.benchmarks.errorbench.render import Mark, gold_marks, highlight, hypothesis_marks

TOKENS = [["In", "house", "<we>", "eat", "."], ["Fine", "."]]


def test_highlight_escapes_and_marks_spans_and_insertions():
    out = highlight(TOKENS, [Mark(0, 1, 1, "→ the", "gold"), Mark(0, 2, 4, "→ x & y", "miss")])
    assert "&lt;we&gt;" in out and "<we>" not in out
    assert "data-span='0:1:1'" in out and "‸" in out  # insertion caret
    assert out.index("‸") < out.index("house")  # before the token it precedes
    assert "→ x &amp; y" in out
    assert out.count("eb-sentence") == 2


def test_overlapping_marks_keep_the_first():
    out = highlight(TOKENS, [Mark(0, 0, 2, "a", "hit"), Mark(0, 1, 3, "b", "miss")])
    assert out.count("<mark") == 1 and "eb-hit" in out


def test_gold_and_hypothesis_marks():
    gold = gold_marks([[0, 1, 2, "", "ArtOrDet"]])
    assert gold[0].label == "→ ∅ (ArtOrDet)" and gold[0].kind == "gold"
    edits: list[dict[str, Any]] = [
        {
            "k": 1,
            "located": True,
            "sentence": 0,
            "start": 1,
            "end": 2,
            "corr": "home",
            "match": {"overlap": [0, 1, 2, ""], "strict": None},
        },
        {"k": 2, "located": False},
    ]
    marks = hypothesis_marks(edits, "overlap")
    assert len(marks) == 1 and marks[0].kind == "hit"
    assert hypothesis_marks(edits, "strict")[0].kind == "miss"


def test_charts_handle_empty_frames():
    empty = pd.DataFrame(columns=["ok", "condition", "model_label", "count_bias"])
    for fig in (
        count_bias_box(empty),
        inflation_bars(pd.DataFrame()),
        span_precision_recall(pd.DataFrame()),
        bootstrap_forest(pd.DataFrame()),
    ):
        assert fig.layout.title.text and fig.layout.annotations


def test_headline_comparison_from_metrics():
    metrics = pd.DataFrame(
        [
            {
                "model": "a",
                "condition": "blind",
                "count_f1": 0.6,
                "overlap_f05": 0.5,
                "strict_f05": 0.4,
            },
            {
                "model": "a",
                "condition": "anchored",
                "count_f1": 0.9,
                "overlap_f05": 0.40,
                "strict_f05": 0.2,
            },
            {
                "model": "b",
                "condition": "blind",
                "count_f1": 0.5,
                "overlap_f05": 0.5,
                "strict_f05": 0.4,
            },
            {
                "model": "b",
                "condition": "anchored",
                "count_f1": 0.6,
                "overlap_f05": 0.46,
                "strict_f05": 0.4,
            },
        ]
    )
    boot = pd.DataFrame({"model": ["a", "b"], "ci_low": [0.1, -0.2]})
    head = headline_comparison(metrics, boot).set_index("quantity")["selected runs"]
    assert head["Mean ΔCount-F1, blind → anchored"] == "0.20"  # (0.3 + 0.1) / 2
    assert head["Mean Δoverlap F0.5, blind → anchored"] == "-0.07"  # (−0.10 − 0.04) / 2
    assert head["Largest inflation ΔF (overlap), anchored"] == "0.50"
    assert head["Largest inflation (strict), anchored"] == "0.70"
    assert head["Models with ΔCount − ΔSpan > 0 at 95%"] == "1 of 2 models"
