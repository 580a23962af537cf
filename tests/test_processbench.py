"""ProcessBench's pure parts: the `\\boxed{}` parser, the metrics (checked against independent
computations on hand cases: plain counts, statistics.harmonic_mean, statsmodels' Wilson), the
prompt (against the paper's own format string) and the importer's validation (JSONL, JSON
array, Parquet; every bad record named by file and line, nothing written)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from statsmodels.stats.proportion import proportion_confint

from core.benchmarks.processbench.items import ImportProblem, import_bytes, import_files
from core.benchmarks.processbench.metrics import harmonic_f1, metrics_from_items
from core.benchmarks.processbench.parse import parse_answer
from core.benchmarks.processbench.prompts import load_template, messages
from core.benchmarks.processbench.task import score

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "processbench_sample.jsonl"

# The paper's template as published (github.com/QwenLM/ProcessBench,
# code/templates/critique_template.txt, Apache-2.0): a Python format string.
PAPER_TEMPLATE = (
    "The following is a math problem and a solution (split into paragraphs, enclosed with tags "
    "and indexed from 0):\n\n[Math Problem]\n\n{problem}\n\n[Solution]\n\n{tagged_response}\n\n"
    "Your task is to review and critique the solution paragraph by paragraph. Once you identify "
    "an error in a paragraph, return the index of the paragraph where the earliest error occurs. "
    'Otherwise, return the index of -1 (which typically denotes "not found").\n\n'
    "Please put your final answer (i.e., the index) in \\boxed{{}}."
)


def paper_prompt(problem: str, steps: list[str]) -> str:
    """run_eval.py's prepare_input_boxed, as published."""
    tagged = ""
    for sdx, step in enumerate(steps):
        tagged += f"<paragraph_{sdx}>\n{step}\n</paragraph_{sdx}>\n\n"
    return PAPER_TEMPLATE.strip().format(problem=problem, tagged_response=tagged.strip())


def test_the_prompt_is_the_papers_word_for_word() -> None:
    steps = ["First {x} step.", "Second: $5 and \\boxed{3}.", " third "]
    got = messages(load_template(), "What is {y}?", steps)
    assert got == [{"role": "user", "content": paper_prompt("What is {y}?", steps)}]
    assert load_template().id == "processbench/critique.v1"


@pytest.mark.parametrize(
    ("text", "n", "status", "index"),
    [
        ("so the answer is \\boxed{2}.", 4, "ok", 2),
        ("\\boxed{-1}", 4, "ok", -1),
        ("\\boxed{ 0 }", 1, "ok", 0),
        ("first \\boxed{1} then \\boxed{3}", 4, "ok", 3),  # the LAST box counts
        ("\\boxed{4}", 4, "out_of_range", None),  # 0-based: 4 steps end at 3
        ("\\boxed{-2}", 4, "out_of_range", None),
        ("\\boxed{paragraph_2}", 4, "unparsable", None),
        ("\\boxed{2.5}", 4, "unparsable", None),
        ("The earliest error is in paragraph 2.", 4, "unparsable", None),
        ("\\boxed{}", 4, "unparsable", None),
        ("", 4, "unparsable", None),
        (None, 4, "unparsable", None),
    ],
)
def test_parse_reads_the_last_box_and_keeps_unreadable_kinds_apart(text, n, status, index):
    parsed = parse_answer(text, n)
    assert (parsed.status, parsed.index) == (status, index)


def test_a_cut_answer_without_a_box_is_truncated_and_never_a_match() -> None:
    cut = score("Let me check paragraph 0", ["a", "b"], -1, "length")
    assert cut["parse_status"] == "truncated" and cut["match"] is False
    boxed_then_cut = score("\\boxed{-1} and more", ["a", "b"], -1, "length")
    assert boxed_then_cut["parse_status"] == "ok" and boxed_then_cut["match"] is True
    assert score("\\boxed{5}", ["a", "b"], 1, "stop")["parse_status"] == "out_of_range"


def items(rows: list[tuple[str, int, int | None, str]]) -> pd.DataFrame:
    """(split, label, predicted or None, status) -> the per-item frame metrics read."""
    return pd.DataFrame(
        {
            "split": [r[0] for r in rows],
            "label": [r[1] for r in rows],
            "match": [r[2] is not None and r[2] == r[1] for r in rows],
            "parse_status": ["ok" if r[2] is not None else "unparsable" for r in rows],
            "status": [r[3] for r in rows],
        }
    )


