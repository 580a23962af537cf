"""ErrorBench scorer on hand-made cases: each matching, count metrics, ASI, micro F, bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.benchmarks.errorbench.bootstrap import (
    PairedArrays,
    bootstrap_table,
    draw_indices,
    paired_bootstrap,
    paired_bootstrap_loop,
)
from core.benchmarks.errorbench.metrics import (
    count_counts,
    flatten,
    match_one_to_one,
    metrics_table,
    precision_recall_f,
    score_frame,
    score_response,
    span_counts,
    spans_overlap,
)

PAYLOAD = {
    "n": 3,
    "sentences": [
        {
            "tokens": [
                "People",
                "get",
                "certain",
                "disease",
                "because",
                "of",
                "genetic",
                "changes",
                ".",
            ]
        },
        {"tokens": ["We", "are", "suppose", "to", "tell", "the", "the", "truth", "."]},
    ],
    # annotator 0: disease→diseases, suppose→supposed, delete the second "the"
    "gold": {
        "0": [
            [0, 3, 4, "diseases", "Nn"],
            [1, 2, 3, "supposed", "Vform"],
            [1, 6, 7, "", "ArtOrDet"],
        ],
        "1": [[0, 3, 4, "diseases", "Nn"]],
    },
}


# -- matchings on hand-made edit lists ----------------------------------------------------------


def test_strict_needs_span_and_correction():
    gold = [(0, 3, 4, "diseases"), (1, 2, 3, "supposed")]
    hyp = [(0, 3, 4, "diseases"), (1, 2, 3, "supposes"), (0, 3, 4, "diseases")]
    tp, fp, fn, matched = span_counts(hyp, gold, "strict")
    assert (tp, fp, fn) == (1, 2, 1)
    assert matched == [0, None, None]  # the duplicate cannot reuse gold 0


def test_detection_ignores_correction_but_not_span():
    gold = [(0, 3, 4, "diseases"), (1, 2, 3, "supposed")]
    hyp = [(0, 3, 4, "disease's"), (1, 2, 4, "supposed to"), (1, 2, 3, "x")]
    assert span_counts(hyp, gold, "detection")[:3] == (2, 1, 0)


def test_overlap_counts_intersections_one_to_one():
    gold = [(1, 5, 6, ""), (1, 6, 7, "")]
    # one long hypothesis edit overlaps both gold edits but may take only one
    assert span_counts([(1, 4, 8, "x")], gold, "overlap")[:3] == (1, 0, 1)
    # different sentence never matches
    assert span_counts([(0, 5, 6, "")], gold, "overlap")[:3] == (0, 1, 2)


def test_overlap_matching_is_maximum_not_greedy():
    # Greedy in order would give hyp0 gold0 and leave hyp1 unmatched; the maximum is 2.
    gold = [(0, 2, 3, "a"), (0, 5, 6, "b")]
    hyp = [(0, 2, 6, "x"), (0, 2, 3, "y")]
    tp, fp, fn, matched = span_counts(hyp, gold, "overlap")
    assert (tp, fp, fn) == (2, 0, 0) and set(matched) == {0, 1} and len(matched) == 2


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ((3, 3), (3, 5), True),  # insertion at the left edge
        ((5, 5), (3, 5), True),  # insertion at the right edge
        ((4, 4), (3, 5), True),  # insertion inside
        ((6, 6), (3, 5), False),  # insertion outside
        ((2, 2), (2, 2), True),  # same insertion point
        ((2, 2), (3, 3), False),
        ((1, 3), (3, 5), False),  # adjacent ranges do not intersect
        ((1, 4), (3, 5), True),
    ],
)
def test_spans_overlap(a, b, expected):
    assert spans_overlap(*a, *b) is expected
    assert spans_overlap(*b, *a) is expected


def test_unlocated_hypotheses_are_false_positives():
    gold = [(0, 3, 4, "diseases")]
    for matching in ("strict", "detection", "overlap"):
        assert span_counts([None, (0, 3, 4, "diseases")], gold, matching)[:3] == (1, 1, 0)


def test_src_only_edit_never_matches_strict():
    gold = [(0, 3, 4, "diseases")]
    assert span_counts([(0, 3, 4, None)], gold, "strict")[:3] == (0, 1, 1)
    assert span_counts([(0, 3, 4, None)], gold, "detection")[:3] == (1, 0, 0)


def test_match_one_to_one_empty():
    assert match_one_to_one([], [(0, 1, 2, "x")], "overlap") == []


# -- formulas -----------------------------------------------------------------------------------


def test_count_counts_and_f():
    assert count_counts(5, 3) == (3, 2, 0)
    assert count_counts(1, 3) == (1, 0, 2)
    assert count_counts(0, 3) == (0, 0, 3)
    # F1 = 2TP / (2TP + FP + FN); F0.5 = 1.25 P R / (0.25 P + R)
    assert precision_recall_f(3, 2, 0, beta=1.0)[2] == pytest.approx(6 / 8)
    p, r = 2 / 3, 2 / 5
    assert precision_recall_f(2, 1, 3)[2] == pytest.approx(1.25 * p * r / (0.25 * p + r))
    assert precision_recall_f(0, 0, 3) == (1.0, 0.0, 0.0)


# -- a whole response ---------------------------------------------------------------------------

RESPONSE = """ERROR 1: "disease" -> "diseases" (plural noun)
ERROR 2: "suppose" should be "supposed"
ERROR 3: "the the" -> "the" (repeated word)
ERROR 4: Missing comma somewhere
TOTAL ERRORS FOUND: 4"""


def test_score_response_by_hand():
    s = score_response(RESPONSE, PAYLOAD, "anchored")
    assert (s["reported"], s["how"], s["disagree"], s["count_bias"]) == (4, "total", False, 1)
    assert s["count"] == [3, 1, 0]
    # strict: 1, 2 match; 3 has span (1,5,7) ≠ (1,6,7); 4 unlocated → TP 2, FP 2, FN 1
    assert s["span"]["strict"] == [2, 2, 1]
    assert s["span"]["detection"] == [2, 2, 1]
    # overlap: (1,5,7) intersects (1,6,7) → TP 3, FP 1 (the unlocated line), FN 0
    assert s["span"]["overlap"] == [3, 1, 0]
    assert [e["located"] for e in s["edits"]] == [True, True, True, False]
    assert s["edits"][2]["match"] == {"strict": None, "detection": None, "overlap": [1, 6, 7, ""]}
    assert s["stated"] == 3 and s["n"] == 3


def _frame(rows):
    return pd.DataFrame(
        rows, columns=["run_id", "model", "item_id", "variant", "status", "response"]
    )


def test_metrics_table_micro_asi_and_unparsed():
    items = pd.DataFrame(
        [
            {"item_id": "p1", "payload": PAYLOAD},
            {"item_id": "p2", "payload": PAYLOAD | {"n": 3}},
        ]
    )
    responses = _frame(
        [
            (
                "r1",
                "m",
                "p1",
                "blind",
                "ok",
                'ERROR 1: "disease" -> "diseases"\nTOTAL ERRORS FOUND: 1',
            ),
            ("r1", "m", "p2", "blind", "ok", "Looks fine."),  # unparsed → n̂ = 0
            ("r1", "m", "p1", "anchored", "ok", RESPONSE),  # n̂ = 4
            ("r1", "m", "p2", "anchored", "ok", "TOTAL ERRORS FOUND: 3"),
            ("r1", "m", "p2", "hinted", "failed", None),
        ]
    )
    table = metrics_table(flatten(score_frame(responses, items)))
    blind = table[table["condition"] == "blind"].iloc[0]
    anch = table[table["condition"] == "anchored"].iloc[0]
    # blind: count TP 1+0, FP 0, FN 2+3 → F1 = 2/(2+0+5)
    assert blind["count_f1"] == pytest.approx(2 / 7)
    assert blind["passages"] == 2 and blind["unparsed"] == 1
    assert blind["mean_count_bias"] == pytest.approx(((1 - 3) + (0 - 3)) / 2)
    assert blind["mean_asi"] == 0
    # blind overlap: TP 1, FP 0, FN 2 + 3 → P 1, R 1/6
    assert blind["overlap_f05"] == pytest.approx(precision_recall_f(1, 0, 5)[2])
    # anchored: count TP 3+3, FP 1, FN 0 → F1 = 12/13
    assert anch["count_f1"] == pytest.approx(12 / 13)
    # overlap: p1 TP 3 FP 1 FN 0; p2 no ERROR lines → TP 0 FP 0 FN 3
    o = precision_recall_f(3, 1, 3)[2]
    assert anch["overlap_f05"] == pytest.approx(o)
    assert anch["inflation"] == pytest.approx(12 / 13 - o)
    # ASI: p1 |1 − (−2)| / 3 = 1, p2 |0 − (−3)| / 3 = 1
    assert anch["mean_asi"] == pytest.approx(1.0)
    hinted = table[table["condition"] == "hinted"].iloc[0]
    assert hinted["passages"] == 0 and hinted["failed"] == 1
    assert list(table["condition"]) == ["blind", "hinted", "anchored"]


# -- bootstrap ----------------------------------------------------------------------------------


def _arrays(p: int = 40, seed: int = 3) -> PairedArrays:
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, size=(p, 12)).astype(float)
    return PairedArrays("m", [f"p{i}" for i in range(p)], counts)


def test_vectorised_bootstrap_equals_the_loop_on_the_same_draws():
    arrays = _arrays()
    # the given draws (without them paired_bootstrap draws more until its ends are stable)
    idx = draw_indices(len(arrays.item_ids), 500, 7)
    fast = paired_bootstrap(arrays, seed=7, indices=idx)
    slow = paired_bootstrap_loop(arrays, seed=7, indices=idx)
    for field in ("delta_count_f1", "delta_span_f05", "difference", "ci_low", "ci_high"):
        assert getattr(fast, field) == pytest.approx(getattr(slow, field), abs=1e-12)


def test_bootstrap_point_estimate_and_interval_by_hand():
    arrays = _arrays(p=15)
    res = paired_bootstrap(arrays, seed=1, indices=draw_indices(15, 300, 1))
    c = arrays.counts.sum(axis=0)

    def f(counts: np.ndarray, beta: float) -> float:
        tp, fp, fn = counts
        return precision_recall_f(tp, fp, fn, beta)[2]

    dc = f(c[6:9], 1.0) - f(c[0:3], 1.0)
    ds = f(c[9:12], 0.5) - f(c[3:6], 0.5)
    assert res.difference == pytest.approx(dc - ds)
    # the interval from the draws, recomputed with plain sums per draw
    idx = draw_indices(15, 300, 1)
    diffs = []
    for draw in idx:
        s = arrays.counts[draw].sum(axis=0)
        diffs.append((f(s[6:9], 1.0) - f(s[0:3], 1.0)) - (f(s[9:12], 0.5) - f(s[3:6], 0.5)))
    assert res.ci_low == pytest.approx(np.percentile(diffs, 2.5))
    assert res.ci_high == pytest.approx(np.percentile(diffs, 97.5))
    assert res.ci_low <= res.ci_high


def test_bootstrap_table_pairs_only_passages_with_both_conditions():
    items = pd.DataFrame([{"item_id": f"p{i}", "payload": PAYLOAD} for i in range(3)])
    responses = _frame(
        [
            ("r1", "m", "p0", "blind", "ok", "TOTAL ERRORS FOUND: 1"),
            ("r1", "m", "p1", "blind", "ok", "TOTAL ERRORS FOUND: 2"),
            ("r1", "m", "p2", "blind", "ok", "TOTAL ERRORS FOUND: 2"),
            ("r1", "m", "p0", "anchored", "ok", "TOTAL ERRORS FOUND: 3"),
            ("r1", "m", "p1", "anchored", "ok", "TOTAL ERRORS FOUND: 3"),
        ]
    )
    table = bootstrap_table(flatten(score_frame(responses, items)), draws=200)
    row = table.iloc[0]
    assert row["passages"] == 2
    # blind p0,p1: TP 3 FN 3 → 0.5 ... no ERROR lines so span F is 0 in both conditions
    assert row["delta_count_f1"] == pytest.approx(1.0 - 6 / 9)
    assert row["delta_overlap_f05"] == 0
    assert row["difference"] == pytest.approx(1.0 - 6 / 9)
    assert list(table.columns[:6]) == [
        "model",
        "delta_count_f1",
        "delta_overlap_f05",
        "difference",
        "ci_low",
        "ci_high",
    ]


# -- n and intervals per row (issue 18) ----------------------------------------------------------


def _flat_rows(seed: int, essays: int, per_essay: int) -> pd.DataFrame:
    """Scored passages of one model × condition: essays whose passages share a skill level."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for e in range(essays):
        skill = rng.uniform(0.05, 0.9)
        for p in range(per_essay):
            n = int(rng.integers(1, 6))
            found = int(rng.binomial(n, skill))
            extra = int(rng.integers(0, 3))
            row = {
                "run_id": "r1",
                "model": "m",
                "item_id": f"e{e}-p{p}",
                "condition": "blind",
                "ok": True,
                "unreadable": False,
                "count_tp": min(found + extra, n),
                "count_fp": max(0, found + extra - n),
                "count_fn": max(0, n - found - extra),
                "count_bias": found + extra - n,
                "asi": float("nan"),
                "unparsed": False,
                "disagree": False,
                "cluster": f"essay-{e}",
            }
            for m in ("strict", "detection", "overlap"):
                row |= {f"{m}_tp": found, f"{m}_fp": extra, f"{m}_fn": n - found}
            rows.append(row)
    return pd.DataFrame(rows)


