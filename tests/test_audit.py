"""Judge audit: sampling, label storage, queue resume, agreement statistics, CSV round trip.

Statistics are checked against independent references: sklearn's cohen_kappa_score,
statsmodels' fleiss_kappa, and hand-counted confusion matrices / disagreement.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import audit
from tests.audit_fixtures import add_items, add_judged_run, write_labels
from tests.core_cli import run_core

# -- Cohen's κ, disagreement, confusion ----------------------------------------------------


@pytest.mark.parametrize("seed", range(25))
def test_cohen_kappa_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    a = rng.random(n) < rng.uniform(0.1, 0.9)
    b = np.where(rng.random(n) < rng.uniform(0.3, 0.95), a, rng.random(n) < 0.5)
    if len(set(a)) == 1 and len(set(b)) == 1:  # degenerate draw (covered below): break it
        b[0] = not b[0]
    assert audit.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_cohen_kappa_degenerate_cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Both raters always say "true": sklearn says NaN (0/0); we define 1.0 (documented).
        assert np.isnan(cohen_kappa_score([True] * 5, [True] * 5))
    assert audit.cohen_kappa([True] * 5, [True] * 5) == 1.0
    assert audit.cohen_kappa([False] * 3, [False] * 3) == 1.0
    # One rater constant, the other not: p_e < 1, ordinary formula, same as sklearn (0 here).
    a, b = [True, True, True, True], [True, False, True, True]
    assert audit.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    # Perfect disagreement.
    assert audit.cohen_kappa([True, False], [False, True]) == pytest.approx(
        cohen_kappa_score([1, 0], [0, 1])
    )
    assert np.isnan(audit.cohen_kappa([], []))
    assert audit.KAPPA_NOTE  # the choice is spelled out for the page


def test_disagreement_and_confusion_by_hand():
    judge = [True, True, False, False, True, False, True]
    human = [True, False, False, True, True, False, False]
    # Pairs: TT, TF, FF, FT, TT, FF, TF → disagree on 3 of 7.
    assert audit.percent_disagreement(judge, human) == pytest.approx(300 / 7)
    cm = audit.confusion(judge, human)
    assert cm.tolist() == [[2, 2], [1, 2]]  # rows judge T/F, columns human T/F
    assert cm.sum() == 7


# -- Fleiss' κ ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_fleiss_kappa_matches_statsmodels(seed):
    rng = np.random.default_rng(100 + seed)
    n_items, n_raters = int(rng.integers(3, 40)), int(rng.integers(3, 6))
    truth = rng.random(n_items) < 0.5
    ratings = np.where(
        rng.random((n_items, n_raters)) < 0.75,
        truth[:, None],
        rng.random((n_items, n_raters)) < 0.5,
    )
    if len(np.unique(ratings)) == 1:  # degenerate draw (covered below): break it
        ratings[0, 0] = not ratings[0, 0]
    table, _ = aggregate_raters(ratings.astype(int), n_cat=2)
    assert audit.fleiss_kappa(ratings) == pytest.approx(
        sm_fleiss(table, method="fleiss"), abs=1e-12
    )


def test_fleiss_kappa_degenerate_cases():
    ratings = np.ones((4, 3), dtype=bool)
    table, _ = aggregate_raters(ratings.astype(int), n_cat=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(sm_fleiss(table))  # statsmodels: 0/0
    assert audit.fleiss_kappa(ratings) == 1.0  # ours: all agree → 1.0 (documented)
    assert np.isnan(audit.fleiss_kappa(np.zeros((0, 3))))
    assert np.isnan(audit.fleiss_kappa(np.ones((3, 1))))
    # Every item split 2–1 among three raters: systematic disagreement gives negative κ.
    split = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1], [0, 0, 1]], dtype=bool)
    table, _ = aggregate_raters(split.astype(int), n_cat=2)
    assert audit.fleiss_kappa(split) == pytest.approx(sm_fleiss(table))
    assert audit.fleiss_kappa(split) < 0


# -- sampling -------------------------------------------------------------------------------


def test_stratum_sizes_round_half_up_with_minimum_one():
    assert audit.stratum_sizes({"a": 25, "b": 4, "c": 14, "d": 100, "e": 15}, 0.1) == {
        "a": 3,
        "b": 1,
        "c": 1,
        "d": 10,
        "e": 2,
    }
    assert audit.stratum_sizes({"a": 3}, 1.0) == {"a": 3}
    with pytest.raises(audit.AuditError, match="fraction"):
        audit.stratum_sizes({"a": 3}, 0)


def _pool(n_models=3, per_cat=(25, 4, 14)):
    rows = []
    for m in range(n_models):
        for c, n in enumerate(per_cat):
            for k in range(n):
                rows.append(
                    {
                        "run_id": f"r{m}",
                        "item_id": f"c{c}-{k}",
                        "variant": "zero-shot",
                        "model": f"m{m}",
                        "category": f"cat{c}",
                    }
                )
    return pd.DataFrame(rows)


def test_stratified_sample_is_seeded_stratified_and_order_independent():
    pool = _pool()
    sample = audit.stratified_sample(pool, 0.1, seed=7)
    counts = sample.groupby(["model", "category"]).size()
    for m in range(3):
        assert counts[(f"m{m}", "cat0")] == 3 and counts[(f"m{m}", "cat1")] == 1
        assert counts[(f"m{m}", "cat2")] == 1
    assert sample["position"].tolist() == list(range(len(sample)))
    assert not sample.duplicated(["run_id", "item_id", "variant"]).any()
    shuffled = pool.sample(frac=1, random_state=3)
    again = audit.stratified_sample(shuffled, 0.1, seed=7)
    pd.testing.assert_frame_equal(sample.reset_index(drop=True), again.reset_index(drop=True))
    other = audit.stratified_sample(pool, 0.1, seed=8)
    assert set(map(tuple, other[["run_id", "item_id"]].values)) != set(
        map(tuple, sample[["run_id", "item_id"]].values)
    )
    # The queue mixes models rather than listing one model after another.
    assert sample["model"].iloc[: len(sample) // 2].nunique() > 1


def test_create_audit_stores_a_stable_named_sample(two_runs_store):
    store = two_runs_store
    info = audit.create_audit(store, "pilot", ["run-a", "run-b"])
    # 2 models × (4 categories of 10 + 10 controls): 10% of 10 = 1 per stratum → 10 items.
    assert info.n_pool == 100 and info.n_sampled == 10
    queue = audit.audit_queue(store, "pilot")
    assert len(queue) == 10 and queue["position"].tolist() == list(range(10))
    per = (
        queue.assign(cat=queue["primary_category"].fillna("(control)"))
        .groupby(["model", "cat"])
        .size()
    )
    assert (per == 1).all() and len(per) == 10
    assert queue["prompt"].notna().all() and queue["response"].notna().all()
    # Same name again: unchanged, even with other parameters.
    again = audit.create_audit(store, "pilot", ["run-a"], fraction=0.5, seed=99)
    assert again.n_sampled == 10
    pd.testing.assert_frame_equal(audit.audit_queue(store, "pilot"), queue)
    # A larger fraction under a new name follows round-half-up per stratum.
    big = audit.create_audit(store, "big", ["run-a"], fraction=0.25, seed=3)
    assert big.n_sampled == 5 * 3  # round(2.5) = 3 per stratum
    assert set(audit.list_audits(store)["audit"]) == {"pilot", "big"}


def test_create_audit_rejects_bad_input(two_runs_store):
    store = two_runs_store
    with pytest.raises(audit.AuditError, match="unknown run"):
        audit.create_audit(store, "x", ["nope"])
    with pytest.raises(audit.AuditError, match="at least one run"):
        audit.create_audit(store, "x", [])
    with pytest.raises(audit.AuditError, match="name"):
        audit.create_audit(store, "  ", ["run-a"])
    assert audit.list_audits(store).empty


# -- labels, queue resume, last write wins --------------------------------------------------


def test_save_labels_resume_and_last_write_wins(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "q", ["run-a", "run-b"], seed=1)
    queue = audit.audit_queue(store, "q")
    assert audit.next_position(store, "q", "ann") == 0
    first = queue.iloc[0]
    key = (first["run_id"], first["item_id"], first["variant"])
    # Only three labels: item 0 is not fully labelled yet, the queue stays there.
    audit.save_labels(store, *key, "ann", {l: True for l in JUDGE_LABELS[:3]})
    assert audit.next_position(store, "q", "ann") == 0
    audit.save_labels(store, *key, "ann", {l: False for l in JUDGE_LABELS}, note="looks fine")
    assert audit.next_position(store, "q", "ann") == 1
    assert audit.progress(store, "q", "ann") == {"total": 10, "done": 1}
    saved = audit.item_labels(store, *key, "ann")
    assert all(saved[l] is False for l in JUDGE_LABELS) and saved["_note"] == "looks fine"
    n_rows = store.scalar("SELECT count(*) FROM human_labels")
    assert n_rows == 6  # last write replaced the first three, no duplicates
    judge_shown = store.df("SELECT label, judge_value FROM human_labels ORDER BY label")
    expected = dict(zip(JUDGE_LABELS, [first[l] for l in JUDGE_LABELS]))
    assert {r.label: r.judge_value for r in judge_shown.itertuples()} == expected
    # Another annotator starts at the beginning; skipping ahead leaves earlier gaps first.
    second = queue.iloc[2]
    audit.save_labels(
        store,
        second["run_id"],
        second["item_id"],
        second["variant"],
        "bob",
        {l: True for l in JUDGE_LABELS},
    )
    assert audit.next_position(store, "q", "bob") == 0
    with pytest.raises(audit.AuditError, match="annotator"):
        audit.save_labels(store, *key, " ", {"detection": True})
    with pytest.raises(audit.AuditError, match="unknown label"):
        audit.save_labels(store, *key, "ann", {"bogus": True})


def test_queue_done_returns_none(store):
    items = add_items(store, n_per_category=1, n_controls=1)
    add_judged_run(store, "tiny", "m", items, seed=0)
    audit.create_audit(store, "t", ["tiny"], fraction=1.0)
    with store.session():  # many small saves: one open of the file
        for row in audit.audit_queue(store, "t").itertuples():
            audit.save_labels(
                store,
                str(row.run_id),
                str(row.item_id),
                str(row.variant),
                "ann",
                {l: True for l in JUDGE_LABELS},
            )
    assert audit.next_position(store, "t", "ann") is None
    assert audit.progress(store, "t", "ann") == {"total": 5, "done": 5}


# -- agreement panel against references -----------------------------------------------------


def _label_everything(store, name, annotator, flip_rate, seed):
    """Label all queue items: the judge's value, flipped with probability flip_rate."""
    rng = np.random.default_rng(seed)
    out, saves = [], []
    for row in audit.audit_queue(store, name).itertuples():
        values = {l: bool(getattr(row, l)) != (rng.random() < flip_rate) for l in JUDGE_LABELS}
        saves.append((row, annotator, values))
        out.append(
            {
                "key": (row.run_id, row.item_id),
                **{f"j_{l}": bool(getattr(row, l)) for l in JUDGE_LABELS},
                **values,
            }
        )
    write_labels(store, saves)  # what one save_labels call per item writes
    return pd.DataFrame(out)