HAND = [
    # split a: 4 erroneous (3 named exactly), 2 correct (1 answered -1)
    ("a", 2, 2, "ok"),
    ("a", 0, 0, "ok"),
    ("a", 1, 1, "ok"),
    ("a", 3, 1, "ok"),
    ("a", -1, -1, "ok"),
    ("a", -1, 0, "ok"),
    ("a", 2, None, "failed"),  # left out of every number
    # split b: 2 erroneous (none named), 3 correct (all -1) -> F1 0
    ("b", 1, -1, "ok"),
    ("b", 0, None, "ok"),
    ("b", -1, -1, "ok"),
    ("b", -1, -1, "ok"),
    ("b", -1, -1, "ok"),
]


def independent(rows):
    """The paper's numbers by plain counting and statistics.harmonic_mean."""
    kept = [r for r in rows if r[3] != "failed"]
    err = [r for r in kept if r[1] != -1]
    cor = [r for r in kept if r[1] == -1]
    a = 100 * sum(r[2] == r[1] for r in err) / len(err)
    b = 100 * sum(r[2] == -1 for r in cor) / len(cor)
    return a, b, (statistics.harmonic_mean([a, b]) if a and b else 0.0), err, cor


def test_metrics_match_an_independent_count_per_split_overall_and_average() -> None:
    m = metrics_from_items(items(HAND)).set_index("split")
    assert list(m.index) == ["a", "b", "overall", "average"]
    f1s = []
    for split in ("a", "b"):
        a, b, f1, err, cor = independent([r for r in HAND if r[0] == split])
        row = m.loc[split]
        assert (row["n"], row["n_error"], row["n_correct"]) == (
            len(err) + len(cor),
            len(err),
            len(cor),
        )
        assert row["error_acc"] == pytest.approx(a)
        assert row["correct_acc"] == pytest.approx(b)
        assert row["f1"] == pytest.approx(f1)
        lo, hi = proportion_confint(round(a * len(err) / 100), len(err), method="wilson")
        assert (row["error_ci_low"], row["error_ci_high"]) == pytest.approx((100 * lo, 100 * hi))
        lo, hi = proportion_confint(round(b * len(cor) / 100), len(cor), method="wilson")
        assert (row["correct_ci_low"], row["correct_ci_high"]) == pytest.approx(
            (100 * lo, 100 * hi)
        )
        f1s.append(f1)
    a, b, f1, _, _ = independent(HAND)
    assert m.loc["overall", "error_acc"] == pytest.approx(a)
    assert m.loc["overall", "correct_acc"] == pytest.approx(b)
    assert m.loc["overall", "f1"] == pytest.approx(f1)
    assert m.loc["average", "f1"] == pytest.approx(statistics.mean(f1s))
    assert pd.isna(m["error_acc"]["average"]) and pd.isna(m["correct_acc"]["average"])
    assert m.loc["b", "unparsable"] == pytest.approx(100 / 5)
    for split in ("a", "overall", "average"):  # the bootstrap interval holds its F1
        assert m["ci_low"][split] <= m["f1"][split] <= m["ci_high"][split]


def test_f1_is_the_harmonic_mean_of_the_two_accuracies() -> None:
    for a, b in [(75.0, 50.0), (10.0, 90.0), (100.0, 100.0), (33.3, 66.7)]:
        assert harmonic_f1(a, b) == pytest.approx(statistics.harmonic_mean([a, b]))
    assert harmonic_f1(0.0, 80.0) == 0.0 and harmonic_f1(0.0, 0.0) == 0.0
    assert pd.isna(harmonic_f1(float("nan"), 50.0))


def test_a_perfect_critic_has_a_zero_width_f1_interval_and_bootstrap_is_seeded() -> None:
    rows: list[tuple[str, int, int | None, str]] = [
        ("a", k % 3 - 1, k % 3 - 1, "ok") for k in range(12)
    ]
    m = metrics_from_items(items(rows)).set_index("split")
    assert (m.loc["a", "f1"], m.loc["a", "ci_low"], m.loc["a", "ci_high"]) == (100, 100, 100)
    again = metrics_from_items(items(HAND))
    pd.testing.assert_frame_equal(metrics_from_items(items(HAND)), again)


