"""Mis-prompt F1 (SPEC §1): hand-computed cases, sklearn equivalence, recall-only, bootstrap, CLI."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score, recall_score

from core.benchmarks.misprompt import metrics as mm
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS, PRIMARY_OF
from core.services.published import PUBLISHED_DIR
from core.stats import draws_for, resample
from tests.core_cli import Done, run_core, run_misprompt
from tests.misprompt_fixtures import insert_human_labels, insert_run, random_verdicts


def _row(table: pd.DataFrame, level: str, category: str, metric: str, evaluator: str = "judge"):
    sel = table[
        (table["category_level"] == level)
        & (table["category"] == category)
        & (table["metric"] == metric)
        & (table["evaluator"] == evaluator)
    ]
    assert len(sel) == 1, (level, category, metric, len(sel))
    return sel.iloc[0]


def _hand_case() -> pd.DataFrame:
    """4 grammatical + 2 entity errors + 4 controls; only detection varies."""
    rows = []
    for i, (cat, det) in enumerate(
        [
            ("Grammatical Errors", True),
            ("Grammatical Errors", True),
            ("Grammatical Errors", True),
            ("Grammatical Errors", False),
            ("Entity Error", True),
            ("Entity Error", False),
        ]
    ):
        rows.append(
            {
                "item_id": f"e{i}",
                "is_error": True,
                "secondary_category": cat,
                "primary_category": PRIMARY_OF[cat],
                "detection": det,
            }
        )
    for i, det in enumerate([True, False, False, False]):
        rows.append(
            {
                "item_id": f"c{i}",
                "is_error": False,
                "secondary_category": None,
                "primary_category": None,
                "detection": det,
            }
        )
    frame = pd.DataFrame(rows)
    for label in JUDGE_LABELS[1:]:
        frame[label] = frame["is_error"]  # perfect labels: F1 100 everywhere
    return frame


def test_hand_computed_overall_and_per_category():
    table = mm.f1_table(_hand_case())
    # overall: TP 4, FN 2, FP 1 -> 2*4 / (8 + 1 + 2)
    assert _row(table, "all", "All", "detection")["f1"] == pytest.approx(100 * 8 / 11)
    # Grammatical: TP 3, FN 1, FP = (1/4 control FP rate) * 4 items = 1 -> 6 / 8
    assert _row(table, "secondary", "Grammatical Errors", "detection")["f1"] == pytest.approx(75.0)
    # Entity: TP 1, FN 1, FP = 0.25 * 2 = 0.5 -> 2 / 3.5
    assert _row(table, "secondary", "Entity Error", "detection")["f1"] == pytest.approx(
        100 * 2 / 3.5
    )
    # primary levels: Language = Grammatical here, Factual = Entity
    assert _row(table, "primary", "Language Errors", "detection")["f1"] == pytest.approx(75.0)
    assert _row(table, "all", "All", "guidance")["f1"] == pytest.approx(100.0)
    # average = mean of the six label F1s
    assert _row(table, "all", "All", "average")["f1"] == pytest.approx((100 * 8 / 11 + 500) / 6)
    assert list(table.columns) == mm.COLUMNS


def test_overall_matches_sklearn_f1_score():
    frame = random_verdicts(300, 280, seed=3)
    table = mm.f1_table(frame)
    for label in JUDGE_LABELS:
        expected = 100 * f1_score(frame["is_error"], frame[label])
        assert _row(table, "all", "All", label)["f1"] == pytest.approx(expected)
    expected_avg = np.mean([100 * f1_score(frame["is_error"], frame[lb]) for lb in JUDGE_LABELS])
    assert _row(table, "all", "All", "average")["f1"] == pytest.approx(expected_avg)


@pytest.mark.parametrize(
    "level,column", [("secondary", "secondary_category"), ("primary", "primary_category")]
)
def test_per_category_matches_sklearn_with_controls_weighted_to_category_size(level, column):
    # SPEC §1: FP_c = control FP rate × N_c  <=>  controls weighted N_c / n_controls in sklearn.
    frame = random_verdicts(420, 150, seed=11)
    table = mm.f1_table(frame)
    controls = frame[~frame["is_error"]]
    for category, sub in frame[frame["is_error"]].groupby(column):
        both = pd.concat([sub, controls])
        weight = np.where(both["is_error"], 1.0, len(sub) / len(controls))
        for label in JUDGE_LABELS:
            expected = 100 * f1_score(both["is_error"], both[label], sample_weight=weight)
            assert _row(table, level, category, label)["f1"] == pytest.approx(expected)


def test_without_controls_recall_is_reported_and_named_recall():
    frame = random_verdicts(200, 0, seed=5)
    table = mm.f1_table(frame)
    assert not table["metric"].isin(mm.METRICS).any(), "recall must never be called F1"
    for label in JUDGE_LABELS:
        row = _row(table, "all", "All", label + "_recall")
        assert row["f1"] == pytest.approx(
            100 * recall_score(frame["is_error"] | True, frame[label])
        )
    assert set(table["metric"]) == {m + "_recall" for m in mm.METRICS}


def test_missing_labels_are_left_out_of_that_label_only():
    frame = _hand_case()
    frame["guidance"] = frame["guidance"].astype("boolean")
    frame.loc[frame["item_id"] == "e0", "guidance"] = pd.NA
    table = mm.f1_table(frame)
    assert _row(table, "all", "All", "guidance")["f1"] == pytest.approx(100.0)  # 5 TP, 0 FP/FN
    assert _row(table, "all", "All", "detection")["f1"] == pytest.approx(100 * 8 / 11)


def test_bootstrap_is_reproducible_and_brackets_the_estimate():
    frame = random_verdicts(400, 400, seed=2)
    patterns = mm.pattern_counts(frame)
    a = mm.bootstrap_ci(patterns, draws=500, seed=7)
    b = mm.bootstrap_ci(patterns, draws=500, seed=7)
    c = mm.bootstrap_ci(patterns, draws=500, seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["ci_low"], c["ci_low"])
    merged = mm.f1_from_patterns(patterns).merge(a, on=mm.COLUMNS[:-1])
    assert len(merged) == len(a)
    assert (merged["ci_low"] <= merged["f1"] + 1e-9).all()
    assert (merged["ci_high"] >= merged["f1"] - 1e-9).all()


def test_pattern_bootstrap_agrees_with_naive_item_resampling():
    """The multinomial-over-patterns draw is an item bootstrap: compare with resampling rows."""
    frame = random_verdicts(500, 500, seed=4)
    cis = mm.bootstrap_ci(mm.pattern_counts(frame), draws=2000, seed=1)
    ours = cis[(cis["category_level"] == "all") & (cis["metric"] == "detection")].iloc[0]
    rng = np.random.default_rng(99)
    err, ctrl = frame[frame["is_error"]], frame[~frame["is_error"]]
    values = []
    for _ in range(2000):
        e = err["detection"].to_numpy()[rng.integers(0, len(err), len(err))]
        c = ctrl["detection"].to_numpy()[rng.integers(0, len(ctrl), len(ctrl))]
        tp, fn, fp = e.sum(), (~e).sum(), c.sum()
        values.append(200 * tp / (2 * tp + fp + fn))
    lo, hi = np.percentile(values, [2.5, 97.5])
    assert ours["ci_low"] == pytest.approx(lo, abs=0.8)
    assert ours["ci_high"] == pytest.approx(hi, abs=0.8)


def test_run_metrics_from_database_match_pure_function(store):
    frame = random_verdicts(140, 140, seed=6)
    status = ["failed" if i % 20 == 0 else "ok" for i in range(len(frame))]
    # one inconsistent verdict: accurate without attempt
    frame.loc[1, ["identification_accurate", "identification_attempt"]] = [True, False]
    insert_run(store, "run-a", frame, status=status)
    ok = frame[[s == "ok" for s in status]]
    expected = mm.f1_table(
        ok.assign(source="run-a", model="test-model", setting="zero-shot", evaluator="judge")
    )
    got = mm.run_metrics(store, ["run-a"], draws=200)
    merged = expected.merge(got, on=mm.COLUMNS[:-1], suffixes=("_exp", "_got"))
    assert len(merged) == len(expected) == len(got)
    assert np.allclose(merged["f1_exp"], merged["f1_got"])
    fast = mm.run_metrics(store, ["run-a"], ci=False)
    assert np.allclose(fast["f1"], got["f1"])
    diag = mm.run_diagnostics(store, ["run-a"]).iloc[0]
    assert diag["verdicts_failed"] == status.count("failed")
    assert diag["verdicts_ok"] == status.count("ok")
    expected_incons = int(mm.inconsistent_mask(ok).sum())
    assert expected_incons >= 1 and diag["inconsistent"] == expected_incons
    # counted, not fixed: the stored labels are unchanged
    stored = store.scalar(
        "SELECT identification_accurate AND NOT identification_attempt "
        "FROM misprompt_verdicts WHERE run_id = 'run-a' AND item_id = ?",
        [frame.loc[1, "item_id"]],
    )
    assert stored is True


def test_human_rows_use_strict_majority_of_annotators(store):
    frame = random_verdicts(40, 40, seed=8)
    insert_run(store, "run-h", frame)
    rng = np.random.default_rng(0)
    rows, majority = [], {}
    for item in frame["item_id"][::2]:  # half the responses are labelled
        for label in JUDGE_LABELS:
            votes = rng.random(3) < 0.5
            majority[(item, label)] = votes.sum() >= 2
            rows += [
                {"item_id": item, "annotator": f"ann{k}", "label": label, "value": bool(v)}
                for k, v in enumerate(votes)
            ]
    insert_human_labels(store, "run-h", pd.DataFrame(rows))
    table = mm.run_metrics(store, ["run-h"], ci=False)
    labelled = frame[frame["item_id"].isin(frame["item_id"][::2])]
    for label in JUDGE_LABELS:
        y_pred = [majority[(i, label)] for i in labelled["item_id"]]
        expected = 100 * f1_score(labelled["is_error"], y_pred)
        assert _row(table, "all", "All", label, "human")["f1"] == pytest.approx(expected)


def test_human_tie_counts_as_false(store):
    frame = random_verdicts(2, 2, seed=1)
    insert_run(store, "run-t", frame)
    rows = []
    for item in frame["item_id"]:
        for label in JUDGE_LABELS:
            rows += [
                {"item_id": item, "annotator": "a", "label": label, "value": True},
                {"item_id": item, "annotator": "b", "label": label, "value": False},
            ]
    insert_human_labels(store, "run-t", pd.DataFrame(rows))
    table = mm.run_metrics(store, ["run-t"], ci=False)
    # every label false on every item: no TP -> F1 0 (not undefined: FN > 0)
    assert _row(table, "all", "All", "detection", "human")["f1"] == 0.0


def _with_mode(columns: list[str]) -> list[str]:
    out = list(columns)
    out.insert(out.index("setting") + 1, "mode")
    return out


def _cli(*args: str, db) -> Done:
    return run_core("metrics", "misprompt", "--db", str(db), *args)


def test_cli_published_prints_the_csv_values_exactly(initialised_store):
    out = _cli("--source", "published", db=initialised_store.path)
    assert out.returncode == 0, out.stderr
    # the printed columns: OUTPUT_COLUMNS with `mode` after `setting` (the papers' tables:
    # proactive); the tables give no n and no interval, their judging is 'published'
    assert out.stdout.splitlines()[0] == ",".join(_with_mode(mm.OUTPUT_COLUMNS))
    printed = pd.read_csv(io.StringIO(out.stdout), dtype=str)
    raw = pd.read_csv(PUBLISHED_DIR / "misprompt_f1.csv", dtype=str)
    assert len(printed) == len(raw)
    assert list(printed["f1"]) == list(raw["f1_percent"])  # same text, same order
    assert list(printed["source"]) == ["misprompt:T" + t for t in raw["table"]]
    assert set(printed["setting"]) == {"zero-shot", "one-shot", "three-shot", "cot", "sft"}
    assert set(printed["evaluator"]) == {"judge", "human"}
    # the example: Claude-3.5 zero-shot average 50.83
    claude = printed[
        (printed["model"] == "Claude-3.5")
        & (printed["setting"] == "zero-shot")
        & (printed["metric"] == "average")
        & (printed["source"] == "misprompt:T3")
    ]
    assert list(claude["f1"]) == ["50.83"]
    assert printed[["n", "ci_low", "ci_high"]].isna().all().all()
    assert set(printed["judging"]) == {"published"}


def test_cli_unknown_source_lists_known_ones(initialised_store):
    insert_run(initialised_store, "my-run", random_verdicts(5, 5))
    out = _cli("--source", "nope", db=initialised_store.path)
    assert out.returncode == 2
    assert "unknown source 'nope'" in out.stderr
    assert "published" in out.stderr and "my-run" in out.stderr and "misprompt:T6" in out.stderr


def test_cli_run_source_csv_and_json(store):
    frame = random_verdicts(60, 60, seed=9)
    insert_run(store, "cli-run", frame)
    csv_out = _cli("--source", "cli-run", "--bootstrap", "200", db=store.path)
    assert csv_out.returncode == 0, csv_out.stderr
    printed = pd.read_csv(io.StringIO(csv_out.stdout))
    assert list(printed.columns) == _with_mode(mm.OUTPUT_COLUMNS)
    assert set(printed["mode"]) == {"proactive"}
    det = printed[(printed["category"] == "All") & (printed["metric"] == "detection")].iloc[0]
    assert det["f1"] == pytest.approx(
        100 * f1_score(frame["is_error"], frame["detection"]), abs=0.005
    )
    assert det["ci_low"] <= det["f1"] <= det["ci_high"]
    assert det["n"] == int(frame["is_error"].sum())  # the erroneous items of the cell
    assert set(printed["judging"]) == {"default"}  # the run's own judging (no template stored)
    assert "inconsistent" in csv_out.stderr and "failed" in csv_out.stderr
    json_out = _cli("--source", "cli-run", "--format", "json", "--bootstrap", "50", db=store.path)
    records = json.loads(json_out.stdout)
    assert set(records[0]) == set(mm.OUTPUT_COLUMNS) | {"mode"}
    assert len(records) == len(printed)


def test_cli_run_without_controls_says_recall(store):
    insert_run(store, "no-ctrl", random_verdicts(30, 0, seed=1))
    out = _cli("--source", "no-ctrl", "--bootstrap", "50", db=store.path)
    assert out.returncode == 0
    printed = pd.read_csv(io.StringIO(out.stdout))
    assert printed["metric"].str.endswith("_recall").all()
    assert "precision is unavailable" in out.stderr


def test_metrics_of_a_real_run_through_the_runner(initialised_store):
    """A run made by `python -m core run misprompt` against the scripted server is scored."""
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        run = run_core(
            "run", "misprompt", "--db", str(initialised_store.path), "--items",
            "misprompt-sample", "--base-url", server.url, "--model", "fake-model",
            "--limit", "8", "--run-name", "e2e-run",
        )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    verdicts = initialised_store.df("""
        SELECT i.is_error, i.primary_category, i.secondary_category, v.*
        FROM misprompt_verdicts v JOIN runs r USING (run_id)
        JOIN items i ON i.item_set = r.item_set AND i.item_id = v.item_id
        WHERE v.run_id = 'e2e-run' AND v.status = 'ok'""")
    assert len(verdicts) > 0
    out = _cli("--source", "e2e-run", "--bootstrap", "100", db=initialised_store.path)
    assert out.returncode == 0, out.stderr
    printed = pd.read_csv(io.StringIO(out.stdout))
    expected = mm.f1_table(verdicts)
    suffix = "" if (~verdicts["is_error"]).any() else "_recall"
    det = printed[(printed["category"] == "All") & (printed["metric"] == "detection" + suffix)]
    exp = expected[(expected["category"] == "All") & (expected["metric"] == "detection" + suffix)]
    assert det["f1"].iloc[0] == pytest.approx(exp["f1"].iloc[0], abs=0.005)
    assert set(printed["source"]) == {"e2e-run"}


def test_bootstrap_of_level_all_only_matches_the_full_run():
    patterns = mm.pattern_counts(random_verdicts(300, 300, seed=12))
    full = mm.bootstrap_ci(patterns, draws=300, seed=3)
    only = mm.bootstrap_ci(patterns, draws=300, seed=3, levels=("all",))
    assert set(only["category_level"]) == {"all"}
    pd.testing.assert_frame_equal(
        full[full["category_level"] == "all"].reset_index(drop=True), only
    )


def test_one_pass_f1_and_diagnostics_equal_the_separate_queries(store):
    frame = random_verdicts(70, 70, seed=21)
    status = ["failed" if i % 9 == 0 else "ok" for i in range(len(frame))]
    insert_run(store, "one-pass", frame, status=status)
    insert_run(store, "other", random_verdicts(30, 0, seed=2))
    f1, diag = mm.f1_and_diagnostics(store)
    separate = mm.f1_in_database(store)
    pd.testing.assert_frame_equal(f1.reset_index(drop=True), separate.reset_index(drop=True))
    d = diag.set_index("run_id")
    ref = mm.run_diagnostics(store).set_index("run_id")
    for col in (
        "verdicts_ok",
        "verdicts_failed",
        "inconsistent",
        "n_error",
        "n_control",
        "responses_failed",
    ):
        assert list(d[col]) == list(ref[col]), col
    assert d.loc["one-pass", "verdicts_failed"] == status.count("failed")
    assert d.loc["other", "n_control"] == 0


def test_playground_exchanges_stay_out_of_the_f1_tables(store):
    insert_run(store, "eval-run", random_verdicts(20, 20, seed=1))
    insert_run(store, "demo", random_verdicts(20, 20, seed=2), item_set="set-eval-run")
    store.execute("UPDATE runs SET kind = 'playground' WHERE run_id = 'demo'")
    f1, diag = mm.f1_and_diagnostics(store)
    assert set(f1["source"]) == {"eval-run"} and set(diag["run_id"]) == {"eval-run"}
    assert "demo" not in mm.known_sources(store)
    assert set(mm.patterns(store)["source"]) == {"eval-run"}


# ----------------------------------------------------------------------------------------------
# run_counts: cached judge counts of finished runs (schema v2)
# ----------------------------------------------------------------------------------------------


def _page_data(store, **kw):
    f1, diag = mm.f1_and_diagnostics(store, **kw)
    return f1.reset_index(drop=True), diag.reset_index(drop=True)


def _assert_same(a, b) -> None:
    pd.testing.assert_frame_equal(a[0], b[0], check_exact=True)
    pd.testing.assert_frame_equal(a[1], b[1], check_exact=True)


def _cached_runs(store) -> set[str]:
    return {r[0] for r in store.rows("SELECT source FROM run_counts WHERE status IS NULL")}


def test_cached_counts_give_identical_f1_and_diagnostics(store):
    from core.benchmarks.misprompt.synth import SynthSpec, fill

    fill(
        store, SynthSpec(n_verdicts=4000, n_models=2, settings=("zero-shot", "cot"), failed_every=7)
    )
    frame = random_verdicts(60, 60, seed=5)
    live_status = ["failed" if i % 5 == 0 else "ok" for i in range(len(frame))]
    insert_run(store, "live", frame, status=live_status)
    store.execute("UPDATE runs SET status = 'running' WHERE run_id = 'live'")
    store.execute(
        "INSERT INTO runs (run_id, benchmark, item_set, model, setting, status) "
        "VALUES ('empty', 'misprompt', 'synthetic', 'm', 'sft', 'done')"
    )  # no verdicts
    insert_human_labels(
        store,
        "synthetic-m0-cot",
        pd.DataFrame(
            [
                {"item_id": f"syn-{i:07d}", "annotator": a, "label": lb, "value": (i + j) % 3 == 0}
                for i in range(40)
                for a in ("ann1", "ann2")
                for j, lb in enumerate(JUDGE_LABELS)
            ]
        ),
        variant="cot",
    )
    uncached = _page_data(store, use_cache=False)
    assert _cached_runs(store) == set()
    filling = _page_data(store)
    done = {r[0] for r in store.rows("SELECT run_id FROM runs WHERE status = 'done'")}
    assert _cached_runs(store) == done and "live" not in done and "empty" in done
    served = _page_data(store)
    _assert_same(filling, uncached)
    _assert_same(served, uncached)
    assert set(uncached[0]["evaluator"]) == {"judge", "human"}
    assert uncached[1].set_index("run_id").loc["live", "verdicts_failed"] == live_status.count(
        "failed"
    )
    # a subset of runs: same rows as the uncached subset
    _assert_same(
        _page_data(store, run_ids=["synthetic-m1-cot", "live"]),
        _page_data(store, run_ids=["synthetic-m1-cot", "live"], use_cache=False),
    )

    # served from the cache: verdicts changed behind the runner's back (updated_at untouched)
    # do not show for a cached run until its fingerprint changes
    store.execute("DELETE FROM results WHERE run_id = 'synthetic-m0-zero-shot'")
    _assert_same(_page_data(store), uncached)
    assert not _page_data(store, use_cache=False)[0].equals(uncached[0])
    store.execute(
        "UPDATE runs SET updated_at = current_timestamp WHERE run_id = 'synthetic-m0-zero-shot'"
    )
    _assert_same(_page_data(store), _page_data(store, use_cache=False))


def test_a_running_run_is_never_served_from_the_cache(store):
    insert_run(store, "busy", random_verdicts(40, 40, seed=8))
    store.execute("UPDATE runs SET status = 'running' WHERE run_id = 'busy'")
    first = _page_data(store)
    assert _cached_runs(store) == set()
    assert store.scalar("SELECT count(*) FROM run_counts") == 0
    # a stale cache row for it (as if written while it was done) is ignored too
    store.execute("""INSERT INTO run_counts (source, evaluator, counts, n, fingerprint)
                     SELECT run_id, 'judge', json_object('n_inconsistent', 0), 0,
                            coalesce(status, '') || '|' || CAST(updated_at AS VARCHAR) || '|'
                     FROM runs""")
    # verdicts written without touching updated_at still show at once
    store.execute(
        "UPDATE results SET labels = json_merge_patch(labels, json_object('detection', "
        "NOT TRY_CAST(labels->>'detection' AS BOOLEAN))) WHERE run_id = 'busy'"
    )
    after = _page_data(store)
    _assert_same(after, _page_data(store, use_cache=False))
    assert not after[0].equals(first[0])


def test_a_reader_that_cannot_write_the_cache_still_answers(store):
    import contextlib

    import duckdb

    from core.store import Store

    class ReadOnlyStore(Store):
        @contextlib.contextmanager
        def connect(self):
            con = duckdb.connect(str(self.path), read_only=True)
            try:
                yield con
            finally:
                con.close()

    insert_run(store, "r", random_verdicts(30, 30, seed=4))
    reader = ReadOnlyStore(path=store.path, _migrated=True)
    _assert_same(_page_data(reader), _page_data(store, use_cache=False))
    assert _cached_runs(store) == set()


def test_cache_write_is_skipped_while_another_thread_writes(store):
    insert_run(store, "r", random_verdicts(30, 30, seed=9))
    from core.store import _write_lock

    lock = _write_lock(store.path)
    with lock:  # another thread of this process is writing: the reader skips caching
        import threading

        out: list = []
        t = threading.Thread(target=lambda: out.append(_page_data(store)))
        t.start()
        t.join(60)
    assert out and _cached_runs(store) == set()
    _assert_same(out[0], _page_data(store, use_cache=False))
    _page_data(store)
    assert _cached_runs(store) == {"r"}


def test_resumed_run_invalidates_its_cached_counts(store):
    from core.benchmarks.misprompt import items as mi
    from tests.fake_openai import FakeOpenAI
    from tests.test_misprompt_run import Script, _subset

    data, rows = _subset(6, 4)
    mi.import_bytes(store, data, "small.csv", "small")
    # 1) the first 5 items only: a finished run ('done'), cached by the first page load
    with FakeOpenAI(responder=Script(rows).respond) as server:
        first = run_misprompt(
            store.path, server.url, "--items", "small", "--run-name", "rc", "--limit", "5"
        )
        port = server.port
    assert first.returncode == 0, first.stderr
    assert store.scalar("SELECT status FROM runs") == "done"
    before = _page_data(store)
    assert _cached_runs(store) == {"rc"} and before[1].loc[0, "verdicts_ok"] == 5
    fp_before = store.scalar("SELECT fingerprint FROM run_counts WHERE status IS NULL")

    # 2) resumed over all items: 'done' again, only updated_at tells the cache it is stale
    with FakeOpenAI(responder=Script(rows).respond, port=port) as server:
        again = run_misprompt(store.path, server.url, "--items", "small", "--run-name", "rc")
        assert again.returncode == 0, again.stderr
    assert store.scalar("SELECT status FROM runs") == "done"
    after = _page_data(store)
    _assert_same(after, _page_data(store, use_cache=False))
    assert after[1].loc[0, "verdicts_ok"] == len(rows)
    assert not after[0].equals(before[0])
    fp_after = store.rows("SELECT DISTINCT fingerprint FROM run_counts WHERE source = 'rc'")
    assert len(fp_after) == 1 and fp_after[0][0] != fp_before
    assert fp_after[0][0].split("|")[0] == fp_before.split("|")[0] == "done"
    _assert_same(_page_data(store), after)  # served from the refreshed cache


def test_warm_loads_reuse_the_f1_table_until_a_run_changes(store, monkeypatch):
    """Every run served from run_counts and no human labels: the F1 statement (mostly DuckDB
    planning) runs once; the next load reuses its rows, identical to a live count, and any
    change to a run (fingerprint, model, setting) computes it again."""
    from core.benchmarks.misprompt import f1_sql
    from core.benchmarks.misprompt.synth import SynthSpec, fill

    monkeypatch.setattr(f1_sql, "_F1_MEMO", {})  # where the memo lives
    fill(store, SynthSpec(n_verdicts=2000, n_models=2, settings=("zero-shot", "cot")))
    _page_data(store)  # fills run_counts
    statements: list[str] = []
    real_f1_sql = f1_sql._f1_sql

    def counted_f1_sql(*a: Any) -> Any:
        statements.append("f1")
        return real_f1_sql(*a)

    monkeypatch.setattr(f1_sql, "_f1_sql", counted_f1_sql)
    warm = _page_data(store)
    again = _page_data(store)
    assert statements == ["f1"]  # the second warm load did not run the F1 statement
    _assert_same(again, warm)
    _assert_same(again, _page_data(store, use_cache=False))

    store.execute("UPDATE runs SET model = 'renamed' WHERE run_id = 'synthetic-m0-cot'")
    renamed = _page_data(store)
    assert "renamed" in set(renamed[0]["model"])
    _assert_same(renamed, _page_data(store, use_cache=False))

    store.execute(
        "DELETE FROM results WHERE run_id = 'synthetic-m1-cot' AND item_id < 'syn-0000200'"
    )
    store.execute(
        "UPDATE runs SET updated_at = current_timestamp WHERE run_id = 'synthetic-m1-cot'"
    )
    changed = _page_data(store)  # counted live, cached again
    _assert_same(changed, _page_data(store, use_cache=False))
    assert not changed[0].equals(renamed[0])
    _assert_same(_page_data(store), changed)  # all runs cached again: F1 computed, kept
    n = len(statements)
    _assert_same(_page_data(store), changed)
    assert len(statements) == n  # served from the memo again


# -- the page's cell intervals, kept per finished run (issue 20, 5b) ---------------------------


def _intervals(store, runs, draws=200):
    from core.benchmarks.misprompt import queries

    cells = queries.run_cells(store, tuple(runs), draws=draws)
    keys = ["source", "evaluator", "category_level", "category", "metric"]
    return cells.sort_values(keys).reset_index(drop=True)[[*keys, "f1", "ci_low", "ci_high"]]


def _stored_intervals(store) -> dict[str, str]:
    return dict(store.rows("SELECT source, fingerprint FROM run_counts WHERE status = 'intervals'"))


def _drawn_alone(store, run, draws=200) -> pd.DataFrame:
    """The reference: bootstrap_ci over this run's patterns alone, seed 0."""
    ci = mm.bootstrap_ci(mm.patterns(store, [run]), draws=draws, seed=0)
    return ci.set_index(["evaluator", "category_level", "category", "metric"])