def test_agreement_table_matches_sklearn_and_hand_counts(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "agree", ["run-a", "run-b"], fraction=0.25, seed=4)
    mine = _label_everything(store, "agree", "ann", flip_rate=0.3, seed=5)
    table = audit.agreement_table(audit.audit_labels(store, "agree"), names=JUDGE_LABELS)
    assert list(table["label"]) == list(JUDGE_LABELS)
    for row in table.itertuples():
        judge, human = mine[f"j_{row.label}"], mine[row.label]
        assert row.n == len(mine)
        ref = (
            cohen_kappa_score(judge, human) if (judge.nunique() > 1 or human.nunique() > 1) else 1.0
        )
        assert row.cohen_kappa == pytest.approx(ref, abs=1e-12)
        assert row.disagreement_pct == pytest.approx(100 * (judge != human).sum() / len(mine))
        assert row.judge_true_human_false == int((judge & ~human).sum())
        assert row.judge_false_human_true == int((~judge & human).sum())
        assert row.judge_true_human_true == int((judge & human).sum())
        assert row.judge_false_human_false == int((~judge & ~human).sum())
    cms = audit.confusion_matrices(audit.audit_labels(store, "agree"), "ann", names=JUDGE_LABELS)
    assert all(m.sum() == len(mine) for m in cms.values())


