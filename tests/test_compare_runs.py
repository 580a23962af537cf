"""`python -m core compare`: each statistic against an independent computation, and two scripted
BBM runs (real HTTP to tests/fake_openai.py) that differ on known items."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from core.services import compare_runs as cr
from tests.core_cli import run_core
from tests.fake_openai import FakeOpenAI
from tests.test_bbm_run import SCRIPT, responder_for, run_bbm, sample


@pytest.mark.parametrize("b,c", [(0, 0), (0, 5), (3, 9), (12, 4), (25, 25), (1, 40)])
def test_mcnemar_matches_statsmodels(b, c):
    table = [[7, b], [c, 11]]
    expected = 1.0 if b + c == 0 else mcnemar(table, exact=True).pvalue
    assert cr.mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def test_holm_matches_statsmodels():
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 0.2, size=17)
    p[[2, 9]] = p[4]  # ties
    expected = multipletests(p, method="holm")[1]
    assert np.allclose(cr.holm(p), expected)
    with_nan = np.concatenate([p, [np.nan]])
    got = cr.holm(with_nan)
    assert np.isnan(got[-1]) and np.allclose(got[:-1], expected)


def _percentile(values: list[float], q: float) -> float:
    """Linear-interpolation percentile, by hand."""
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def test_paired_bootstrap_matches_a_plain_loop():
    """The pattern bootstrap (a multinomial over the ≤ 18 (baseline, candidate, truth)
    patterns) against the textbook one: draw n pair indices with replacement, one draw at a
    time, and recount. Two Monte Carlo estimates of the same percentiles: they agree to the
    Monte Carlo error; the same seed gives the same draws."""
    rng = np.random.default_rng(11)
    n = 400
    base = rng.integers(0, 2, (n, 2)).astype(float)
    cand = np.where(rng.random((n, 2)) < 0.7, base, 1 - base)  # paired: mostly the same
    base[[3, 20, 50], 0] = np.nan  # pairs without a value are left out of that column's draws
    truth = rng.integers(0, 2, n).astype(float)
    for col in range(2):
        means, f1s = cr.pattern_bootstrap(
            base[:, col], cand[:, col], truth, 20_000, np.random.default_rng(5)
        )
        loop_means, loop_f1s = [], []
        loop_rng = np.random.default_rng(6)
        for _ in range(3000):  # one draw: n pairs with replacement, the same for both runs
            row = loop_rng.integers(0, n, n)
            pairs = [(base[i, col], cand[i, col], truth[i]) for i in row]
            pairs = [p for p in pairs if p[0] == p[0] and p[1] == p[1]]
            loop_means.append(sum(c - b for b, c, _ in pairs) / len(pairs))
            f1 = []
            for k in (1, 0):  # candidate, then baseline
                tp = sum(1 for p in pairs if p[k] == 1 and p[2] == 1)
                fp = sum(1 for p in pairs if p[k] == 1 and p[2] == 0)
                fn = sum(1 for p in pairs if p[k] == 0 and p[2] == 1)
                f1.append(2 * tp / (2 * tp + fp + fn))
            loop_f1s.append(f1[0] - f1[1])
        for ours, ref in ((means, loop_means), (f1s, loop_f1s)):
            low, high = cr.percentile_ci(ours[:, None])
            assert low[0] == pytest.approx(_percentile(ref, 2.5), abs=0.01)
            assert high[0] == pytest.approx(_percentile(ref, 97.5), abs=0.01)
            assert np.mean(ours) == pytest.approx(np.mean(ref), abs=0.003)
    again = cr.pattern_bootstrap(base[:, 1], cand[:, 1], truth, 500, np.random.default_rng(5))
    first = cr.pattern_bootstrap(base[:, 1], cand[:, 1], truth, 500, np.random.default_rng(5))
    assert (again[0] == first[0]).all() and (again[1] == first[1]).all()


def test_min_detectable_diff_has_the_stated_power():
    """At δ = mdd, the normal-approximation power of McNemar's test is 80% (Connor 1987)."""
    from scipy.stats import norm

    for n, psi in [(50, 0.3), (400, 0.1), (25000, 0.05)]:
        d = cr.min_detectable_diff(n, psi)
        za = norm.ppf(0.975)
        power = norm.cdf((d * np.sqrt(n) - za * np.sqrt(psi)) / np.sqrt(psi - d**2))
        assert power == pytest.approx(0.80, abs=1e-9)
    assert np.isnan(cr.min_detectable_diff(30, 0.0))


# --- two scripted BBM runs ---

# sample lines (1-based) the candidate answers differently, and the reply it gives
CHANGED = {1: "1", 2: "3", 7: "No"}


def _candidate_responder():
    traces = sample()
    base = responder_for(traces)
    changed = {traces[n - 1]["input"]: reply for n, reply in CHANGED.items()}

    def respond(body):
        user = body["messages"][-1]["content"]
        question = user.split("Question:\n", 1)[1].split("\n\nStep-by-step answer", 1)[0]
        return changed.get(question) or base(body)

    return respond


