"""Repeats (issue 18, point 3): `run --epochs K` asks each item K times and `rescore --repeat K`
judges each response K times; the summaries (mean, majority, pass^k, spread; Fleiss' κ and the
unanimous share) are checked against hand counts and statsmodels.

Every request goes to the scripted server (tests/fake_openai.py). Its model answers differ per
call ("MODEL ANSWER c for ITEM", c = 0, 1, 2 … per item) and its judge decides from c, so each
item's K outcomes are known whatever order the epochs ran in.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from core.benchmarks.misprompt import items as mi
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.cli import main as cli
from core.services import repeats
from core.store import Store
from tests.core_cli import run_core, run_misprompt
from tests.fake_openai import FakeOpenAI
from tests.test_misprompt_run import Script, _subset
from tests.test_rescore import _judged_template, judged_run  # noqa: F401 - fixtures

K = 3
ANSWER = re.compile(r"MODEL ANSWER (\d+) for (\S+)")


class EpochScript:
    """The model answers `MODEL ANSWER c for ID` (c counts that item's model calls); the judge
    says "detected" when c < the item's number of detecting answers (0..K, by item)."""

    def __init__(self, rows: list[dict]) -> None:
        self.script = Script(rows)  # finds the item a request is about
        self.detecting = {r["id"]: n % (K + 1) for n, r in enumerate(rows)}
        self.is_error = {r["id"]: r["error"] == "error" for r in rows}
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}
        self.model_requests: list[str] = []

    def respond(self, body: dict) -> str:
        role, row = self.script.item_of(body)
        if role == "model":
            with self.lock:
                c = self.calls.get(row["id"], 0)
                self.calls[row["id"]] = c + 1
                self.model_requests.append(row["id"])
            return f"MODEL ANSWER {c} for {row['id']}"
        text = "\n".join(m["content"] for m in body["messages"])
        found = ANSWER.search(text)
        assert found is not None, text
        c = int(found.group(1))
        detected = c < self.detecting[row["id"]]
        labels = {k: detected if k == "detection" else False for k in JUDGE_LABELS}
        return json.dumps({k: {"rationale": "r", "value": v} for k, v in labels.items()})

    def outcomes(self, metric: str) -> dict[str, list[bool]]:
        """Each item's K outcomes, from the script (c = 0 .. K-1)."""
        out = {}
        for item, t in self.detecting.items():
            detected = [c < t for c in range(K)]
            out[item] = (
                detected if metric == "detection" else [d == self.is_error[item] for d in detected]
            )
        return out


def _by_hand(outcomes: dict[str, list[bool]]) -> dict[str, float]:
    shares = [sum(v) / len(v) for v in outcomes.values()]
    n = len(shares)
    return {
        "n": n,
        "mean": sum(shares) / n,
        "majority": sum(1 for p in shares if p > 0.5) / n,
        "pass_k": sum(1 for v in outcomes.values() if all(v)) / n,
        "spread": sum(math.sqrt(p * (1 - p)) for p in shares) / n,
        "mixed": sum(1 for v in outcomes.values() if any(v) and not all(v)) / n,
    }