def test_kept_intervals_equal_the_drawn_ones_bit_for_bit(store):
    from core.benchmarks.misprompt.synth import SynthSpec, fill

    fill(store, SynthSpec(n_verdicts=3000, n_models=3, settings=("zero-shot",), failed_every=9))
    runs = [r[0] for r in store.rows("SELECT run_id FROM runs ORDER BY run_id")]
    assert _stored_intervals(store) == {}
    drawn = _intervals(store, runs)  # draws every run, keeps them
    assert set(_stored_intervals(store)) == set(runs)
    served = _intervals(store, runs)  # read back
    pd.testing.assert_frame_equal(served, drawn, check_exact=True)
    assert drawn["ci_low"].notna().all()
    for run in runs:
        ref = _drawn_alone(store, run)
        mine = served[served["source"] == run].set_index(list(ref.index.names))
        for col in ("ci_low", "ci_high"):
            assert (mine[col] == ref.loc[mine.index, col]).all()
    # the counts cache still serves exactly the live counts beside the interval rows
    _assert_same(_page_data(store), _page_data(store, use_cache=False))


def test_a_runs_interval_does_not_depend_on_the_other_runs_shown(store):
    insert_run(store, "b-run", random_verdicts(50, 40, seed=3))
    insert_run(store, "a-run", random_verdicts(60, 30, seed=4))
    alone = _intervals(store, ["b-run"])
    store.execute("DELETE FROM run_counts")
    both = _intervals(store, ["a-run", "b-run"])
    pd.testing.assert_frame_equal(
        both[both["source"] == "b-run"].reset_index(drop=True), alone, check_exact=True
    )