def test_fleiss_table_three_annotators_matches_statsmodels(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "fl", ["run-a", "run-b"], fraction=0.2, seed=4)
    frames = {
        name: _label_everything(store, "fl", name, flip, seed)
        for name, flip, seed in [("ann1", 0.1, 1), ("ann2", 0.2, 2), ("ann3", 0.3, 3)]
    }
    labels = audit.audit_labels(store, "fl")
    table = audit.fleiss_table(labels, names=JUDGE_LABELS)
    for row in table.itertuples():
        ratings = np.stack(
            [frames[a][row.label].to_numpy() for a in ("ann1", "ann2", "ann3")], axis=1
        )
        counts, _ = aggregate_raters(ratings.astype(int), n_cat=2)
        assert row.n_items == len(ratings) and row.n_raters == 3
        assert row.fleiss_kappa == pytest.approx(sm_fleiss(counts, method="fleiss"), abs=1e-12)
    pairs = audit.pairwise_kappa(labels, names=JUDGE_LABELS)
    assert len(pairs) == 3 * len(JUDGE_LABELS)
    for row in pairs.itertuples():
        a, b = (
            frames[str(row.annotator_a)][str(row.label)],
            frames[str(row.annotator_b)][str(row.label)],
        )
        assert row.n == len(a)
        assert row.cohen_kappa == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        assert row.disagreement_pct == pytest.approx(100 * (a != b).mean())
    # Only two annotators: Fleiss' κ is not reported.
    two = audit.fleiss_table(labels, ["ann1", "ann2"], names=JUDGE_LABELS)
    assert two["fleiss_kappa"].isna().all()