def record(**over) -> dict:
    base = {
        "id": "gsm8k-0",
        "generator": "g",
        "problem": "1+1?",
        "steps": ["1+1=2.", "So \\boxed{2}."],
        "final_answer_correct": True,
        "label": -1,
    }
    base.update(over)
    return base


def bad_lines() -> list[str]:
    return [
        json.dumps(record(id="gsm8k-0")),
        "{not json",
        json.dumps(record(id="gsm8k-2", label=2)),  # 2 steps: 0..1 or -1
        json.dumps(record(id="gsm8k-3", label=-2)),
        json.dumps(record(id="gsm8k-4", label=True)),
        json.dumps(record(id="gsm8k-5", steps=[])),
        json.dumps(record(id="gsm8k-6", steps=["a", 3])),
        json.dumps({k: v for k, v in record(id="gsm8k-7").items() if k != "problem"}),
        json.dumps(record(id="gsm8k-0")),  # repeats line 1
        json.dumps(record(id="gsm8k-9", final_answer_correct="yes")),
        "[1, 2]",
    ]


def test_jsonl_every_bad_line_is_named_and_nothing_is_written(store, tmp_path) -> None:
    path = tmp_path / "gsm8k.jsonl"
    path.write_text("\n".join(bad_lines()) + "\n", encoding="utf-8")
    with pytest.raises(ImportProblem) as exc:
        import_files(store, [path], name="pb-bad")
    problems = exc.value.problems
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:{n}" for n in range(2, 12)]
    text = "\n".join(problems)
    for why in (
        "invalid JSON",
        "'label' 2 is out of range for 2 steps",
        "'label' -2 is below -1",
        "'label' must be an integer",
        "'steps' must be a non-empty list",
        "'steps'[1] is not a string",
        "missing key(s) problem",
        "repeats",
        "'final_answer_correct' must be true or false",
        "expected a JSON object, got list",
    ):
        assert why in text, why
    assert store.scalar("SELECT count(*) FROM items WHERE item_set = 'pb-bad'") == 0


def test_json_array_records_are_named_by_the_line_they_start_on(store, tmp_path) -> None:
    good, bad = record(id="math-0"), record(id="math-1", label=7)
    path = tmp_path / "math.json"
    path.write_text("[\n" + json.dumps(good, indent=1) + ",\n" + json.dumps(bad) + "\n]\n")
    with pytest.raises(ImportProblem) as exc:
        import_files(store, [path], name="pb-arr")
    line = 2 + json.dumps(good, indent=1).count("\n") + 1
    assert exc.value.problems == [
        f"{path}:{line}: 'label' 7 is out of range for 2 steps (it is 0-based)"
    ]
    path.write_text(json.dumps([good, record(id="math-1", label=1)]))
    assert import_files(store, [path], name="pb-arr").n_items == 2
    rows = store.rows("SELECT item_id, split, is_error, gold FROM items WHERE item_set = 'pb-arr'")
    assert sorted(rows) == [("math-0", "math", False, "-1"), ("math-1", "math", True, "1")]


def test_parquet_as_the_hub_serves_it_and_its_bad_rows(store, tmp_path) -> None:
    recs = [record(id=f"omnimath-{k}", label=k - 1) for k in range(3)]
    path = tmp_path / "omnimath-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(recs), path)
    assert import_files(store, [path], name="pb-pq").n_items == 3
    splits = store.rows("SELECT DISTINCT split FROM items WHERE item_set = 'pb-pq'")
    assert splits == [("omnimath",)]
    recs[2]["label"] = 5
    pq.write_table(pa.Table.from_pylist(recs), path)
    with pytest.raises(ImportProblem) as exc:
        import_files(store, [path], name="pb-pq2")
    assert exc.value.problems == [
        f"{path}:row 3: 'label' 5 is out of range for 2 steps (it is 0-based)"
    ]
    path.write_bytes(b"PAR1 broken")
    with pytest.raises(ImportProblem, match="not a readable Parquet file"):
        import_files(store, [path], name="pb-pq3")