def test_intervals_kept_by_an_older_method_are_drawn_again(store):
    """Intervals kept before issue 29's exact labels (no `method` in the kept row) are not
    served: the run's cells are drawn again and kept with the method."""
    insert_run(store, "old", random_verdicts(30, 20, seed=8))
    fresh = _intervals(store, ["old"])
    store.execute(
        "UPDATE run_counts SET counts = json_object('draws', 200, 'seed', 0, 'rows', "
        "json_array(json_array('all', 'All', 'detection', 1.0, 2.0))) "
        "WHERE status = 'intervals'"
    )
    again = _intervals(store, ["old"])
    pd.testing.assert_frame_equal(again, fresh, check_exact=True)
    kept = store.rows(
        "SELECT json_extract_string(counts, '$.method') FROM run_counts WHERE status = 'intervals'"
    )
    assert kept == [("exact-average-2",)]


def test_a_changed_or_running_run_is_never_served_kept_intervals(store):
    insert_run(store, "r1", random_verdicts(60, 40, seed=6))
    first = _intervals(store, ["r1"])
    fp = _stored_intervals(store)["r1"]
    # verdicts rewritten and the run resumed: its fingerprint changes, its intervals are drawn
    store.execute(
        "UPDATE results SET labels = json_merge_patch(labels, json_object('detection', "
        "NOT TRY_CAST(labels->>'detection' AS BOOLEAN))) WHERE run_id = 'r1'"
    )
    store.execute("UPDATE runs SET updated_at = current_timestamp + INTERVAL 1 SECOND")
    changed = _intervals(store, ["r1"])
    assert not changed["ci_low"].equals(first["ci_low"])
    ref = _drawn_alone(store, "r1")
    mine = changed.set_index(list(ref.index.names))
    assert (mine["ci_low"] == ref.loc[mine.index, "ci_low"]).all()
    assert _stored_intervals(store)["r1"] != fp  # replaced, not added
    assert store.scalar("SELECT count(*) FROM run_counts WHERE status = 'intervals'") == 1
    # running: drawn live every time, never kept, a kept row for it is ignored
    store.execute("UPDATE runs SET status = 'running'")
    store.execute(
        "UPDATE results SET labels = json_merge_patch(labels, json_object('guidance', "
        "NOT TRY_CAST(labels->>'guidance' AS BOOLEAN))) WHERE run_id = 'r1'"
    )
    live = _intervals(store, ["r1"])
    mine = live.set_index(list(ref.index.names))
    ref = _drawn_alone(store, "r1")
    assert (mine["ci_high"] == ref.loc[mine.index, "ci_high"]).all()
    assert not live["ci_high"].equals(changed["ci_high"])