def test_fleiss_uses_only_items_all_raters_labelled(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "part", ["run-a"], fraction=0.3, seed=0)
    queue = audit.audit_queue(store, "part")
    with store.session():  # many small saves: one open of the file
        for name in ("a1", "a2", "a3"):
            rows = queue if name != "a3" else queue.iloc[:7]
            for row in rows.itertuples():
                audit.save_labels(
                    store,
                    str(row.run_id),
                    str(row.item_id),
                    str(row.variant),
                    name,
                    {l: True for l in JUDGE_LABELS},
                )
    table = audit.fleiss_table(audit.audit_labels(store, "part"), names=JUDGE_LABELS)
    assert (table["n_items"] == 7).all()
    assert (table["fleiss_kappa"] == 1.0).all()  # everyone always true: defined as 1


def test_f1_comparison_against_hand_counts(store):
    items = add_items(store, n_per_category=2, n_controls=2)  # 8 erroneous + 2 controls
    verdicts = add_judged_run(store, "r", "m", items, seed=11)
    audit.create_audit(store, "f1", ["r"], fraction=1.0)
    queue = audit.audit_queue(store, "f1")
    # Human says: every erroneous item detected, no control flagged → TP=8, FN=0, FP=0.
    with store.session():  # many small saves: one open of the file
        for row in queue.itertuples():
            audit.save_labels(
                store,
                str(row.run_id),
                str(row.item_id),
                str(row.variant),
                "h",
                {l: bool(row.is_error) for l in JUDGE_LABELS},
            )
    f1 = audit.f1_comparison(store, "f1")
    human = f1[f1["source"] == "human · h"].iloc[0]
    assert all(human[l] == pytest.approx(100.0) for l in JUDGE_LABELS)
    judge = f1[f1["source"] == "judge · items labelled by h"].iloc[0]
    assert judge["n"] == human["n"] == 10 and judge["pair"] == human["pair"] == "h"
    merged = items.merge(verdicts, on="item_id")
    for label in JUDGE_LABELS:
        flag, err = merged[label].astype(bool), merged["is_error"].astype(bool)
        tp, fp, fn = (flag & err).sum(), (flag & ~err).sum(), (~flag & err).sum()
        assert judge[label] == pytest.approx(100 * 2 * tp / (2 * tp + fp + fn))
    assert judge["metric"] == "F1"
    whole = f1[f1["source"] == "judge · whole run"].iloc[0]
    assert whole["n"] == 10 and whole["detection"] == pytest.approx(judge["detection"])
    mad = audit.mean_abs_difference(f1, names=JUDGE_LABELS)
    expected = np.mean([abs(100.0 - judge[l]) for l in JUDGE_LABELS])
    assert mad.iloc[0]["mean_abs_diff_points"] == pytest.approx(expected)