def test_upload_names_the_uploaded_file_and_empty_or_missing_files_fail(store, tmp_path) -> None:
    with pytest.raises(ImportProblem) as exc:
        import_bytes(store, b'{"id": "x-1"}\n', "mine.jsonl", "pb-up")
    assert exc.value.problems[0].startswith("mine.jsonl:1: missing key(s) problem, steps, label")
    with pytest.raises(ImportProblem, match="no records"):
        import_bytes(store, b"\n\n", "empty.jsonl", "pb-up")
    with pytest.raises(ImportProblem, match="no such file"):
        import_files(store, [tmp_path / "nope.jsonl"], name="pb-up")
    assert store.scalar("SELECT count(*) FROM items WHERE item_set = 'pb-up'") == 0


def test_the_shipped_sample_is_valid_and_has_both_kinds_in_two_splits(store) -> None:
    result = import_files(store, [SAMPLE], name="pb-sample")
    splits = result.info["splits"]
    assert len(splits) >= 2
    assert all(d["erroneous"] and d["correct"] for d in splits.values())


@pytest.mark.parametrize(
    ("text", "status", "index", "json_state"),
    [
        ('{"earliest_wrong_paragraph": 1}', "ok", 1, "ok"),
        ('{"earliest_wrong_paragraph": -1}', "ok", -1, "ok"),
        ('{"earliest_wrong_paragraph": 7}', "out_of_range", None, "ok"),
        ('{"earliest_wrong_paragraph": true}', "unparsable", None, "invalid"),
        ('{"other": 1}', "unparsable", None, "invalid"),
        ("prose, then \\boxed{0}", "ok", 0, "invalid"),  # falls back to the box rule
        ('{"earliest_wrong_paragr', "unparsable", None, "invalid"),
    ],
)
def test_a_structured_answer_is_read_as_json_first_then_by_the_box(
    text, status, index, json_state
) -> None:
    scores = score(text, ["a", "b", "c"], 1, "stop", structured=True)
    assert (scores["parse_status"], scores["predicted_index"]) == (status, index)
    assert scores["json"] == json_state
    assert "json" not in score(text, ["a", "b", "c"], 1, "stop")  # the paper's template


def test_only_the_structured_template_sends_a_schema_bounded_to_the_paragraphs() -> None:
    from core.benchmarks.processbench.prompts import response_format

    assert response_format(load_template(), 4) is None
    fmt = response_format(load_template("processbench/critique_structured.v1"), 4)
    assert fmt is not None
    prop = fmt["json_schema"]["schema"]["properties"]["earliest_wrong_paragraph"]
    assert (prop["minimum"], prop["maximum"]) == (-1, 3)


def test_a_bootstrap_replicate_without_one_kind_has_no_f1_rather_than_zero() -> None:
    import numpy as np

    from core.benchmarks.processbench.metrics import _f1_arrays

    got = _f1_arrays(
        np.array([1, 0, 2]), np.array([2, 0, 2]), np.array([1, 1, 0]), np.array([2, 1, 3])
    )
    assert got[0] == pytest.approx(statistics.harmonic_mean([50.0, 50.0]))
    assert np.isnan(got[1])  # no erroneous solution drawn: undefined, dropped
    assert got[2] == 0.0  # correct accuracy 0: F1 0


# --- repeats (`run --epochs K`, issue 29): an item's K answers are one cluster -----------------


def epochs_frame(n_items: int, epochs: int, seed: int, vary: bool) -> pd.DataFrame:
    """`epochs` answers per item of one split; with `vary`, each answer of an item is drawn
    anew around the item's own chance of being right (items differ, answers correlate)."""
    import random

    rnd = random.Random(seed)
    rows = []
    for i in range(n_items):
        label = -1 if i % 3 == 0 else i % 4
        p_item = rnd.random()
        first = rnd.random() < p_item
        for e in range(epochs):
            right = (rnd.random() < p_item) if vary else first
            rows.append(
                {
                    "item_id": f"x-{i}",
                    "split": "a",
                    "label": label,
                    "match": right,
                    "parse_status": "ok",
                    "status": "ok",
                    "epoch": e + 1,
                }
            )
    return pd.DataFrame(rows)