def test_a_finished_run_keeps_its_page_intervals_where_it_finishes(store, monkeypatch):
    """The task's after_run draws the page's intervals when the run ends: the first page
    visit reads them (no bootstrap), identical to drawing them then."""
    from core.benchmarks.misprompt import items as mi
    from tests.fake_openai import FakeOpenAI
    from tests.test_misprompt_run import Script, _subset

    data, rows = _subset(6, 4)
    mi.import_bytes(store, data, "small.csv", "small")
    with FakeOpenAI(responder=Script(rows).respond) as server:
        done = run_misprompt(store.path, server.url, "--items", "small", "--run-name", "fin")
    assert done.returncode == 0, done.stderr
    kept = _stored_intervals(store)
    fp = store.rows(mm._fingerprint_sql(" AND r.run_id = 'fin'"))[0][1]
    assert kept == {"fin": fp}
    from core.benchmarks.misprompt import queries

    calls: list = []
    real = mm.bootstrap_ci

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(mm, "bootstrap_ci", counted)
    served = _intervals(store, ["fin"], draws=queries.PAGE_BOOTSTRAP)
    assert calls == []  # read, not drawn
    ref = _drawn_alone(store, "fin", draws=queries.PAGE_BOOTSTRAP)
    mine = served.set_index(list(ref.index.names))
    for col in ("ci_low", "ci_high"):
        assert (mine[col].fillna(-1) == ref.loc[mine.index, col].fillna(-1)).all()