def test_f1_without_controls_is_recall_and_says_so(store):
    items = add_items(store, n_per_category=3, n_controls=0)
    verdicts = add_judged_run(store, "r", "m", items, seed=5)
    audit.create_audit(store, "rec", ["r"], fraction=1.0)
    f1 = audit.f1_comparison(store, "rec")
    judge = f1[f1["source"] == "judge · whole run"].iloc[0]
    assert judge["metric"].startswith("recall")
    assert judge["detection"] == pytest.approx(100 * verdicts["detection"].mean())


def test_majority_and_annotator_rows(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "maj", ["run-a"], fraction=0.25, seed=4)
    for name, flip in [("x", 0.0), ("y", 0.5)]:
        _label_everything(store, "maj", name, flip, seed=9)
    f1 = audit.f1_comparison(store, "maj")
    assert set(f1["source"]) == {
        "judge · whole run",
        "judge · items labelled by x",
        "human · x",
        "judge · items labelled by y",
        "human · y",
        "judge · items labelled by ≥2 annotators",
        "human · majority",
    }
    # Annotator x copied the judge: identical F1.
    x = f1[f1["source"] == "human · x"].iloc[0]
    j = f1[f1["source"] == "judge · items labelled by x"].iloc[0]
    for label in JUDGE_LABELS:
        assert x[label] == pytest.approx(j[label], nan_ok=True)
    # Majority of two with ties → false: true only where both said true.
    labels = audit.audit_labels(store, "maj")
    maj = audit.majority_labels(labels)
    both = labels.pivot_table(index=["item_id", "label"], columns="annotator", values="value")
    expected = both["x"].astype(bool) & both["y"].astype(bool)
    got = maj.set_index(["item_id", "label"])["value"]
    assert (got.sort_index() == expected.sort_index()).all()


# -- CSV export / import ----------------------------------------------------------------------


