"""An audit worth trusting (issue 12 A): κ with n and a bootstrap CI, paired human-vs-judge F1,
strata by run, and a save that detects a label changed since it was shown.

References are independent: sklearn's cohen_kappa_score and statsmodels' fleiss_kappa on every
resample of the exact bootstrap distribution (scipy's multinomial), scipy.stats.bootstrap for
many items, F1 counted by hand from the stored verdicts.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import bootstrap, multinomial
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import audit
from tests.audit_fixtures import add_items, add_judged_run, write_labels

# -- κ with n and CI ------------------------------------------------------------------------


def _compositions(n: int, k: int):
    """Every way n resampled items fall into k patterns (the multinomial's support)."""
    for cut in itertools.combinations(range(n + k - 1), k - 1):
        edges = (-1, *cut, n + k - 1)
        yield [edges[i + 1] - edges[i] - 1 for i in range(k)]


def _exact_reference(counts: np.ndarray, kappa_of) -> tuple[float, float]:
    """The 2.5/97.5 % inverse-CDF percentiles of `kappa_of(resampled counts)` over the exact
    bootstrap distribution: every composition, weighted by scipy's multinomial pmf. κ of a
    resample with a single class is 1.0 (KAPPA_NOTE), where sklearn/statsmodels say NaN."""
    n = int(counts.sum())
    values, weights = [], []
    for comp in _compositions(n, len(counts)):
        p = multinomial.pmf(comp, n, counts / n)
        if p > 0:
            v = kappa_of(comp)
            values.append(1.0 if np.isnan(v) else v)
            weights.append(p)
    q = np.quantile(values, (0.025, 0.975), method="inverted_cdf", weights=weights)
    return float(q[0]), float(q[1])


@pytest.mark.parametrize("seed", range(4))
def test_kappa_estimate_matches_sklearn_and_its_exact_bootstrap(seed):
    """κ as sklearn computes it; its interval the percentile interval of the exact bootstrap
    distribution (items resampled with replacement: a multinomial over the 2×2 cells,
    enumerated with scipy, κ of each by sklearn) — the same for every seed (issue 29: at 1,000
    draws an end of a κ over 8-15 items moved up to 16 points between seeds)."""
    rng = np.random.default_rng(seed)
    n = 14
    a = rng.random(n) < 0.5
    b = np.where(rng.random(n) < 0.8, a, ~a)
    est = audit.kappa_estimate(a, b, seed=seed)
    assert est.n == n and est.reliable
    assert est.kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    cells = np.array([np.sum(a & b), np.sum(a & ~b), np.sum(~a & b), np.sum(~a & ~b)])
    pairs = [(True, True), (True, False), (False, True), (False, False)]

    def kappa_of(comp):
        xs = [p for p, c in zip(pairs, comp) for _ in range(c)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cohen_kappa_score([p[0] for p in xs], [p[1] for p in xs])

    ref = _exact_reference(cells, kappa_of)
    assert (est.ci_low, est.ci_high) == pytest.approx(ref, abs=1e-9)
    assert est.ci_low <= est.kappa <= est.ci_high
    for other in range(5):  # no seed in an exact interval
        assert audit.kappa_estimate(a, b, seed=other) == est
    assert audit.format_kappa(est) == f"{est.kappa:.2f} [{est.ci_low:.2f}, {est.ci_high:.2f}]"


@pytest.mark.parametrize("n", [150, 600])
def test_kappa_interval_of_many_items_holds_between_seeds_and_matches_scipy(n):
    """Too many items for the exact distribution: drawn until each end's Monte-Carlo error is
    within 0.005. Seeds 0..4 within 0.01 of each other, and within 0.01 of scipy.stats.bootstrap's
    percentile interval (100,000 resamples of the items, κ written out here)."""
    rng = np.random.default_rng(n)
    a = rng.random(n) < 0.4
    b = np.where(rng.random(n) < 0.85, a, ~a)
    ends = np.array(
        [[e.ci_low, e.ci_high] for e in (audit.kappa_estimate(a, b, seed=s) for s in range(5))]
    )
    assert (ends.max(axis=0) - ends.min(axis=0) <= 0.01).all(), ends

    def kappa(x, y, axis=-1):
        po = np.mean(x == y, axis=axis)
        px, py = np.mean(x, axis=axis), np.mean(y, axis=axis)
        pe = px * py + (1 - px) * (1 - py)
        return (po - pe) / (1 - pe)

    ref = bootstrap(
        (a.astype(float), b.astype(float)),
        kappa,
        paired=True,
        vectorized=True,
        n_resamples=100_000,
        batch=5_000,
        method="percentile",
        random_state=np.random.default_rng(1),
    ).confidence_interval
    assert abs(ends[0, 0] - ref.low) <= 0.01 and abs(ends[0, 1] - ref.high) <= 0.01, (ends[0], ref)


def test_kappa_below_min_n_is_flagged_not_shown():
    est = audit.kappa_estimate([True, False, True], [True, False, True])
    assert est.kappa == 1.0 and est.n == 3 and not est.reliable
    assert audit.format_kappa(est) == "n too small"
    assert audit.MIN_N == 10
    ten = audit.kappa_estimate([True, False] * 5, [True, False] * 4 + [False, False])
    assert ten.n == 10 and ten.reliable
    assert audit.format_kappa(audit.kappa_estimate([], [])) == "—"


@pytest.mark.parametrize("seed", range(3))
def test_fleiss_estimate_matches_statsmodels_and_its_exact_bootstrap(seed):
    """Fleiss' κ as statsmodels computes it; its interval that of the exact bootstrap
    distribution (items resampled, counted by their number of "true" ratings 0..raters:
    a multinomial enumerated with scipy, statsmodels' κ of each resample's items)."""
    rng = np.random.default_rng(50 + seed)
    n, raters = 12, 4
    truth = rng.random(n) < 0.5
    m = np.where(rng.random((n, raters)) < 0.8, truth[:, None], ~truth[:, None])
    est = audit.fleiss_estimate(m, seed=seed)
    table, _ = aggregate_raters(m.astype(int), n_cat=2)
    assert est.kappa == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)
    hist = np.bincount(m.sum(axis=1), minlength=raters + 1)

    def kappa_of(comp):  # items × (true, false) counts, one row per resampled item
        rows = np.array([[k, raters - k] for k, c in enumerate(comp) for _ in range(c)])
        with np.errstate(divide="ignore", invalid="ignore"):
            return sm_fleiss(rows, method="fleiss")

    ref = _exact_reference(hist, kappa_of)
    assert (est.ci_low, est.ci_high) == pytest.approx(ref, abs=1e-9)
    assert est.n == n and est.reliable
    assert all(audit.fleiss_estimate(m, seed=s) == est for s in range(5))


def test_agreement_and_fleiss_tables_carry_n_ci_and_the_small_n_flag(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "ci", ["run-a", "run-b"], fraction=0.5, seed=2)
    queue = audit.audit_queue(store, "ci")
    rng = np.random.default_rng(1)
    saves = [
        (row, name, {l: bool(getattr(row, l)) != (rng.random() < 0.2) for l in JUDGE_LABELS})
        for name in ("p", "q", "r")
        for row in queue.itertuples()
    ]
    # s labels three items only: its κ is computed but flagged.
    saves += [
        (row, "s", {l: bool(getattr(row, l)) for l in JUDGE_LABELS})
        for row in list(queue.itertuples())[:3]
    ]
    write_labels(store, saves)  # what 153 save_labels calls write
    labels = audit.audit_labels(store, "ci")
    table = audit.agreement_table(labels, names=JUDGE_LABELS)
    big = table[table["annotator"] == "p"]
    assert (big["n"] == len(queue)).all() and not big["n_too_small"].any()
    assert ((big["ci_low"] <= big["cohen_kappa"]) & (big["cohen_kappa"] <= big["ci_high"])).all()
    row = big[big["label"] == "detection"].iloc[0]
    pairs = labels[(labels["annotator"] == "p") & (labels["label"] == "detection")]
    ref = audit.kappa_estimate(pairs["judge_value"].astype(bool), pairs["value"].astype(bool))
    assert (row["cohen_kappa"], row["ci_low"], row["ci_high"]) == (
        ref.kappa,
        ref.ci_low,
        ref.ci_high,
    )
    small = table[table["annotator"] == "s"]
    assert (small["n"] == 3).all() and small["n_too_small"].all()
    fleiss = audit.fleiss_table(labels, ["p", "q", "r"], names=JUDGE_LABELS)
    assert (fleiss["n_items"] == len(queue)).all() and not fleiss["n_too_small"].any()
    assert fleiss[["ci_low", "ci_high"]].notna().all().all()
    pair = audit.pairwise_kappa(labels, names=JUDGE_LABELS)
    assert pair[(pair["annotator_b"] == "s")]["n_too_small"].all()


# -- paired human-vs-judge F1 ---------------------------------------------------------------


def _hand_f1(rows: pd.DataFrame, label: str) -> float:
    flag, err = rows[label].astype(bool), rows["is_error"].astype(bool)
    tp, fp, fn = (flag & err).sum(), (flag & ~err).sum(), (~flag & err).sum()
    return 100 * 2 * tp / (2 * tp + fp + fn)


def test_f1_pairs_judge_and_person_on_exactly_the_items_the_person_labelled(store):
    items = add_items(store, n_per_category=2, n_controls=3)  # 8 erroneous + 3 controls
    verdicts = add_judged_run(store, "r", "m", items, seed=21)
    audit.create_audit(store, "pair", ["r"], fraction=1.0)
    queue = audit.audit_queue(store, "pair")
    # The person labels 4 of 11 items (two erroneous, two controls), all six labels; and a
    # fifth item with three labels only (partial: not part of the pair).
    chosen = pd.concat([queue[queue["is_error"]].head(2), queue[~queue["is_error"]].head(2)])
    for row in chosen.itertuples():
        audit.save_labels(
            store,
            str(row.run_id),
            str(row.item_id),
            str(row.variant),
            "ann",
            {l: bool(row.is_error) for l in JUDGE_LABELS},
        )
    partial = queue[queue["is_error"]].iloc[3]
    audit.save_labels(
        store,
        partial.run_id,
        partial.item_id,
        partial.variant,
        "ann",
        {l: True for l in JUDGE_LABELS[:3]},
    )
    f1 = audit.f1_comparison(store, "pair")
    judge = f1[f1["source"] == "judge · items labelled by ann"].iloc[0]
    human = f1[f1["source"] == "human · ann"].iloc[0]
    assert judge["n"] == human["n"] == 4 and judge["pair"] == human["pair"] == "ann"
    on_items = items.merge(verdicts, on="item_id").merge(chosen[["item_id"]], on="item_id")
    assert len(on_items) == 4
    for label in JUDGE_LABELS:
        assert judge[label] == pytest.approx(_hand_f1(on_items, label))
        assert human[label] == pytest.approx(100.0)
    whole = f1[f1["source"] == "judge · whole run"].iloc[0]
    assert whole["n"] == 11 and whole["pair"] == ""
    mad = audit.mean_abs_difference(f1, names=JUDGE_LABELS)
    assert mad[["pair", "n"]].values.tolist() == [["ann", 4]]
    expected = np.mean([abs(100.0 - _hand_f1(on_items, l)) for l in JUDGE_LABELS])
    assert mad.iloc[0]["mean_abs_diff_points"] == pytest.approx(expected)


def test_majority_pair_uses_items_two_annotators_labelled(store):
    items = add_items(store, n_per_category=2, n_controls=2)
    verdicts = add_judged_run(store, "r", "m", items, seed=4)
    audit.create_audit(store, "maj2", ["r"], fraction=1.0)
    queue = audit.audit_queue(store, "maj2")
    with store.session():  # many small saves: one open of the file
        for who, rows in (("x", queue.iloc[:6]), ("y", queue.iloc[3:8])):
            for row in rows.itertuples():
                audit.save_labels(
                    store,
                    str(row.run_id),
                    str(row.item_id),
                    str(row.variant),
                    who,
                    {l: True for l in JUDGE_LABELS},
                )
    f1 = audit.f1_comparison(store, "maj2")
    maj = f1[f1["pair"] == "majority"]
    assert set(maj["source"]) == {"judge · items labelled by ≥2 annotators", "human · majority"}
    assert (maj["n"] == 3).all()  # positions 3, 4, 5
    on_items = items.merge(verdicts, on="item_id").merge(queue.iloc[3:6][["item_id"]])
    judge = maj[maj["source"].str.startswith("judge")].iloc[0]
    for label in JUDGE_LABELS:
        assert judge[label] == pytest.approx(_hand_f1(on_items, label), nan_ok=True)


# -- strata by run --------------------------------------------------------------------------


def test_two_runs_of_one_model_each_get_their_share(store):
    items = add_items(store, n_per_category=10, n_controls=10)
    add_judged_run(store, "passive-run", "same-model", items, seed=1, mode="passive")
    add_judged_run(store, "proactive-run", "same-model", items, seed=2)
    info = audit.create_audit(
        store, "strata", ["passive-run", "proactive-run"], fraction=0.1, seed=0
    )
    queue = audit.audit_queue(store, "strata")
    per_run = queue.groupby("run_id").size().to_dict()
    assert per_run == {"passive-run": 5, "proactive-run": 5}  # 5 categories × round(0.1 × 10)
    assert info.n_sampled == 10
    per_stratum = (
        queue.assign(cat=queue["primary_category"].fillna("(control)"))
        .groupby(["run_id", "cat"])
        .size()
    )
    assert (per_stratum == 1).all() and len(per_stratum) == 10


# -- optimistic concurrency -----------------------------------------------------------------


def test_a_save_over_labels_changed_since_shown_is_refused_with_both_values(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "cc", ["run-a"], fraction=0.2, seed=1)
    row = audit.audit_queue(store, "cc").iloc[0]
    key = (row["run_id"], row["item_id"], row["variant"])
    shown_tab1 = audit.item_labels(store, *key, "ann")  # both tabs show the unlabelled item
    shown_tab2 = audit.item_labels(store, *key, "ann")
    assert shown_tab1 == {"_note": ""}
    tab2 = {l: False for l in JUDGE_LABELS}
    audit.save_labels(store, *key, "ann", tab2, note="tab 2", expected=shown_tab2)
    tab1 = {l: True for l in JUDGE_LABELS}
    with pytest.raises(audit.LabelConflict) as info:
        audit.save_labels(store, *key, "ann", tab1, expected=shown_tab1)
    assert info.value.theirs == {**tab2, "_note": "tab 2"}
    assert info.value.mine == {**tab1, "_note": ""}
    assert "another tab" in str(info.value)
    assert audit.item_labels(store, *key, "ann") == {**tab2, "_note": "tab 2"}  # nothing written
    # "Overwrite": save again expecting what is there now.
    audit.save_labels(store, *key, "ann", tab1, expected=info.value.theirs)
    assert audit.item_labels(store, *key, "ann") == {**tab1, "_note": ""}
    # Another annotator's labels are not a conflict; no `expected` means last write wins.
    audit.save_labels(store, *key, "bob", tab2, expected={})
    audit.save_labels(store, *key, "ann", tab2)
    assert audit.item_labels(store, *key, "ann")["detection"] is False


def test_same_labels_compares_values_and_note():
    base = {l: True for l in JUDGE_LABELS}
    assert audit.same_labels({**base, "_note": ""}, {**base})
    assert not audit.same_labels({**base, "_note": "x"}, base)
    assert not audit.same_labels({**base, "detection": False}, base)
    assert not audit.same_labels({}, base)
    assert audit.same_labels(None, {"_note": ""})


def test_f1_without_labels_has_only_the_whole_run_row(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "bare", ["run-a"], fraction=0.2, seed=1)
    f1 = audit.f1_comparison(store, "bare")
    assert f1[["source", "pair", "n"]].values.tolist() == [["judge · whole run", "", 50]]
    assert audit.mean_abs_difference(f1, names=JUDGE_LABELS).empty