def loop_cluster_bootstrap(frame: pd.DataFrame, draws: int, seed: int) -> tuple[float, float]:
    """A plain cluster bootstrap written apart from core.stats: draw item ids with replacement
    (random.Random), pool every answer of each drawn item, F1 by statistics.harmonic_mean, the
    2.5 / 97.5 % quantiles by numpy's percentile."""
    import random

    import numpy as np

    rnd = random.Random(seed)
    # per item: (erroneous answers right, erroneous answers, correct answers right, correct ones)
    sums: dict[str, tuple[int, int, int, int]] = {}
    for item_id, g in frame.groupby("item_id"):
        err, hit = (g["label"] != -1).tolist(), g["match"].tolist()
        sums[str(item_id)] = (
            sum(e and h for e, h in zip(err, hit)),
            sum(err),
            sum((not e) and h for e, h in zip(err, hit)),
            len(err) - sum(err),
        )
    ids = sorted(sums)
    values = []
    for _ in range(draws):
        drawn = [sums[rnd.choice(ids)] for _ in ids]
        e_hit, e_n, c_hit, c_n = (sum(d[k] for d in drawn) for k in range(4))
        if not e_n or not c_n:
            continue
        a, b = 100 * e_hit / e_n, 100 * c_hit / c_n
        values.append(statistics.harmonic_mean([a, b]) if a and b else 0.0)
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def test_epochs_are_clustered_by_item_n_counts_items_and_intervals_do_not_shrink() -> None:
    one = epochs_frame(30, 1, seed=3, vary=False)
    three = epochs_frame(30, 3, seed=3, vary=False)  # three identical copies of every answer
    m1 = metrics_from_items(one).set_index("split").to_dict("index")
    m3 = metrics_from_items(three).set_index("split").to_dict("index")
    for split in ("a", "overall"):
        assert m3[split]["n"] == 30  # items, not 90 answers
        assert m3[split]["n_error"] == m1[split]["n_error"] == 20
        assert m3[split]["f1"] == pytest.approx(m1[split]["f1"])
        # the same answers three times carry no more information: the interval keeps its
        # width (unclustered it shrank by ~1/sqrt(3)); a loose bound for Monte-Carlo error
        w1 = m1[split]["ci_high"] - m1[split]["ci_low"]
        w3 = m3[split]["ci_high"] - m3[split]["ci_low"]
        assert w3 == pytest.approx(w1, rel=0.08), (w1, w3)
        for col in ("error", "correct"):
            lo1, hi1 = m1[split][f"{col}_ci_low"], m1[split][f"{col}_ci_high"]
            lo3, hi3 = m3[split][f"{col}_ci_low"], m3[split][f"{col}_ci_high"]
            assert hi3 - lo3 == pytest.approx(hi1 - lo1, rel=0.1), (col, lo1, hi1, lo3, hi3)


def test_the_clustered_f1_interval_matches_a_plain_cluster_bootstrap_loop() -> None:
    frame = epochs_frame(24, 3, seed=11, vary=True)
    m = metrics_from_items(frame).set_index("split")
    low, high = loop_cluster_bootstrap(frame, draws=3000, seed=5)
    # two independent Monte-Carlo estimates of the same quantiles (3,000 vs ~83,000 draws)
    assert m.loc["a", "ci_low"] == pytest.approx(low, abs=2.0)
    assert m.loc["a", "ci_high"] == pytest.approx(high, abs=2.0)


def test_clustered_accuracy_intervals_match_statsmodels_cluster_robust_se() -> None:
    import numpy as np
    import statsmodels.api as sm

    frame = epochs_frame(24, 3, seed=11, vary=True)
    m = metrics_from_items(frame).set_index("split")
    err = frame[frame["label"] != -1]
    y = err["match"].to_numpy(dtype=float)
    groups = pd.factorize(err["item_id"])[0]
    fit = sm.OLS(y, np.ones((len(y), 1))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    deff = max(1.0, float(fit.bse[0]) ** 2 / (np.var(y, ddof=1) / len(y)))
    n_eff = len(y) / deff
    lo, hi = proportion_confint(y.mean() * n_eff, n_eff, method="wilson")
    assert (m.loc["a", "error_ci_low"], m.loc["a", "error_ci_high"]) == pytest.approx(
        (100 * lo, 100 * hi)
    )
    assert m.loc["a", "n_error"] == err["item_id"].nunique()
