"""Repeats clustered by item (issue 29, point 1): a run asked K times (`run --epochs K`) is
n items, not n × K independent answers — in `metrics` (its n and its intervals) and in
`compare` (pairs over all epochs, a clustered bootstrap, a test on per-item means).

The issue's case: at temperature 0 the K answers of an item are identical, so the K-epoch run
must give the n and (within Monte-Carlo error) the interval of the same answers asked once.
Every request goes to the scripted server (tests/fake_openai.py)."""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pytest

from core.benchmarks.misprompt import items as mi
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.store import Store
from tests.core_cli import run_core, run_misprompt
from tests.fake_openai import FakeOpenAI
from tests.test_misprompt_run import Script, _subset

K = 3
N_ERROR, N_CONTROL = 15, 12  # _subset takes every third erroneous item: 15 in the sample


class SameEachTime:
    """The judge's verdict depends on the item only (the same in every epoch): detection for
    every other erroneous item, and for one control in four (false positives) — except for
    the items in `flip`, whose verdict is reversed on their second and later answers."""

    def __init__(self, rows: list[dict], flip: Iterable[str] = frozenset()) -> None:
        self.script = Script(rows)
        self.rows = rows
        self.flip = set(flip)
        self.lock = threading.Lock()
        self.calls: dict[str, int] = {}

    def detected(self, row: dict, call: int = 0) -> bool:
        n = self.rows.index(row)
        said = n % 2 == 0 if row["error"] == "error" else n % 4 == 0
        return said != (row["id"] in self.flip and call >= 1)

    def respond(self, body: dict) -> str:
        role, row = self.script.item_of(body)
        if role == "model":
            with self.lock:
                c = self.calls.get(row["id"], 0)
                self.calls[row["id"]] = c + 1
            return f"MODEL ANSWER {c} for {row['id']}"
        text = "\n".join(m["content"] for m in body["messages"])
        found = re.search(r"MODEL ANSWER (\d+) for", text)
        assert found is not None, text
        call = int(found.group(1))
        said = self.detected(row, call)
        labels = {k: said if k == "detection" else False for k in JUDGE_LABELS}
        return json.dumps({k: {"rationale": "r", "value": v} for k, v in labels.items()})


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Store, list[dict]]:
    folder = tmp_path_factory.mktemp("repeats")
    store = Store.open(folder / "r.duckdb")
    data, rows = _subset(N_ERROR, N_CONTROL)
    mi.import_bytes(store, data, "set.csv", "set")
    flipped = {rows[i]["id"] for i in range(0, 12, 2)}  # detected erroneous items
    for name, epochs, flip in (("once", 1, set()), ("thrice", K, set()), ("other", K, flipped)):
        server = FakeOpenAI(responder=SameEachTime(rows, flip).respond).start()
        try:
            done = run_misprompt(
                store.path, server.url, "--items", "set", "--run-name", name,
                "--epochs", str(epochs), "--temperature", "0",
            )  # fmt: skip
        finally:
            server.stop()
        assert done.returncode == 0, done.stderr
    return store, rows


def _metrics(store: Store, run: str) -> pd.DataFrame:
    done = run_core(
        "metrics", "misprompt", "--source", run, "--format", "csv", "--db", str(store.path)
    )
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stdout.splitlines() if not ln.startswith("#")]
    return pd.read_csv(io.StringIO("\n".join(lines)))


def test_metrics_of_k_identical_epochs_are_those_of_one(runs) -> None:
    store, _rows = runs
    once = _metrics(store, "once").set_index(["category_level", "category", "metric"])
    thrice = _metrics(store, "thrice").set_index(["category_level", "category", "metric"])
    cell = ("all", "All", "detection")
    assert thrice["n"][cell] == once["n"][cell] == N_ERROR  # items, not items × K
    assert thrice["f1"][cell] == pytest.approx(once["f1"][cell])
    # the same answers: the same interval, up to the bootstrap's Monte-Carlo error
    for end in ("ci_low", "ci_high"):
        assert thrice.loc[cell, end] == pytest.approx(once.loc[cell, end], abs=2.5)
    both = once.join(thrice, rsuffix="_k").dropna(subset=["ci_low", "ci_low_k"])
    assert len(both) > 10
    assert (both["n"] == both["n_k"]).all()
    width, width_k = both["ci_high"] - both["ci_low"], both["ci_high_k"] - both["ci_low_k"]
    assert np.abs(width_k - width).max() <= 5.0, (width_k - width).describe()