@pytest.fixture
def epoch_run(store: Store) -> Iterator[tuple[Store, EpochScript, FakeOpenAI]]:
    data, rows = _subset(5, 3)
    mi.import_bytes(store, data, "small.csv", "small")
    script = EpochScript(rows)
    server = FakeOpenAI(responder=script.respond).start()
    done = run_misprompt(
        store.path, server.url, "--items", "small", "--run-name", "r1", "--epochs", str(K),
        "--temperature", "0.7",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    yield store, script, server
    server.stop()


def test_epochs_ask_each_item_k_times_and_store_k_answers(epoch_run) -> None:
    store, script, _server = epoch_run
    n_items = len(script.detecting)
    # the cache is keyed by epoch: epoch 2 is asked, not epoch 1's cached answer
    assert sorted(script.model_requests) == sorted(list(script.detecting) * K)
    rows = store.rows(
        "SELECT item_id, list(epoch ORDER BY epoch), count(DISTINCT response) FROM responses "
        "WHERE run_id = 'r1' AND status = 'ok' GROUP BY item_id"
    )
    assert len(rows) == n_items
    assert all(epochs == list(range(1, K + 1)) and distinct == K for _, epochs, distinct in rows)
    # each answer has its own judge verdict, paired by epoch
    assert (
        store.scalar(
            "SELECT count(*) FROM responses x JOIN results v USING (run_id, item_id, variant, epoch) "
            "WHERE x.run_id = 'r1' AND v.status = 'ok'"
        )
        == n_items * K
    )
    assert store.scalar("SELECT n_planned FROM runs WHERE run_id = 'r1'") == n_items * K
    assert json.loads(store.scalar("SELECT params FROM runs WHERE run_id = 'r1'"))["epochs"] == K


def test_epochs_summary_matches_a_hand_count(epoch_run) -> None:
    store, script, _server = epoch_run
    done = run_core("runs", "--epochs-summary", "r1", "--format", "json", "--db", str(store.path))
    assert done.returncode == 0, done.stderr
    got = {r["metric"]: r for r in json.loads(done.stdout)}
    for metric in ("correct", "detection"):
        want = _by_hand(script.outcomes(metric))
        row = got[metric]
        assert row["k"] == K and row["n"] == want["n"] and row["variant"] == "zero-shot"
        for key in ("mean", "majority", "pass_k", "spread", "mixed"):
            assert row[key] == pytest.approx(want[key]), (metric, key)
    # the mean over epochs is the pooled rate of all K answers
    pooled = store.scalar(
        "SELECT avg(correct::INT) FROM results WHERE run_id = 'r1' AND judging = 'default'"
    )
    assert got["correct"]["mean"] == pytest.approx(pooled)
    table = run_core("runs", "--epochs-summary", "r1", "--db", str(store.path))
    assert "pass_k" in table.stdout and "detection" in table.stdout


_ANSWERS = "SELECT item_id, epoch, created_at FROM responses WHERE run_id = 'r1'"


def test_an_interrupted_run_resumes_only_the_missing_epochs(epoch_run) -> None:
    store, script, server = epoch_run
    first, second = sorted(script.detecting)[:2]
    # an interruption lost epoch 2 of one item and epoch 3 of another
    for item, epoch in ((first, 2), (second, 3)):
        for table in ("responses", "results"):
            store.execute(
                f"DELETE FROM {table} WHERE run_id = 'r1' AND item_id = ? AND epoch = ?",
                [item, epoch],
            )
    store.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = 'r1'")
    before = set(store.rows(_ANSWERS))
    script.model_requests.clear()
    done = run_misprompt(
        store.path, server.url, "--items", "small", "--run-name", "r1", "--epochs", str(K),
        "--temperature", "0.7", "--no-cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(script.model_requests) == sorted([first, second])
    after = set(store.rows(_ANSWERS))
    assert sorted((i, e) for i, e, _ in after - before) == sorted([(first, 2), (second, 3)])
    assert store.scalar("SELECT count(*) FROM responses WHERE run_id = 'r1'") == K * len(
        script.detecting
    )
    assert store.scalar("SELECT status FROM runs WHERE run_id = 'r1'") == "done"
    # another K is another run: refused, nothing asked
    script.model_requests.clear()
    again = run_misprompt(
        store.path, server.url, "--items", "small", "--run-name", "r1", "--epochs", "2",
        "--temperature", "0.7",
    )  # fmt: skip
    assert again.returncode != 0 and "epochs" in again.stderr
    assert script.model_requests == []


def test_a_second_run_of_the_same_epochs_is_answered_from_the_cache(epoch_run) -> None:
    store, script, server = epoch_run
    script.model_requests.clear()
    done = run_misprompt(
        store.path, server.url, "--items", "small", "--run-name", "r2", "--epochs", str(K),
        "--temperature", "0.7",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert script.model_requests == []  # every (item, epoch) was cached under its own key
    differ = store.scalar(
        "SELECT count(*) FROM responses a JOIN responses b USING (item_id, variant, epoch) "
        "WHERE a.run_id = 'r1' AND b.run_id = 'r2' AND a.response <> b.response"
    )
    assert differ == 0


# -- rescore --repeat K ------------------------------------------------------------------------


class RepeatJudge:
    """A judge whose verdict on a response may change from one asking to the next: label L of
    response r is its base value, flipped on the c-th asking when (r, L, c) is in the script."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.asked: dict[str, int] = {}
        self.log: dict[str, list[dict[str, bool]]] = {}

    @staticmethod
    def _key(body: dict) -> str:
        return json.dumps(body["messages"], sort_keys=True)

    def respond(self, body: dict) -> str:
        key = self._key(body)
        with self.lock:
            c = self.asked.get(key, 0)
            self.asked[key] = c + 1
        h = sum(map(ord, key))
        labels = {}
        for n, label in enumerate(JUDGE_LABELS):
            base = (h + n) % 2 == 0
            flip = (h + 3 * n + c) % 5 == 0 and c > 0  # a few answers change on asking again
            labels[label] = base != flip
        with self.lock:
            self.log.setdefault(key, []).append(labels)
        return json.dumps({k: {"rationale": "r", "value": v} for k, v in labels.items()})


def test_rescore_repeat_reports_kappa_and_unanimity(judged_run, capsys) -> None:  # noqa: F811
    store, rows = judged_run
    judge = RepeatJudge()
    with FakeOpenAI(responder=judge.respond) as server:
        args = ["rescore", "--source", "r1", "--judge-base-url", server.url, "--judge-model"]
        args += ["judge-r", "--as", "rep", "--repeat", str(K), "--quiet", "--db", str(store.path)]
        rc = cli(args)
        n_requests = len(server.chat_requests)
    out = capsys.readouterr()
    assert rc == 0, out.err
    # each repeat asked the judge afresh (the cache is keyed by the repeat)
    assert n_requests == K * len(rows)
    assert all(len(v) == K for v in judge.log.values()) and len(judge.log) == len(rows)
    names = repeats.repeat_judgings(store, "r1", "rep")
    assert names == ["rep", "rep@r2", "rep@r3"]
    # the first repeat stays the run's current judging
    assert store.scalar("SELECT judging FROM current_judgings WHERE run_id = 'r1'") == "rep"
    assert "self-agreement of judging rep" in out.out

    done = run_core(
        "runs", "--self-agreement", "r1", "--judging", "rep", "--format", "json",
        "--db", str(store.path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = {r["label"]: r for r in json.loads(done.stdout)}
    assert list(got) == list(JUDGE_LABELS)
    some_disagree = False
    for label in JUDGE_LABELS:
        table = np.array(
            [[sum(v[label] for v in votes), sum(not v[label] for v in votes)]
             for votes in judge.log.values()]
        )  # fmt: skip
        unanimous = sum(1 for yes, no in table if yes == 0 or no == 0) / len(table)
        some_disagree |= unanimous < 1
        assert got[label]["n"] == len(rows) and got[label]["k"] == K
        assert got[label]["kappa"] == pytest.approx(sm_fleiss_kappa(table, method="fleiss"))
        assert got[label]["unanimous"] == pytest.approx(unanimous)
    assert some_disagree  # the script made the judge change its mind somewhere


def test_fleiss_kappa_matches_statsmodels_on_random_tables() -> None:
    rng = np.random.default_rng(7)
    for raters in (2, 3, 5):
        yes = rng.integers(0, raters + 1, size=40)
        table = np.column_stack([yes, raters - yes])
        assert repeats.fleiss_kappa(table) == pytest.approx(sm_fleiss_kappa(table, method="fleiss"))


def test_repeat_is_refused_for_a_benchmark_scored_by_code(initialised_store, capsys) -> None:
    from tests.test_bbm_run import responder_for, run_bbm, sample

    with FakeOpenAI(responder=responder_for(sample())) as server:
        assert (
            run_bbm(
                server.url,
                "--method",
                "direct_trace",
                "--run-name",
                "b1",
                "--quiet",
                "--db",
                str(initialised_store.path),
            )
            == 0
        )
    capsys.readouterr()
    rc = cli(["rescore", "--source", "b1", "--repeat", "2", "--db", str(initialised_store.path)])
    assert rc == 2 and "scored by code" in capsys.readouterr().err


def test_errorbench_asi_pairs_each_answer_with_the_blind_answer_of_its_epoch() -> None:
    import pandas as pd

    from core.benchmarks.errorbench.metrics import add_asi

    blind_bias, anchored_bias, n = {1: 1.0, 2: 3.0}, {1: 2.0, 2: 6.0}, 5
    rows = [
        {"run_id": "e", "item_id": "p1", "epoch": e, "condition": c, "ok": True, "n": n,
         "count_bias": bias[e]}
        for c, bias in (("blind", blind_bias), ("anchored", anchored_bias))
        for e in (1, 2)
    ]  # fmt: skip
    flat = add_asi(pd.DataFrame(rows))
    got = flat[flat["condition"] == "anchored"].set_index("epoch")["asi"].to_dict()
    assert got == {e: abs(anchored_bias[e] - blind_bias[e]) / n for e in (1, 2)}