@pytest.fixture
def two_runs(initialised_store):
    with FakeOpenAI(responder=responder_for(sample())) as server:
        assert run_bbm(server.url, "--method", "direct_trace", "--run-name", "base", "--quiet") == 0
    with FakeOpenAI(responder=_candidate_responder()) as server:
        assert run_bbm(server.url, "--method", "direct_trace", "--run-name", "cand", "--quiet") == 0
    return initialised_store


def _correct_by_input(store, run):
    rows = store.rows(
        "SELECT i.prompt, v.correct FROM results v JOIN runs r USING (run_id) "
        "JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id "
        "WHERE v.run_id = ? AND v.status <> 'failed'",
        [run],
    )
    return dict(rows)


def test_compare_reports_the_changed_items_and_a_hand_count(two_runs, db_path):
    store = two_runs
    traces = sample()
    base, cand = _correct_by_input(store, "base"), _correct_by_input(store, "cand")
    # by hand: the script and the gold say which changed replies flip `correct`
    flipped_inputs = {
        traces[n - 1]["input"] for n in CHANGED if base[traces[n - 1]["input"]] is not None
    }
    assert all(base[i] != cand[i] for i in flipped_inputs)
    assert len(flipped_inputs) == len(CHANGED)  # every changed reply was chosen to flip
    b = sum(1 for i in base if base[i] is True and cand.get(i) is False)
    c = sum(1 for i in base if base[i] is False and cand.get(i) is True)
    assert (b, c) != (0, 0)
    id_of = dict(store.rows("SELECT prompt, item_id FROM items WHERE item_set = 'bbm-sample'"))

    done = run_core(
        "compare", "--db", str(db_path), "--baseline", "base", "--candidate", "cand",
        "--flipped", "--format", "csv",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert {r["item_id"] for r in rows} == {id_of[i] for i in flipped_inputs}
    assert {r["metric"] for r in rows} == {"correct"}

    done = run_core(
        "compare", "--db", str(db_path), "--baseline", "base", "--candidate", "cand",
        "--format", "csv",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = list(csv.DictReader(io.StringIO(done.stdout)))
    assert list(table[0])[:12] == [
        "metric", "category", "n", "baseline", "candidate", "diff",
        "ci_low", "ci_high", "b", "c", "p_value", "p_holm",
    ]  # fmt: skip
    overall = next(r for r in table if r["metric"] == "correct" and r["category"] == "all")
    both = [i for i in base if base[i] is not None and cand.get(i) is not None]
    assert int(overall["n"]) == len(both)
    assert (int(overall["b"]), int(overall["c"])) == (b, c)
    assert float(overall["p_value"]) == pytest.approx(mcnemar([[0, b], [c, 0]]).pvalue)
    hand_diff = (sum(bool(cand[i]) for i in both) - sum(bool(base[i]) for i in both)) / len(both)
    assert float(overall["diff"]) == pytest.approx(hand_diff)
    categories = {r["category"] for r in table}
    assert "all" in categories and len(categories) > 2  # one row per task too
    p = [float(r["p_value"]) for r in table]
    assert [float(r["p_holm"]) for r in table] == pytest.approx(
        list(multipletests(p, method="holm")[1])
    )

    done = run_core(
        "compare", "--db", str(db_path), "--baseline", "base", "--candidate", "cand",
        "--format", "json",
    )  # fmt: skip
    assert json.loads(done.stdout)["pairs"] == len(SCRIPT)


def test_compare_refuses_other_benchmarks_and_missing_judgings(two_runs, db_path):
    store = two_runs
    store.execute(
        "INSERT INTO runs (run_id, benchmark, item_set, status) "
        "SELECT 'other', name, 'x', 'done' FROM (SELECT DISTINCT benchmark AS name FROM items "
        "WHERE benchmark <> 'bbm' LIMIT 1)"
    )
    for argv, why in [
        (("--baseline", "base", "--candidate", "other"), "different benchmarks"),
        (("--baseline", "base", "--candidate", "nope"), "unknown run"),
        (("--baseline", "base", "--candidate", "cand", "--judging", "j2"), "no judging"),
    ]:
        done = run_core("compare", "--db", str(db_path), *argv)
        assert done.returncode == 1
        assert done.stderr.startswith("error:") and why in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_compare_of_a_run_with_itself_is_refused_not_78_rows_of_zeros(two_runs, db_path):
    """Issue 31, point 15: every difference of a run with itself is 0 by construction; the
    table of zeros said nothing of it. The CLI and the Compare page's view refuse it."""
    done = run_core("compare", "--db", str(db_path), "--baseline", "base", "--candidate", "base")
    assert done.returncode == 1 and not done.stdout
    assert done.stderr.startswith("error: --baseline and --candidate are the same run 'base'")
    assert len(done.stderr.strip().splitlines()) == 1
    view = cr.compare_view(two_runs, "base", "base")
    assert view["error"].startswith("--baseline and --candidate are the same run 'base'")


def test_compare_refuses_runs_without_shared_items(two_runs, db_path):
    store = two_runs
    store.execute("DELETE FROM results WHERE run_id = 'cand' AND item_id NOT LIKE '%:1'")
    store.execute("DELETE FROM results WHERE run_id = 'base' AND item_id LIKE '%:1'")
    done = run_core("compare", "--db", str(db_path), "--baseline", "base", "--candidate", "cand")
    assert done.returncode == 1 and "share no answered items" in done.stderr


def test_the_compare_view_is_kept_per_store_version_and_follows_a_write(two_runs):
    """compare_view keeps its result for the store's version: the same call on unchanged data
    is served from memory; a write (here the candidate's verdict on one item turned over)
    changes the version and the next call recounts."""
    from core.services.compare_runs import compare_view

    store = two_runs
    first = compare_view(store, "base", "cand")
    assert compare_view(store, "base", "cand") is first  # unchanged data: the kept result
    overall = first["table"].query("metric == 'correct' and category == 'all'").iloc[0]
    item = store.scalar(
        "SELECT min(item_id) FROM results WHERE run_id = 'cand' AND correct IS NOT NULL"
    )
    store.execute(
        "UPDATE results SET correct = NOT correct WHERE run_id = 'cand' AND item_id = ?", [item]
    )
    second = compare_view(store, "base", "cand")
    assert second is not first
    after = second["table"].query("metric == 'correct' and category == 'all'").iloc[0]
    assert after["candidate"] != overall["candidate"]


def _compositions(n: int, parts: int):
    """Every way of putting n resampled pairs into `parts` patterns."""
    if parts == 1:
        yield (n,)
        return
    for k in range(n + 1):
        for rest in _compositions(n - k, parts - 1):
            yield (k, *rest)


def _enumerated_f1_diff_interval(x, y, truth) -> tuple[float, float]:
    """Independent reference for the F1 difference's bootstrap interval of the 'all' row: every
    resample of the erroneous pairs and of the control pairs (each side its own multinomial over
    its (baseline, candidate) patterns, probabilities from scipy), the difference of each
    resample's F1s, read as the smallest value whose cumulative probability reaches 2.5 % / 97.5 %."""
    from scipy.stats import multinomial

    def side(mask):
        pats = [(a, b) for a in (0.0, 1.0) for b in (0.0, 1.0)]
        counts = [int(((x[mask] == a) & (y[mask] == b)).sum()) for a, b in pats]
        n = sum(counts)
        out = []
        for comp in _compositions(n, 4):
            prob = multinomial.pmf(comp, n, [c / n for c in counts])
            if prob > 0:
                base = sum(k for k, (a, _) in zip(comp, pats) if a)
                cand = sum(k for k, (_, b) in zip(comp, pats) if b)
                out.append((base, cand, prob))
        return n, out

    n_e, err = side(truth == 1)
    _, ctrl = side(truth == 0)
    values, weights = [], []
    for tp_b, tp_c, pe in err:
        for fp_b, fp_c, pc in ctrl:
            f1 = []
            for tp, fp in ((tp_c, fp_c), (tp_b, fp_b)):
                denom = 2 * tp + fp + (n_e - tp)
                f1.append(2 * tp / denom if denom else math.nan)
            if not math.isnan(f1[0] - f1[1]):
                values.append(f1[0] - f1[1])
                weights.append(pe * pc)
    order = np.argsort(values, kind="stable")
    v, cum = np.array(values)[order], np.cumsum(np.array(weights)[order])
    cum /= cum[-1]
    low, high = (float(v[np.searchsorted(cum, q - 1e-12)]) for q in (0.025, 0.975))
    return low, high


@pytest.mark.parametrize("n", [6, 9, 12, 15])
def test_the_f1_difference_interval_is_exact_and_the_same_for_every_seed(n):
    """Issue 29, point 4: compare's paired F1 difference moved up to 1.7 points between seeds
    at 15 pairs (sampled, few values). With 0/1 answers it is now read from the exact bootstrap
    distribution: the same ends for seeds 0..4, equal to an enumeration of every resample."""
    rng = np.random.default_rng(n)
    truth = (np.arange(2 * n) < n).astype(float)  # n erroneous, n control pairs
    x = (rng.random(2 * n) < 0.5).astype(float)
    y = np.where(rng.random(2 * n) < 0.7, x, 1 - x)
    frame = pd.DataFrame(
        {"det_base": x, "det_cand": y, "category": "c", "is_error": truth.astype(bool)}
    )
    pairs = cr.Pairs("a", "b", "bench", ("j", "j"), ["det"], frame, f1_labels=["det"])
    rows = [cr.compare_table(pairs, seed=s) for s in range(5)]
    f1 = [r[(r["metric"] == "det_f1") & (r["category"] == "all")].iloc[0] for r in rows]
    ends = {(row["ci_low"], row["ci_high"]) for row in f1}
    assert len(ends) == 1, ends
    low, high = _enumerated_f1_diff_interval(x, y, truth)
    assert f1[0]["ci_low"] == pytest.approx(low, abs=1e-9)
    assert f1[0]["ci_high"] == pytest.approx(high, abs=1e-9)