def test_synthetic_runs_can_be_finished_as_the_runner_does(store):
    from core.benchmarks.misprompt.synth import SynthSpec, fill

    fill(store, SynthSpec(n_verdicts=600, n_models=2, settings=("cot",), after_run=True))
    runs = {r[0] for r in store.rows("SELECT run_id FROM runs")}
    assert set(_stored_intervals(store)) == runs


# -- items that share a source: the item set's `group` column (issue 18) ----------------------


def _grouped_verdicts(seed: int = 11) -> pd.DataFrame:
    """40 groups of 5 erroneous items whose detection moves together, and 120 controls
    without a group."""
    frame = random_verdicts(200, 120, seed=seed)
    rng = np.random.default_rng(seed)
    groups = np.array([f"src-{i // 5:02d}" if i < 200 else None for i in range(320)], dtype=object)
    found = rng.random(40) < 0.6
    frame.loc[:199, "detection"] = found[np.arange(200) // 5]
    frame["group"] = groups
    return frame


def _loop_detection_ci(frame: pd.DataFrame, draws: int, seed: int) -> tuple[float, float]:
    """Plain cluster bootstrap of the overall detection F1: erroneous groups and control items
    resampled apart (as the metrics do: controls are a stratum of their own), one draw at a
    time, counted item by item."""
    rng = np.random.default_rng(seed)
    err = frame[frame["is_error"]]
    ctrl = frame[~frame["is_error"]]["detection"].tolist()
    units = [g["detection"].tolist() for _, g in err.groupby("group")]
    values = []
    for _ in range(draws):
        tp = fn = fp = 0
        for u in rng.integers(0, len(units), len(units)):
            tp += sum(units[u])
            fn += len(units[u]) - sum(units[u])
        for c in rng.integers(0, len(ctrl), len(ctrl)):
            fp += ctrl[c]
        values.append(200 * tp / (2 * tp + fp + fn))
    return tuple(np.percentile(values, [2.5, 97.5]))


def test_a_grouped_item_set_gets_a_cluster_bootstrap(store):
    frame = _grouped_verdicts()
    insert_run(store, "grouped", frame)
    insert_run(store, "ungrouped", frame.drop(columns="group"))
    rows = mm.run_metrics(store, ["grouped", "ungrouped"], draws=20_000, seed=0)
    det = rows[
        (rows["evaluator"] == "judge")
        & (rows["category"] == "All")
        & (rows["metric"] == "detection")
    ].set_index("source")
    ref = _loop_detection_ci(frame, 4000, 1)
    assert (det.loc["grouped", "ci_low"], det.loc["grouped", "ci_high"]) == pytest.approx(
        ref, abs=1.2
    )
    width = det["ci_high"] - det["ci_low"]
    assert width["grouped"] > 1.5 * width["ungrouped"]  # groups of 5 that move together
    assert det["f1"]["grouped"] == det["f1"]["ungrouped"]  # the value is the same


def test_import_keeps_an_optional_group_column(store, tmp_path):
    path = tmp_path / "items.csv"
    path.write_text(
        "id,question,error,secondary_category,gold_answer,group\n"
        "a,Q1?,error,Spelling Errors,A1,essay-1\n"
        "b,Q2?,error,Spelling Errors,A2,essay-1\n"
        "c,Q3?,no_error,,,\n"
    )
    done = run_core("import", "misprompt", str(path), "--name", "g", "--db", str(store.path))
    assert done.returncode == 0, done.stderr
    got = store.rows(
        "SELECT item_id, json_extract_string(payload, '$.group') FROM items "
        "WHERE item_set = 'g' ORDER BY item_id"
    )
    assert got == [("a", "essay-1"), ("b", "essay-1"), ("c", None)]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "a", "question": "Q?", "error": "no_error", "group": [1]}]))
    done = run_core("import", "misprompt", str(bad), "--name", "g2", "--db", str(store.path))
    assert done.returncode != 0 and "group must be a string or an integer" in done.stderr