def _loop_overlap_ci(flat: pd.DataFrame, by_essay: bool, draws: int, seed: int):
    """The textbook bootstrap, one draw at a time: resample essays (or passages), add up
    TP/FP/FN passage by passage, micro F0.5, then the 2.5 and 97.5 percentiles."""
    import numpy as np

    from core.benchmarks.errorbench.metrics import precision_recall_f

    rng = np.random.default_rng(seed)
    key = flat["cluster"] if by_essay else flat["item_id"]
    units = [
        g[["overlap_tp", "overlap_fp", "overlap_fn"]].values.tolist() for _, g in flat.groupby(key)
    ]
    values = []
    for _ in range(draws):
        tp = fp = fn = 0
        for u in rng.integers(0, len(units), len(units)):
            for a, b, c in units[u]:
                tp, fp, fn = tp + a, fp + b, fn + c
        values.append(precision_recall_f(tp, fp, fn)[2])
    return tuple(np.percentile(values, [2.5, 97.5]))


@pytest.mark.parametrize("by_essay", [True, False])
def test_row_intervals_agree_with_a_plain_loop_bootstrap(by_essay: bool) -> None:
    from core.benchmarks.errorbench import metrics as em

    flat = _flat_rows(3, essays=25, per_essay=6)
    if not by_essay:
        flat = flat.drop(columns="cluster")
    row = em.metrics_table(flat).iloc[0]
    assert row["n"] == 150 and row["n_clusters"] == (25 if by_essay else 150)
    ref = _loop_overlap_ci(flat.assign(cluster=_flat_rows(3, 25, 6)["cluster"]), by_essay, 3000, 1)
    # CI_DRAWS vectorised draws vs 3000 looped ones: two Monte Carlo estimates, ~0.01 apart
    assert (row["overlap_f05_ci_low"], row["overlap_f05_ci_high"]) == pytest.approx(ref, abs=0.015)
    assert row["overlap_f05_ci_low"] <= row["overlap_f05"] <= row["overlap_f05_ci_high"]


def test_essays_widen_the_interval() -> None:
    from core.benchmarks.errorbench import metrics as em

    flat = _flat_rows(4, essays=20, per_essay=8)
    grouped = em.metrics_table(flat).iloc[0]
    plain = em.metrics_table(flat.drop(columns="cluster")).iloc[0]
    width = lambda r: r["overlap_f05_ci_high"] - r["overlap_f05_ci_low"]  # noqa: E731
    assert width(grouped) > 1.3 * width(plain)
    assert grouped["overlap_f05"] == plain["overlap_f05"]
