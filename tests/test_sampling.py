"""Stratified --limit samples (core/engine/sampling.py) and how runs plan, store and resume them."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pandas as pd
import pytest

from core.engine.sampling import allocate, n_controls, plan_sample, stratified_sample
from tests.core_cli import run_misprompt
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent


def _frame(sizes: dict[str, int]) -> pd.DataFrame:
    rows = [{"item_id": f"{k}-{i:03d}", "cat": k} for k, n in sizes.items() for i in range(n)]
    return pd.DataFrame(rows)


# -- allocation: hand cases -------------------------------------------------------------------


def test_allocate_hand_case_builtin_sample_shape() -> None:
    # the built-in Mis-prompt sample: 10/12/10/12 erroneous per primary category + 44 controls.
    # n=10: exact quotas 1.14, 1.36, 1.14, 1.36, 5.0 -> floors 1,1,1,1,5 (9); the one left goes
    # to the largest fraction .36, tied between the two 12s -> the first by name (Incomplete).
    sizes = {
        "Factual Errors": 10,
        "Incomplete Information": 12,
        "Language Errors": 10,
        "Logical Errors": 12,
        "control": 44,
    }
    assert allocate(sizes, 10) == {
        "Factual Errors": 1,
        "Incomplete Information": 2,
        "Language Errors": 1,
        "Logical Errors": 1,
        "control": 5,
    }
    # n=88 is everything, n=44 exactly half of each
    assert allocate(sizes, 88) == sizes
    assert allocate(sizes, 44) == {k: v // 2 for k, v in sizes.items()}


def test_allocate_gives_every_stratum_one_when_n_reaches_the_number_of_strata() -> None:
    # quotas for n=3: 0.03, 2.94, 0.03 -> largest remainder alone gives {0, 3, 0}
    assert allocate({"a": 1, "b": 98, "c": 1}, 3) == {"a": 1, "b": 1, "c": 1}
    assert allocate({"a": 1, "b": 98, "c": 1}, 4) == {"a": 1, "b": 2, "c": 1}
    # fewer items than strata: no guarantee, the largest quotas win
    assert allocate({"a": 1, "b": 98, "c": 1}, 1) == {"a": 0, "b": 1, "c": 0}
    assert allocate({"a": 5}, 0) == {"a": 0}


def test_allocation_is_within_one_of_the_exact_quota() -> None:
    """Property over random designs: |n_s − n·N_s/N| < 1 whenever every quota is ≥ 1 (the
    at-least-one rule can only move strata whose quota is below 1), sums to n, never more
    than a stratum holds."""
    rng = random.Random(7)
    checked = 0
    for _ in range(3000):
        sizes = {
            f"s{i}": rng.choice([1, 2, 3, 5, 8, 13, 40, 200]) for i in range(rng.randint(1, 7))
        }
        total = sum(sizes.values())
        n = rng.randint(1, total)
        alloc = allocate(sizes, n)
        assert sum(alloc.values()) == n
        assert all(0 <= alloc[k] <= sizes[k] for k in sizes)
        if n >= len(sizes):
            assert min(alloc.values()) >= 1
        if n * min(sizes.values()) / total >= 1:
            checked += 1
            assert all(abs(alloc[k] - n * sizes[k] / total) < 1 for k in sizes), (sizes, n)
    assert checked > 500


# -- the sample -------------------------------------------------------------------------------


def test_sample_keeps_proportions_is_seeded_and_in_frame_order() -> None:
    frame = _frame({"x": 30, "y": 60, "z": 10}).sample(frac=1, random_state=3)  # shuffled
    sample = stratified_sample(frame, 20, seed=0, strata_cols=["cat"])
    counts = sample["cat"].value_counts().to_dict()
    assert counts == {"y": 12, "x": 6, "z": 2}  # exactly 20% of each
    # same seed, same items, even from a differently ordered frame; order = the frame's order
    again = stratified_sample(frame.sort_values("item_id"), 20, seed=0, strata_cols=["cat"])
    assert set(again["item_id"]) == set(sample["item_id"])
    assert list(sample.index) == sorted(sample.index, key=list(frame.index).index)
    other = stratified_sample(frame, 20, seed=1, strata_cols=["cat"])
    assert set(other["item_id"]) != set(sample["item_id"])
    assert other["cat"].value_counts().to_dict() == counts
    # n ≥ the frame: everything; n < 1: an error
    assert len(stratified_sample(frame, 500, 0, ["cat"])) == 100
    with pytest.raises(ValueError):
        stratified_sample(frame, 0, 0, ["cat"])


def test_two_columns_and_missing_values_are_strata() -> None:
    frame = pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in range(12)],
            "task": ["a"] * 6 + ["b"] * 6,
            "flag": [True, False] * 6,
        }
    )
    sample = stratified_sample(frame, 4, 0, ["task", "flag"])
    assert sorted(zip(sample["task"], sample["flag"])) == [
        ("a", False),
        ("a", True),
        ("b", False),
        ("b", True),
    ]
    frame2 = pd.DataFrame({"item_id": ["p", "q", "r", "s"], "cat": ["a", "a", None, None]})
    assert sorted(stratified_sample(frame2, 2, 0, ["cat"])["cat"].fillna("-")) == ["-", "a"]


def test_builtin_sets_limit_10(initialised_store) -> None:
    store = initialised_store

    def items(name: str) -> pd.DataFrame:
        return store.df(
            "SELECT * EXCLUDE (item_set) FROM items WHERE item_set = ? ORDER BY rowid", [name]
        )

    mis = items("misprompt-sample")
    # the first 10 in file order were 9 Language Errors + 1 other, no control at all
    assert n_controls(mis.head(10)) == 0
    sample, plan = plan_sample(mis, "misprompt", 10, 0)
    assert plan.counts == {
        "Factual Errors": 1,
        "Incomplete Information": 2,
        "Language Errors": 1,
        "Logical Errors": 1,
        "control": 5,
    }
    assert n_controls(sample) == 5 and plan.item_ids == list(sample["item_id"])
    eb_sample, eb_plan = plan_sample(items("errorbench-sample"), "errorbench", 10, 0)
    # ErrorBench is stratified over its gold answer, the error count N
    assert set(eb_sample["gold"]) == set(items("errorbench-sample")["gold"])
    assert eb_plan.strata == ["gold"]
    bbm = items("bbm-sample")
    bbm_sample, _ = plan_sample(bbm, "bbm", 10, 0)
    strata = set(zip(bbm["primary_category"], bbm["is_error"]))
    assert set(zip(bbm_sample["primary_category"], bbm_sample["is_error"])) == strata


# -- runs: plan stored, exact resume, no-controls warning -------------------------------------


def _asked(server: FakeOpenAI, questions: dict[str, str]) -> list[str]:
    """Item ids whose question the model (not the judge) was asked."""
    ids = []
    for req in server.chat_requests:
        body = req["body"]
        if body.get("response_format"):
            continue
        text = body["messages"][-1]["content"]
        ids += [i for i, q in questions.items() if q == text]
    return ids


def test_limit_run_plans_a_stratified_sample_and_resumes_exactly(initialised_store) -> None:
    store = initialised_store
    items = store.df(
        "SELECT * EXCLUDE (item_set) FROM items WHERE item_set = 'misprompt-sample' ORDER BY rowid"
    )
    questions = dict(zip(items["item_id"], items["prompt"]))
    _sample, plan = plan_sample(items, "misprompt", 10, 0)
    with FakeOpenAI() as server:
        done = run_misprompt(
            store.path,
            server.url,
            "--items",
            "misprompt-sample",
            "--limit",
            "10",
            "--run-name",
            "s10",
        )
        assert done.returncode == 0, done.stderr
        assert "no control" not in done.stderr
        assert sorted(_asked(server, questions)) == sorted(plan.item_ids)
        port = server.port  # a resume must use the same endpoint URL
    params = json.loads(store.scalar("SELECT params FROM runs WHERE run_id = 's10'"))
    assert params["sample"]["item_ids"] == plan.item_ids
    assert (params["sample"]["n"], params["sample"]["seed"]) == (10, 0)
    assert params["sample"]["counts"]["control"] == 5
    asked = store.df("SELECT item_id FROM responses WHERE run_id = 's10'")
    assert sorted(asked["item_id"]) == sorted(plan.item_ids)

    # resume uses the STORED plan: swap two planned ids in storage, drop their responses
    # and one more, and the resumed run asks exactly those items
    other = [i for i in items["item_id"] if i not in plan.item_ids][:2]
    stored = params["sample"]
    stored["item_ids"] = plan.item_ids[:-2] + other
    params["sample"] = stored
    store.execute("UPDATE runs SET params = ? WHERE run_id = 's10'", [json.dumps(params)])
    dropped = plan.item_ids[0]
    store.execute("DELETE FROM results WHERE run_id = 's10' AND item_id = ?", [dropped])
    store.execute("DELETE FROM responses WHERE run_id = 's10' AND item_id = ?", [dropped])
    with FakeOpenAI(port=port) as server:
        again = run_misprompt(
            store.path,
            server.url,
            "--items",
            "misprompt-sample",
            "--limit",
            "10",
            "--run-name",
            "s10",
            "--no-cache",
        )
        assert again.returncode == 0, again.stderr
        assert sorted(_asked(server, questions)) == sorted([dropped] + other)
    assert store.scalar("SELECT n_planned FROM runs WHERE run_id = 's10'") == 10

    # a resume asking another sample is refused, nothing written
    n_responses = store.scalar("SELECT count(*) FROM responses WHERE run_id = 's10'")
    with FakeOpenAI(port=port) as server:
        clash = run_misprompt(
            store.path,
            server.url,
            "--items",
            "misprompt-sample",
            "--limit",
            "10",
            "--sample-seed",
            "3",
            "--run-name",
            "s10",
        )
        assert clash.returncode != 0
        assert "planned a sample of 10 items with seed 0" in clash.stderr
        smaller = run_misprompt(
            store.path,
            server.url,
            "--items",
            "misprompt-sample",
            "--limit",
            "6",
            "--run-name",
            "s10",
        )
        assert smaller.returncode != 0 and "--limit 10 --sample-seed 0" in smaller.stderr
        assert not server.chat_requests
    assert store.scalar("SELECT count(*) FROM responses WHERE run_id = 's10'") == n_responses
    assert (
        json.loads(store.scalar("SELECT params FROM runs WHERE run_id = 's10'"))["sample"][
            "item_ids"
        ]
        == plan.item_ids[:-2] + other
    )  # the plan is kept


def test_samples_are_nested_and_a_larger_limit_extends_a_run(initialised_store) -> None:
    store = initialised_store
    items = store.df(
        "SELECT * EXCLUDE (item_set) FROM items WHERE item_set = 'misprompt-sample' ORDER BY rowid"
    )
    questions = dict(zip(items["item_id"], items["prompt"]))
    ids = {n: set(plan_sample(items, "misprompt", n, 0)[1].item_ids) for n in range(1, 89)}
    # nested whenever the larger n's quotas are no smaller (largest remainder almost always)
    nested = sum(ids[n] <= ids[n + 1] for n in range(1, 88))
    assert nested >= 80 and ids[10] <= ids[20] <= ids[88]
    with FakeOpenAI() as server:
        assert (
            run_misprompt(
                store.path,
                server.url,
                "--items",
                "misprompt-sample",
                "--limit",
                "10",
                "--run-name",
                "grow",
            ).returncode
            == 0
        )
        first = sorted(_asked(server, questions))
        port = server.port
    with FakeOpenAI(port=port) as server:
        grown = run_misprompt(
            store.path,
            server.url,
            "--items",
            "misprompt-sample",
            "--limit",
            "20",
            "--run-name",
            "grow",
        )
        assert grown.returncode == 0, grown.stderr
        added = sorted(_asked(server, questions))
    assert sorted(first + added) == sorted(ids[20]) and not set(first) & set(added)
    params = json.loads(store.scalar("SELECT params FROM runs WHERE run_id = 'grow'"))
    assert params["sample"]["n"] == 20 and set(params["sample"]["item_ids"]) == ids[20]
    with FakeOpenAI(port=port) as server:  # no --limit: the whole set
        whole = run_misprompt(
            store.path, server.url, "--items", "misprompt-sample", "--run-name", "grow"
        )
        assert whole.returncode == 0, whole.stderr
        assert len(_asked(server, questions)) == 88 - 20
    assert store.scalar("SELECT count(*) FROM responses WHERE run_id = 'grow'") == 88


def test_legacy_limited_run_resumes_with_its_first_items(initialised_store) -> None:
    """A run from before stratified sampling (params.limit, no params.sample) planned the first N
    items in file order: resuming it asks what is missing of those."""
    store = initialised_store
    items = store.df(
        "SELECT item_id, prompt FROM items WHERE item_set = 'misprompt-sample' ORDER BY rowid"
    )
    questions = dict(zip(items["item_id"], items["prompt"]))
    first = list(items["item_id"][:4])
    with FakeOpenAI() as server:
        assert (
            run_misprompt(
                store.path,
                server.url,
                "--items",
                "misprompt-sample",
                "--limit",
                "4",
                "--run-name",
                "old",
            ).returncode
            == 0
        )
        port = server.port
    # make it an old run: no stored plan, the first 4 items answered but one
    params = json.loads(store.scalar("SELECT params FROM runs WHERE run_id = 'old'"))
    del params["sample"]
    store.execute("UPDATE runs SET params = ? WHERE run_id = 'old'", [json.dumps(params)])
    store.execute("DELETE FROM results WHERE run_id = 'old'")
    store.execute("DELETE FROM responses WHERE run_id = 'old'")
    with FakeOpenAI(port=port) as server:
        done = run_misprompt(
            store.path,
            server.url,
            "--items",
            "misprompt-sample",
            "--limit",
            "4",
            "--run-name",
            "old",
            "--no-cache",
        )
        assert done.returncode == 0, done.stderr
        assert sorted(_asked(server, questions)) == sorted(first)
    assert (
        json.loads(store.scalar("SELECT params FROM runs WHERE run_id='old'"))["limit_order"]
        == "file"
    )


def test_run_without_controls_warns_before_it_starts(initialised_store) -> None:
    store = initialised_store
    from core.benchmarks.misprompt import items as mi

    data = (ROOT / "data" / "samples" / "misprompt_sample.csv").read_text(encoding="utf-8")
    lines = data.splitlines()
    header, rows = lines[0], [l for l in lines[1:] if ",error," in l][:6]
    mi.import_bytes(store, ("\n".join([header, *rows]) + "\n").encode(), "e.csv", "errors-only")
    with FakeOpenAI() as server:
        done = run_misprompt(
            store.path, server.url, "--items", "errors-only", "--run-name", "noctl"
        )
        assert done.returncode == 0, done.stderr
        warning = [l for l in done.stderr.splitlines() if l.startswith("warning:")]
        assert warning and "no control" in warning[0] and "recall" in warning[0]
        with_ctrl = run_misprompt(
            store.path,
            server.url,
            "--items",
            "misprompt-sample",
            "--limit",
            "5",
            "--run-name",
            "ctl",
        )
        assert "no control" not in with_ctrl.stderr


def test_anchoring_form_starts_a_seeded_stratified_sample(initialised_store, monkeypatch) -> None:
    """The ErrorBench page's form: 'Passages to run' and 'Sample seed' reach the run, which
    stores the stratified plan (one passage per error count N for n=5)."""
    import time

    from streamlit.testing.v1 import AppTest

    from core.services.jobs import run_progress
    from tests.test_errorbench_run import responder

    store = initialised_store
    with FakeOpenAI(responder=responder) as server:
        monkeypatch.setenv("EHW_LOCAL_URL", server.url)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.switch_page("pages/anchoring.py")
        at.run()
        assert not at.exception, at.exception
        at.number_input[0].set_value(5)
        at.number_input[1].set_value(3)
        at.multiselect[0].set_value(["blind"])
        next(b for b in at.button if b.label == "Start run").click()
        at.run()
        assert not at.exception, at.exception
        run_id = at.success[0].value.split()[2]
        deadline = time.time() + 90
        progress: dict = {}
        while time.time() < deadline:
            progress = run_progress(store, run_id)
            if progress and progress["status"] in ("done", "failed"):
                break
            time.sleep(0.5)
        assert progress.get("status") == "done", progress
    params = json.loads(store.scalar("SELECT params FROM runs WHERE run_id = ?", [run_id]))
    items = store.df(
        "SELECT * EXCLUDE (item_set) FROM items WHERE item_set = 'errorbench-sample' ORDER BY rowid"
    )
    _s, plan = plan_sample(items, "errorbench", 5, 3)
    assert params["sample"]["seed"] == 3 and params["sample"]["item_ids"] == plan.item_ids
    assert set(params["sample"]["counts"].values()) == {1}  # N = 3..7, one passage each
    asked = store.df("SELECT DISTINCT item_id FROM responses WHERE run_id = ?", [run_id])
    assert sorted(asked["item_id"]) == sorted(plan.item_ids)


# -- issue 20.4: the erroneous:control ratio before the at-least-one-per-stratum rule ----------


def test_limit_keeps_the_erroneous_control_ratio_first(initialised_store) -> None:
    store = initialised_store
    for name, bench in (("misprompt-sample", "misprompt"), ("bbm-sample", "bbm")):
        items = store.df(
            "SELECT * EXCLUDE (item_set) FROM items WHERE item_set = ? ORDER BY rowid", [name]
        )
        share = n_controls(items) / len(items)
        for n in range(1, len(items)):
            sample, plan = plan_sample(items, bench, n, 0)
            controls = n_controls(sample)
            # within one of the set's ratio (largest remainder over the two groups)
            assert abs(controls - n * share) < 1, (name, n, controls)
            assert len(sample) == n and plan.item_ids == list(sample["item_id"])
    mis = store.df(
        "SELECT * EXCLUDE (item_set) FROM items WHERE item_set = 'misprompt-sample' ORDER BY rowid"
    )
    sample, plan = plan_sample(mis, "misprompt", 5, 0)
    assert sorted([n_controls(sample), 5 - n_controls(sample)]) == [2, 3]  # was 1 : 4
    # 4 erroneous categories + control = 5 strata; 2 or 3 erroneous cannot cover 4 categories
    assert plan.warnings and "too small" in plan.warnings[0]
    assert not plan_sample(mis, "misprompt", 10, 0)[1].warnings


def test_grouped_allocation_spreads_within_each_group() -> None:
    from core.engine.sampling import allocate_grouped

    sizes = {"a|T": 10, "b|T": 12, "c|T": 10, "d|T": 12, "ctl|F": 44}
    group = {k: k.split("|")[1] for k in sizes}
    alloc = allocate_grouped(sizes, 5, group)
    assert sum(alloc.values()) == 5 and alloc["ctl|F"] in (2, 3)
    assert sum(v > 0 for k, v in alloc.items() if k.endswith("T")) == 5 - alloc["ctl|F"]
    # with one group it is allocate() itself
    assert allocate_grouped({"x": 3, "y": 5}, 4, {"x": "g", "y": "g"}) == allocate(
        {"x": 3, "y": 5}, 4
    )


def test_small_limit_run_warns_about_the_strata(initialised_store) -> None:
    with FakeOpenAI() as server:
        done = run_misprompt(
            initialised_store.path,
            server.url,
            "--items",
            "misprompt-sample",
            "--limit",
            "5",
            "--run-name",
            "tiny",
        )
    assert done.returncode == 0, done.stderr
    assert any(
        line.startswith("warning:") and "too small" in line for line in done.stderr.splitlines()
    )