def test_csv_round_trip(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "csv", ["run-a", "run-b"], seed=2)
    _label_everything(store, "csv", "ann", 0.3, seed=1)
    row0 = audit.audit_queue(store, "csv").iloc[0]
    audit.save_labels(
        store,
        row0["run_id"],
        row0["item_id"],
        row0["variant"],
        "ann",
        {"guidance": True},
        note='tricky, "quoted"\nsecond line',
    )
    text = audit.export_labels_csv(store, "csv")
    before = store.df("SELECT * EXCLUDE (created_at) FROM human_labels ORDER BY ALL")
    store.execute("DELETE FROM human_labels")
    result = audit.import_labels_csv(store, text.encode())
    assert result.written == result.rows == len(before) == 60
    after = store.df("SELECT * EXCLUDE (created_at) FROM human_labels ORDER BY ALL")
    pd.testing.assert_frame_equal(before, after)
    # Re-import: nothing older in the DB, all rows rewritten, still no duplicates.
    audit.import_labels_csv(store, text)
    assert store.scalar("SELECT count(*) FROM human_labels") == 60


def test_csv_import_errors_name_lines_and_write_nothing(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "bad", ["run-a"], seed=2)
    q = audit.audit_queue(store, "bad").iloc[0]
    good = f"{q.run_id},{q.item_id},{q.variant},ann,detection,true,,ok,\n"
    text = (
        "run_id,item_id,variant,annotator,label,value,judge_value,note,created_at\n"
        + good
        + f"{q.run_id},{q.item_id},{q.variant},ann,detektion,true,,,\n"
        + f'{q.run_id},{q.item_id},{q.variant},ann,guidance,maybe,,"multi\nline",\n'
        + f"{q.run_id},missing-item,{q.variant},ann,guidance,false,,,\n"
        + f"{q.run_id},{q.item_id},{q.variant},,guidance,false,,,\n"
        + good.replace(",ok,", ",dup,")
        + f"{q.run_id},{q.item_id},{q.variant},ann,correction_attempt,true,,,yesterday\n"
    )
    with pytest.raises(audit.AuditError) as err:
        audit.import_labels_csv(store, text)
    message = str(err.value)
    assert "nothing written" in message
    assert "line 3: label 'detektion'" in message
    assert "line 4: value: 'maybe'" in message
    assert "line 6: no judged response" in message  # line 4 spans two physical lines
    assert "line 7: annotator is empty" in message
    assert "line 8: duplicate of line 2" in message
    assert "line 9: created_at 'yesterday'" in message
    assert "line 2" not in message.replace("duplicate of line 2", "")
    assert store.scalar("SELECT count(*) FROM human_labels") == 0
    with pytest.raises(audit.AuditError, match="line 1: missing column"):
        audit.import_labels_csv(store, "run_id,item_id\nx,y\n")


def test_csv_import_last_write_wins_by_time(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "t", ["run-a"], seed=2)
    q = audit.audit_queue(store, "t").iloc[0]
    key = (q.run_id, q.item_id, q.variant)
    now = datetime(2026, 6, 1, 12, 0, 0)
    audit.save_labels(store, *key, "ann", {"detection": True, "guidance": True}, at=now)
    older = (now - timedelta(days=1)).isoformat()
    newer = (now + timedelta(days=1)).isoformat()
    text = (
        "run_id,item_id,variant,annotator,label,value,created_at\n"
        f"{key[0]},{key[1]},{key[2]},ann,detection,false,{older}\n"
        f"{key[0]},{key[1]},{key[2]},ann,guidance,false,{newer}\n"
    )
    result = audit.import_labels_csv(store, text)
    assert (result.written, result.skipped_older) == (1, 1)
    got = dict(store.rows("SELECT label, value FROM human_labels"))
    assert got == {"detection": True, "guidance": False}


# -- a run made by the runner ----------------------------------------------------------------