# -- the vectorised bootstrap (issue 20, 5b) against the per-group version it replaced ----------


def _trinomial(found: int, other: int, missing: int) -> tuple[np.ndarray, np.ndarray]:
    """(found, known) of a resample of found + other + missing items, every outcome with its
    multinomial probability (scipy), enumerated: the exact bootstrap distribution of a label."""
    from scipy.stats import multinomial

    n = found + other + missing
    a, b = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    ok = a + b <= n
    a, b = a[ok], b[ok]
    probs = multinomial.pmf(
        np.column_stack([a, b, n - a - b]), n, [found / n, other / n, missing / n]
    )
    return np.column_stack([a, a + b]).astype(float), np.nan_to_num(probs)


def _reference_bootstrap(
    patterns: pd.DataFrame, draws: int, seed: int, average_draws: int | None = None
) -> pd.DataFrame:
    """The bootstrap as first written (a pandas groupby per run and per category), with issue
    29's two readings: a label's interval from its exact distribution (scipy's multinomial
    over found / not found / no label, enumerated; numpy's weighted inverse-CDF quantile), the
    average's sampled — `average_draws` draws per cell when given (a large-sample reference
    for bootstrap_ci's exact or adaptively drawn average)."""

    def matrix(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        labels = list(mm.LABELS)
        merged = frame.groupby(labels, dropna=False, sort=False)["n"].sum().reset_index()
        vals = merged[labels].astype("boolean")
        pos = vals.fillna(False).to_numpy(dtype=bool).astype(float)
        known = vals.notna().to_numpy(dtype=bool).astype(float)
        return merged["n"].to_numpy(dtype=np.int64), pos, known

    def kinds(counts: np.ndarray, pos: np.ndarray, known: np.ndarray, j: int) -> tuple:
        found = int(counts @ pos[:, j])
        return found, int(counts @ known[:, j]) - found, int(counts.sum() - counts @ known[:, j])

    def quantiles(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
        ok = np.isfinite(values) & (weights > 0)
        if not ok.any():  # undefined in every resample (no item with the label known)
            return float("nan"), float("nan")
        q = np.quantile(values[ok], (0.025, 0.975), method="inverted_cdf", weights=weights[ok])
        return float(q[0]), float(q[1])

    rng = np.random.default_rng(seed)
    rows = []
    base_draws = draws
    for key, group in patterns.groupby(mm.KEYS, dropna=False, sort=True):
        err = group[group["is_error"].astype(bool)]
        c_counts, c_pos, c_known = matrix(group[~group["is_error"].astype(bool)])
        has_ctrl = bool(c_counts.sum() > 0) and bool((c_known.T @ c_counts > 0).all())
        # the average's draws grow where the group's smallest cell (or its controls) is small
        sizes = [int(err["n"].sum())]
        for col in ("primary_category", "secondary_category"):
            sizes += [int(s["n"].sum()) for _, s in err.groupby(col, sort=True)]
        sizes += [int(c_counts.sum())] if has_ctrl else []
        small = min([s for s in sizes if s > 0], default=0)
        draws = average_draws or draws_for(small, base_draws, 20_000, 500)
        if has_ctrl:
            c_draw = resample(rng, c_counts, draws)
            fp_all, ctrl_known = c_draw @ c_pos, c_draw @ c_known
            rate = fp_all / ctrl_known
        for level in mm.LEVELS:
            by = {"primary": "primary_category", "secondary": "secondary_category"}.get(level)
            for cat, sub in [("All", err)] if by is None else list(err.groupby(by, sort=True)):
                counts, pos, known = matrix(sub)
                # each cell draws for its own size, reading the first of the group's control draws
                own = [int(counts.sum())] + ([int(c_counts.sum())] if has_ctrl else [])
                cell = min(draws, draws_for(min(s for s in own if s > 0), base_draws, 20_000, 500))
                cell = average_draws or cell
                e_draw = resample(rng, counts, cell)
                tp, n_err = e_draw @ pos, e_draw @ known
                fn = n_err - tp
                with np.errstate(divide="ignore", invalid="ignore"):
                    if has_ctrl:
                        fp = fp_all[:cell] if level == "all" else rate[:cell] * n_err
                        values = 200.0 * tp / (2 * tp + fp + fn)
                    else:
                        values = 100.0 * tp / n_err
                ends = []
                for j in range(len(mm.LABELS)):
                    e_atoms, e_p = _trinomial(*kinds(counts, pos, known, j))
                    hit, seen = e_atoms[:, :1], e_atoms[:, 1:]
                    with np.errstate(divide="ignore", invalid="ignore"):
                        if has_ctrl:
                            c_atoms, c_p = _trinomial(*kinds(c_counts, c_pos, c_known, j))
                            flag, c_seen = c_atoms[:, 0][None, :], c_atoms[:, 1][None, :]
                            fp_j = flag if level == "all" else flag / c_seen * seen
                            exact = 200.0 * hit / (2 * hit + fp_j + (seen - hit))
                            ends.append(quantiles(exact.ravel(), np.outer(e_p, c_p).ravel()))
                        else:
                            ends.append(quantiles((100.0 * hit / seen).ravel(), e_p))
                avg = values.mean(axis=1)
                ends.append(quantiles(avg, np.ones(len(avg))))
                for metric, (lo, hi) in zip(mm.METRICS, ends):
                    rows.append(
                        dict(zip(mm.KEYS, key))
                        | {
                            "category_level": level,
                            "category": cat,
                            "metric": metric + ("" if has_ctrl else mm.RECALL_SUFFIX),
                            "ci_low": lo,
                            "ci_high": hi,
                        }
                    )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bootstrap_equals_the_per_group_reference(seed):
    """Runs with and without controls, judge and human rows, missing labels and categories,
    rows in any order: the same intervals as the per-group pandas version — labels exact,
    the average (exact, or drawn until its ends' Monte-Carlo error is within 0.5 point) within
    1 point of 40,000 draws of the reference."""
    rng = np.random.default_rng(seed)
    frames = []
    for k, n_control in enumerate((24, 0, 12)):
        frame = random_verdicts(30 + 8 * k, n_control, seed=seed * 10 + k)
        frame = frame.assign(source=f"run{k}", model="m", setting="s")
        frame["evaluator"] = "human" if k == 2 else "judge"
        for label in mm.LABELS:
            frame[label] = frame[label].astype("boolean")
            frame.loc[rng.random(len(frame)) < 0.05 * seed, label] = pd.NA
        frame.loc[rng.random(len(frame)) < 0.05 * seed, "secondary_category"] = None
        frames.append(frame)
    patterns = mm.pattern_counts(pd.concat(frames, ignore_index=True))
    patterns = patterns.sample(frac=1, random_state=seed)  # any row order
    ours = mm.bootstrap_ci(patterns, draws=200, seed=seed)
    ref = _reference_bootstrap(patterns, 200, seed, average_draws=40_000)
    labels = ~ours["metric"].str.startswith("average")
    # labels exact: the same atoms, summed in another order (last bits)
    pd.testing.assert_frame_equal(ours[labels], ref[labels], check_exact=False, rtol=1e-9)
    for col in ("ci_low", "ci_high"):
        gap = (ours.loc[~labels, col] - ref.loc[~labels, col]).abs()
        assert (gap.fillna(0) <= 1.0).all(), ours[~labels].assign(ref=ref[col], gap=gap)
        assert (ours.loc[~labels, col].isna() == ref.loc[~labels, col].isna()).all()