def test_compare_pairs_items_over_all_epochs(runs) -> None:
    store, rows = runs
    done = run_core(
        "compare", "--baseline", "thrice", "--candidate", "other", "--format", "json",
        "--db", str(store.path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = pd.DataFrame(json.loads(done.stdout)["rows"])
    all_rows = table[table["category"] == "all"].set_index("metric")
    det = all_rows.loc[["detection"]].iloc[0]
    assert det["n"] == N_ERROR + N_CONTROL  # items, each with its K epochs
    # the 6 flipped items (detected erroneous items) are not detected in 2 of their 3
    # answers (the model's 2nd and 3rd call, whatever epoch that is): each mean moves by -2/3
    assert all(SameEachTime(rows).detected(rows[i]) for i in range(0, 12, 2))
    assert det["diff"] * det["n"] == pytest.approx(-6 * 2 / 3)
    assert det["baseline"] == pytest.approx(np.mean([SameEachTime(rows).detected(r) for r in rows]))
    assert (int(det["b"]), int(det["c"])) == (6, 0)  # items whose mean is higher in each run


def test_compare_f1_is_the_metrics_f1_in_every_cell_and_controls_get_a_false_positive_rate(
    runs,
) -> None:
    """Issue 29, point 2: one definition of detection F1 per cell. `compare` gives, for each
    run, the F1 `metrics misprompt` gives for the same cell (categories scored with the
    controls' false-positive rate, as the paper's table does); the control-only category
    `(none)` reports the false-positive rate, not an F1 of 0 by construction."""
    store, _rows = runs
    done = run_core(
        "compare", "--baseline", "once", "--candidate", "other", "--format", "json",
        "--db", str(store.path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    table = pd.DataFrame(json.loads(done.stdout)["rows"])
    f1 = table[table["metric"] == "detection_f1"].set_index("category")
    for run, column in (("once", "baseline"), ("other", "candidate")):
        m = _metrics(store, run)
        m = m[(m["metric"] == "detection") & (m["evaluator"] == "judge")]
        want = {
            ("all" if lv == "all" else cat): v / 100
            for lv, cat, v in zip(m["category_level"], m["category"], m["f1"])
            if lv in ("all", "primary")
        }
        got = f1[column].to_dict()
        assert set(got) == set(want)
        for category, value in want.items():
            assert got[category] == pytest.approx(value, abs=5e-5), (run, category)  # CSV: 2 dp
    assert "(none)" not in f1.index
    fpr = table[(table["metric"] == "detection_fpr") & (table["category"] == "(none)")]
    assert len(fpr) == 1
    rate = table[(table["metric"] == "detection") & (table["category"] == "(none)")]
    assert float(fpr["baseline"].iloc[0]) == pytest.approx(float(rate["baseline"].iloc[0]))
    assert 0 < float(fpr["baseline"].iloc[0]) < 1 and int(fpr["n"].iloc[0]) == N_CONTROL


def test_bbm_and_errorbench_metrics_count_items_and_cluster_their_epochs() -> None:
    """BBM's shares and weighted F1, ErrorBench's F bootstrap: K identical copies of every
    answer give the n and the interval of one copy (pure functions on the metrics' frames)."""
    from core.benchmarks.bbm.metrics import ACCURACY, WEIGHTED_F1, metrics_from_traces
    from core.benchmarks.errorbench.metrics import interval_stats

    rng = np.random.default_rng(3)
    n = 30
    gold = [None if g < 0 else int(g) for g in rng.integers(-1, 4, n)]
    pred = [g if rng.random() < 0.6 else None for g in gold]
    once = pd.DataFrame(
        {
            "source": "r", "model": "m", "task": "Word sorting", "method": "direct_trace",
            "item_id": [f"i{i}" for i in range(n)], "gold_index": gold, "pred_index": pred,
            "parse_status": "ok", "answer_correct": rng.random(n) < 0.3, "status": "ok",
        }
    )  # fmt: skip
    thrice = pd.concat([once] * K, ignore_index=True)
    a = metrics_from_traces(once).set_index(["task", "subset", "measure"])
    b = metrics_from_traces(thrice).set_index(["task", "subset", "measure"])
    for cell in (("Word sorting", "all", ACCURACY), ("Word sorting", "all", WEIGHTED_F1)):
        assert b["n"][cell] == a["n"][cell] == n
        assert b["value"][cell] == pytest.approx(a["value"][cell])
        for end in ("ci_low", "ci_high"):
            assert b.loc[cell, end] == pytest.approx(a.loc[cell, end], abs=1.0), (cell, end)
    # ErrorBench: the F bootstrap over passages, each passage with its K answers
    from core.benchmarks.errorbench.metrics import _SUM_COLUMNS

    sums = pd.DataFrame(rng.integers(0, 4, (n, len(_SUM_COLUMNS))), columns=_SUM_COLUMNS)
    sums["item_id"] = [f"p{i}" for i in range(n)]
    one = interval_stats(sums)
    three = interval_stats(pd.concat([sums] * K, ignore_index=True))
    assert three["n"] == one["n"] == n
    for key, value in one.items():
        if key.endswith(("_ci_low", "_ci_high")) and value == value:
            assert three[key] == pytest.approx(value, abs=0.02), key


def test_pcbench_run_asked_twice_counts_problems_once(tmp_path, _initialised_template) -> None:
    """PCBench `metrics` of a run asked K = 2 times (identical answers at temperature 0): each
    verdict read once with its own answer (not joined with every epoch's answer), n counts
    problems, and the rate and interval are those of one answer per problem."""
    import shutil

    from tests.test_pcbench import RUN, SAMPLE, SET, responder

    db = tmp_path / "p.duckdb"
    shutil.copyfile(_initialised_template, db)
    assert (
        run_core("import", "pcbench", str(SAMPLE), "--name", SET, "--db", str(db)).returncode == 0
    )
    tables = {}
    with FakeOpenAI(responder=responder) as server:
        for name, epochs in ((RUN, 1), ("twice", 2)):
            done = run_core(
                "run", "pcbench", "--db", str(db), "--items", SET, "--run-name", name,
                "--base-url", server.url, "--model", "answer-model", "--epochs", str(epochs),
                "--judge-base-url", server.url, "--judge-model", "judge-one", "--quiet",
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            out = run_core(
                "metrics", "pcbench", "--source", name, "--format", "csv", "--db", str(db)
            )
            assert out.returncode == 0, out.stderr
            lines = [ln for ln in out.stdout.splitlines() if not ln.startswith("#")]
            tables[name] = pd.read_csv(io.StringIO("\n".join(lines))).set_index(
                ["variant", "error_type", "difficulty"]
            )
    once, twice = tables[RUN], tables["twice"]
    assert (twice["n"] == once["n"]).all()
    assert np.allclose(twice["rate"], once["rate"])
    assert np.allclose(twice["ci_low"], once["ci_low"]) and np.allclose(
        twice["ci_high"], once["ci_high"]
    )