def test_audit_of_a_run_made_by_the_runner(initialised_store):
    """`python -m core run misprompt` against the scripted server, then audit it: the judge's
    whole-run F1 and the human F1 agree with core.benchmarks.misprompt.metrics' in-database numbers."""
    import hashlib
    import json

    from core.benchmarks.misprompt import metrics as mm
    from tests.fake_openai import FakeOpenAI

    def responder(body: dict) -> str:
        text = json.dumps(body.get("messages"))
        if body.get("response_format"):  # judge: labels from a hash of the request, mixed
            h = hashlib.sha256(text.encode()).digest()
            return json.dumps(
                {
                    l: {"rationale": "scripted", "value": bool(h[i] % 2)}
                    for i, l in enumerate(JUDGE_LABELS)
                }
            )
        return "an answer"

    store = initialised_store
    with FakeOpenAI(responder=responder) as server:
        run = run_core(
            "run", "misprompt", "--db", str(store.path), "--items", "misprompt-sample",
            "--base-url", server.url, "--model", "fake-model", "--run-name", "e2e-audit",
        )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    info = audit.create_audit(store, "e2e", ["e2e-audit"], fraction=0.1, seed=1)
    pool = audit.verdict_pool(store, ["e2e-audit"])
    expected = sum(
        audit.stratum_sizes(pool.groupby(["model", "category"]).size().to_dict(), 0.1).values()
    )
    assert (
        info.n_pool
        == len(pool)
        == store.scalar(
            "SELECT count(*) FROM misprompt_verdicts WHERE run_id = 'e2e-audit' AND status = 'ok'"
        )
    )
    assert info.n_sampled == expected and "(control)" in set(pool["category"])
    rng = np.random.default_rng(2)
    with store.session():  # many small saves: one open of the file
        for row in audit.audit_queue(store, "e2e").itertuples():
            audit.save_labels(
                store,
                str(row.run_id),
                str(row.item_id),
                str(row.variant),
                "ann",
                {l: bool(getattr(row, l)) != (rng.random() < 0.3) for l in JUDGE_LABELS},
            )
    f1 = audit.f1_comparison(store, "e2e")
    metrics = mm.run_metrics(store, ["e2e-audit"], ci=False)
    theirs = metrics[metrics["category"] == "All"].set_index(["evaluator", "metric"])["f1"]
    whole = f1[f1["source"] == "judge · whole run"].iloc[0]
    human = f1[f1["source"] == "human · ann"].iloc[0]
    for label in JUDGE_LABELS:
        assert whole[label] == pytest.approx(theirs[("judge", label)], abs=1e-9, nan_ok=True)
        assert human[label] == pytest.approx(theirs[("human", label)], abs=1e-9, nan_ok=True)
    assert whole["n"] == info.n_pool and human["n"] == info.n_sampled


def test_queue_progress_is_progress_and_next_position_in_one_read(two_runs_store):
    """The label view's one read (issue 31, point 9) says what progress and next_position say,
    before any label, part-way (an item with five of six labels is not done) and at the end."""
    store = two_runs_store
    audit.create_audit(store, "qp", ["run-a", "run-b"], fraction=0.1, seed=2)
    queue = audit.audit_queue(store, "qp")
    n = len(JUDGE_LABELS)

    def check() -> dict:
        got = audit.queue_progress(store, "qp", "ann", n)
        assert got == {
            **audit.progress(store, "qp", "ann"),
            "next": audit.next_position(store, "qp", "ann"),
        }
        return got

    assert check() == {"total": len(queue), "done": 0, "next": 0}
    rows = [(str(r.run_id), str(r.item_id), str(r.variant)) for r in queue.itertuples()]

    def save(key: tuple[str, str, str], who: str, names: tuple[str, ...], value: bool) -> None:
        audit.save_labels(store, *key, who, dict.fromkeys(names, value))

    for key in rows[:3]:
        save(key, "ann", JUDGE_LABELS, True)
    save(rows[3], "ann", JUDGE_LABELS[:-1], False)  # five of six: not done
    save(rows[5], "other", JUDGE_LABELS, True)  # another annotator's: not this one's
    assert check() == {"total": len(queue), "done": 3, "next": 3}
    for key in rows:
        save(key, "ann", JUDGE_LABELS, True)
    assert check() == {"total": len(queue), "done": len(queue), "next": None}
