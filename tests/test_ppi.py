"""Judge-corrected estimates (issue 18, point 4): core/ppi.py's PPI/PPI++ math against a hand
computation and against `ppi-python` (requirements-dev.txt), the F1 delta method against a
bootstrap, and core/services/judge_trust.py on scripted audits (a judge biased on known items),
repeats of a judging, the model-family flag, and the `audit ppi` CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.ppi import f1_from_rates, ppi_f1, ppi_lambda, ppi_mean
from core.services import audit
from core.services import judge_trust as jt
from core.store import Store
from tests.audit_fixtures import add_items, add_judged_run
from tests.conftest import copy_of
from tests.core_cli import run_core
from tests.misprompt_fixtures import insert_verdicts

Z = norm.ppf(0.975)

# -- the math -----------------------------------------------------------------------------------

# A small case to follow by hand: 5 responses people labelled, 8 the judge alone saw.
Y = [1, 0, 1, 1, 0]
YHAT = [1, 1, 1, 0, 0]
UNLABELLED = [1, 0, 1, 1, 1, 0, 0, 1]


def _mean(xs):
    return sum(xs) / len(xs)


def _var0(xs):
    m = _mean(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)


def test_ppi_mean_is_the_papers_formula_by_hand():
    """λ = 1: θ̂ = mean(Ŷ_unlabelled) + mean(Y − Ŷ); se² = var(Ŷ_u)/N + var(Y − Ŷ)/n."""
    rect = [y - h for y, h in zip(Y, YHAT)]
    theta = _mean(UNLABELLED) + _mean(rect)
    se = math.sqrt(_var0(UNLABELLED) / len(UNLABELLED) + _var0(rect) / len(Y))
    est = ppi_mean(Y, YHAT, UNLABELLED, lam=1)
    assert est.estimate == pytest.approx(theta)
    assert est.se == pytest.approx(se)
    # θ̂ ± z·se, clipped to [0, 1] (a rate): five labels give a wide interval
    low, high = max(0.0, theta - Z * se), min(1.0, theta + Z * se)
    assert theta - Z * se < 0 < 1 < theta + Z * se
    assert (est.ci_low, est.ci_high) == pytest.approx((low, high))
    assert (est.n, est.n_unlabelled, est.lam) == (len(Y), len(UNLABELLED), 1.0)
    assert est.classical == pytest.approx(_mean(Y))
    # effective n: people's labels alone with this interval width
    assert est.n_effective == pytest.approx(len(Y) * (_var0(Y) / len(Y)) / se**2)


def test_ppi_plus_plus_lambda_by_hand():
    """λ = cov(Y, Ŷ) / ((1 + n/N) var(Ŷ over all, ddof 1)), clipped to [0, 1]."""
    n, big_n = len(Y), len(UNLABELLED)
    my, mh = _mean(Y), _mean(YHAT)
    cov = sum((y - my) * (h - mh) for y, h in zip(Y, YHAT)) / n
    both = YHAT + UNLABELLED
    var1 = sum((h - _mean(both)) ** 2 for h in both) / (len(both) - 1)
    lam = min(1.0, max(0.0, cov / ((1 + n / big_n) * var1)))
    assert 0 < lam < 1  # the case exercises the formula, not the clip
    assert ppi_lambda(Y, YHAT, UNLABELLED)[0] == pytest.approx(lam)
    rect = [y - lam * h for y, h in zip(Y, YHAT)]
    theta = lam * _mean(UNLABELLED) + _mean(rect)
    se = math.sqrt(lam**2 * _var0(UNLABELLED) / big_n + _var0(rect) / n)
    est = ppi_mean(Y, YHAT, UNLABELLED)
    assert (est.estimate, est.se, est.lam) == pytest.approx((theta, se, lam))


def _simulated(seed: int, n: int = 80, big_n: int = 600, flip: float = 0.15, bias: float = 0.1):
    """Human truth, a judge that flips `flip` of labels and says 'true' on `bias` more, and
    is_error (70% erroneous items)."""
    rng = np.random.default_rng(seed)
    total = n + big_n
    truth = rng.random(total) < 0.7
    human = np.where(truth, rng.random(total) < 0.6, rng.random(total) < 0.2)
    judge = (human ^ (rng.random(total) < flip)) | (rng.random(total) < bias)
    return human.astype(float), judge.astype(float), truth.astype(float), n


def test_ppi_mean_against_ppi_python():
    import ppi_py  # requirements-dev.txt: the reference implementation

    human, judge, _, n = _simulated(1)
    for lam in (1.0, None):
        mine = ppi_mean(human[:n], judge[:n], judge[n:], lam=lam)
        low, high = ppi_py.ppi_mean_ci(human[:n], judge[:n], judge[n:], alpha=0.05, lam=lam)
        point = ppi_py.ppi_mean_pointestimate(human[:n], judge[:n], judge[n:], lam=lam)
        assert mine.estimate == pytest.approx(float(np.ravel(point)[0]))
        assert (mine.ci_low, mine.ci_high) == pytest.approx((float(low[0]), float(high[0])))


def test_ppi_f1_rates_against_ppi_python():
    """The (TP rate, FP rate) vector under F1 is ppi_py's 2-d mean with per-coordinate λ; F1's
    interval is the delta method over that mean's covariance."""
    import ppi_py  # requirements-dev.txt: the reference implementation

    human, judge, truth, n = _simulated(2)
    y = np.column_stack([human * truth, human * (1 - truth)])
    h = np.column_stack([judge * truth, judge * (1 - truth)])
    point = ppi_py.ppi_mean_pointestimate(y[:n], h[:n], h[n:], lam_optim_mode="element")
    low, high = ppi_py.ppi_mean_ci(y[:n], h[:n], h[n:], alpha=0.05, lam_optim_mode="element")
    t, f = np.ravel(point)
    est = ppi_f1(human[:n], judge[:n], truth[:n], judge[n:], truth[n:])
    assert est.estimate == pytest.approx(f1_from_rates(t, f, truth.mean()))
    # each rate's standard error, recovered from ppi_py's interval, enters the delta method
    se_t, se_f = (np.asarray(high) - np.asarray(low)) / (2 * Z)
    pi = truth.mean()
    d = (t + f + pi) ** 2
    g = np.array([2 * (f + pi), -2 * t]) / d
    # each rate alone, with its own PPI++ λ, has ppi_py's standard error
    lams = ppi_lambda(y[:n], h[:n], h[n:])
    for j, se in enumerate((se_t, se_f)):
        assert ppi_mean(y[:n, j], h[:n, j], h[n:, j], lam=lams[j]).se == pytest.approx(se)
    # the covariance of the two rates is not in ppi_py's output (the bootstrap test checks it):
    # the F1 se lies between the perfectly anti-correlated and perfectly correlated cases
    lo_se = abs(abs(g[0]) * se_t - abs(g[1]) * se_f)
    hi_se = abs(g[0]) * se_t + abs(g[1]) * se_f
    assert lo_se <= est.se <= hi_se


def test_ppi_f1_delta_interval_matches_a_bootstrap_of_the_estimate():
    """The delta-method se of the PPI F1 against the spread of the same estimate over 2000
    resamples (labelled and unlabelled responses resampled separately, λ = 1 fixed)."""
    human, judge, truth, n = _simulated(3, n=150, big_n=1500)
    est = ppi_f1(human[:n], judge[:n], truth[:n], judge[n:], truth[n:], lam=1)
    rng = np.random.default_rng(0)
    values = []
    big_n = len(judge) - n
    for _ in range(2000):
        a = rng.integers(0, n, n)
        b = n + rng.integers(0, big_n, big_n)
        values.append(ppi_f1(human[a], judge[a], truth[a], judge[b], truth[b], lam=1).estimate)
    assert est.se == pytest.approx(float(np.std(values)), rel=0.1)


def test_a_perfect_judge_is_worth_its_unlabelled_responses_and_lambda_zero_is_people_alone():
    human, _, truth, n = _simulated(4)
    perfect = ppi_mean(human[:n], human[:n], human[n:], lam=1)
    big_n = len(human) - n
    assert perfect.n_effective == pytest.approx(big_n * _var0(human[:n]) / _var0(human[n:]))
    assert perfect.n_effective > 5 * n
    alone = ppi_mean(human[:n], human[:n] * 0 + 1, human[n:], lam=0)
    assert alone.estimate == pytest.approx(human[:n].mean())
    assert alone.n_effective == pytest.approx(n)


def test_degenerate_inputs():
    nothing = ppi_mean([], [], [1, 0, 1])
    assert nothing.n == 0 and math.isnan(nothing.estimate)
    everything = ppi_mean([1, 0, 1], [1, 1, 1], [])  # all labelled: people alone
    assert everything.estimate == pytest.approx(2 / 3) and everything.lam == 0
    no_errors = ppi_f1([1, 0], [1, 0], [0, 0], [1], [0])
    assert math.isnan(no_errors.estimate)
    with pytest.raises(ValueError):
        ppi_mean([1, 0], [1], [0])


# -- model families -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model, judge, family",
    [
        ("gpt-4o-mini", "gpt-4.1", "OpenAI"),
        ("o3-mini", "openai/gpt-4o", "OpenAI"),
        ("claude-3-5-haiku", "claude-sonnet-4", "Anthropic"),
        ("gemini-2.0-flash", "models/gemini-1.5-pro", "Google"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3.2:3b", "Meta"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen3:8b", "Qwen"),
        ("mistral-small", "mixtral-8x7b", "Mistral"),
        ("HuggingFaceTB/SmolLM2-135M-Instruct", "smollm2-135m", "HuggingFace"),
        ("deepseek-chat", "deepseek-r1", "DeepSeek"),
        ("gpt-4o", "claude-3-opus", None),
        ("qwen2.5", "llama-3", None),
        ("my-finetune", "my-finetune", None),  # unknown names never flag
        ("gpt-4o", None, None),
        ("olmo-2", "phi-4", None),
    ],
)
def test_same_family(model, judge, family):
    assert jt.same_family(model, judge) == family


def test_family_names():
    assert jt.model_family("o1-preview") == "OpenAI"
    assert jt.model_family("ollama/qwen2.5:7b") == "Qwen"
    assert jt.model_family("phi-4") == "Microsoft"
    assert jt.model_family("gptzero-clone") is None  # 'gpt' must be a name, not a prefix of one
    assert jt.model_family("") is None


# -- data: a scripted audit ---------------------------------------------------------------------


@pytest.fixture
def store(tmp_path) -> Store:
    return Store.open(tmp_path / "ppi.duckdb")


LABEL = "detection"


def biased_run(store: Store, run_id: str = "run-a", model: str = "model-a"):
    """A run whose judge says `detection` true on every third item where people say false (a
    known bias); people's truth is the judge's verdict with those items corrected."""
    items = add_items(store, n_per_category=40, n_controls=40)
    verdicts = add_judged_run(store, run_id, model, items, seed=7)
    truth = verdicts.set_index("item_id")[list(JUDGE_LABELS)].astype(bool).copy()
    biased = [i for k, i in enumerate(truth.index) if k % 3 == 0 and not truth.loc[i, LABEL]]
    store.execute(
        "UPDATE results SET labels = json_merge_patch(labels, '{\"detection\": true}') "
        "WHERE run_id = ? AND item_id IN (SELECT unnest(?))",
        [run_id, biased],
    )
    return truth, biased


@pytest.fixture(scope="module")
def _biased_template(tmp_path_factory) -> tuple[Path, pd.DataFrame, list[str]]:
    """`biased_run` written once for this module (~0.4 s of CPU), with its truth and bias."""
    path = tmp_path_factory.mktemp("ppi-biased") / "ppi.duckdb"
    truth, biased = biased_run(Store.open(path))
    return path, truth, biased


@pytest.fixture
def biased(tmp_path, _biased_template) -> tuple[Store, pd.DataFrame, list[str]]:
    """(store, truth, biased items): a copy of `biased_run`'s store, as `store` + biased_run."""
    path, truth, items = _biased_template
    return copy_of(path, tmp_path / "ppi.duckdb"), truth.copy(), list(items)


def label_sample(
    store: Store, name: str, truth: pd.DataFrame, annotators=("ann1",), only=None
) -> None:
    """People label an audit's sample as `truth` says (one insert; `save_labels` per item is
    tested in test_audit.py). `only`: {label: value} instead, for every item."""
    rows = [
        {
            "run_id": row.run_id,
            "item_id": row.item_id,
            "variant": row.variant,
            "annotator": who,
            "label": label,
            "value": bool(value),
        }
        for row in audit.audit_queue(store, name).itertuples()
        for who in annotators
        for label, value in (only or truth.loc[str(row.item_id)].to_dict()).items()
    ]
    store.insert_df("human_labels", pd.DataFrame(rows))


def test_ppi_moves_the_judges_biased_rate_toward_the_people(biased):
    store, truth, biased = biased
    assert biased
    audit.create_audit(store, "a", ["run-a"], fraction=0.3, seed=1)
    label_sample(store, "a", truth)
    table = jt.audit_ppi(store, "a")
    row = table[(table["label"] == LABEL) & (table["metric"] == "rate")].iloc[0]
    people_rate = truth[LABEL].mean()  # what people would say on the whole run
    judge_rate = (truth[LABEL] | truth.index.isin(biased)).mean()
    assert row["judge_only"] == pytest.approx(judge_rate)
    assert row["n_judge"] == len(truth)
    assert row["n_human"] == len(audit.audit_queue(store, "a"))
    assert abs(row["ppi"] - people_rate) < abs(row["judge_only"] - people_rate)
    assert row["ci_low"] <= people_rate <= row["ci_high"]
    assert row["ci_low"] < row["ppi"] < row["ci_high"]
    # an unbiased label: people agree with the judge on every item, so the judge's number
    # stays inside the interval and its verdicts are worth more than the labels alone
    fair = table[(table["label"] == "guidance") & (table["metric"] == "rate")].iloc[0]
    assert fair["ci_low"] < fair["judge_only"] < fair["ci_high"]
    assert fair["n_effective"] > 2 * fair["n_human"]
    assert row["n_effective"] < fair["n_effective"]  # the biased label gains less


def test_f1_rows_use_the_benchmarks_f1_and_correct_the_bias(biased):
    store, truth, _ = biased
    audit.create_audit(store, "a", ["run-a"], fraction=0.3, seed=1)
    label_sample(store, "a", truth)
    table = jt.audit_ppi(store, "a")
    f1 = table[table["metric"] == "f1"].set_index("label")
    comparison = audit.f1_comparison(store, "a")
    whole = comparison[comparison["source"] == audit.WHOLE_RUN].iloc[0]
    for label in JUDGE_LABELS:  # judge-only F1 = the results pages' (percent there)
        assert f1["judge_only"][label] * 100 == pytest.approx(whole[label])
    items = store.df("SELECT item_id, is_error FROM items").set_index("item_id")["is_error"]
    e = items.reindex(truth.index).astype(bool)
    h = truth[LABEL]
    people_f1 = 2 * (h & e).sum() / (h.sum() + e.sum())
    row = f1.loc[LABEL]
    assert abs(row["ppi"] - people_f1) < abs(row["judge_only"] - people_f1)


def test_majority_of_annotators_and_the_run_without_audit(biased):
    store, truth, _ = biased
    audit.create_audit(store, "a", ["run-a"], fraction=0.3, seed=1)
    label_sample(store, "a", truth, annotators=("ann1", "ann2"))
    # a third annotator who always says 'false' is outvoted on every item
    label_sample(store, "a", truth, annotators=("ann3",), only={LABEL: False})
    with_audit = jt.run_ppi(store, "run-a", "a")
    without = jt.run_ppi(store, "run-a")
    pd.testing.assert_frame_equal(with_audit, without)
    data = jt.run_labels(store, "run-a", "a")
    labelled = data.frame[data.frame["human_" + LABEL].notna()]
    assert (labelled["human_" + LABEL] == truth.loc[labelled["item_id"], LABEL].values).all()


def test_unknown_audit_and_judging_are_refused(biased):
    store = biased[0]
    with pytest.raises(audit.AuditError, match="unknown audit"):
        jt.run_ppi(store, "run-a", "nope")
    with pytest.raises(audit.AuditError, match="no judging"):
        jt.run_ppi(store, "run-a", judging="nope")


# -- repeats of a judging, family flag --------------------------------------------------------


def add_repeat(store: Store, run_id: str, name: str, flip_items: list[str]) -> None:
    """A repeat `name` (`<base>@rK`, as `rescore --repeat` stores it) of the run's default
    judging: its verdicts, `detection` flipped on `flip_items`."""
    base, _, k = name.partition("@r")
    params = {"repeat": int(k), "repeat_of": base} if k else {}
    store.execute(
        "INSERT INTO judgings (run_id, judging, kind, judge_model, status, params) "
        "VALUES (?, ?, 'judge', 'judge-model', 'done', ?)",
        [run_id, name, json.dumps(params)],
    )
    rows = store.df(
        "SELECT item_id, variant, labels FROM results WHERE run_id = ? AND judging = 'default'",
        [run_id],
    )
    out = []
    for r in rows.itertuples():
        labels = json.loads(str(r.labels))
        if r.item_id in flip_items:
            labels[LABEL] = not labels[LABEL]
        out.append(
            {
                "run_id": run_id,
                "item_id": r.item_id,
                "variant": r.variant,
                "judging": name,
                "status": "ok",
                **labels,
            }
        )
    insert_verdicts(store, pd.DataFrame(out))


def test_verdict_changes_across_repeats(biased):
    store = biased[0]
    assert jt.verdict_changes(store, "run-a", "default").empty  # not measured
    items = sorted(store.df("SELECT item_id FROM items")["item_id"])
    add_repeat(store, "run-a", "default@r2", items[:5])
    add_repeat(store, "run-a", "default@r3", items[3:9])
    add_repeat(store, "run-a", "other", items)  # not a repeat of default: ignored
    assert jt.repeat_judgings(store, "run-a", "default@r3") == [
        "default",
        "default@r2",
        "default@r3",
    ]
    table = jt.verdict_changes(store, "run-a", "default").set_index("label")
    assert table.loc[LABEL, "n"] == len(items) and table.loc[LABEL, "k"] == 3
    assert table.loc[LABEL, "changed"] == 9  # items 0-8 differ in at least one repeat
    assert table.loc["guidance", "changed"] == 0
    assert table["ci_low"][LABEL] < 9 / len(items) < table["ci_high"][LABEL]


def test_family_flag_of_runs(store):
    items = add_items(store, n_per_category=2, n_controls=2)
    add_judged_run(store, "run-a", "gpt-4o-mini", items, seed=1)
    add_judged_run(store, "run-b", "claude-3-haiku", items, seed=2)
    store.execute("UPDATE runs SET judge_model = 'gpt-4.1' ")
    flags = jt.family_flags(store, ["run-a", "run-b"]).set_index("run_id")
    assert flags.loc["run-a", "same_family"] == "OpenAI"
    assert flags.loc["run-b", "same_family"] == ""


# -- CLI ----------------------------------------------------------------------------------------


def test_cli_audit_ppi(biased, tmp_path):
    store, truth, _ = biased
    audit.create_audit(store, "a", ["run-a"], fraction=0.3, seed=1)
    label_sample(store, "a", truth)
    db = str(tmp_path / "ppi.duckdb")
    done = run_core("audit", "ppi", "--audit", "a", "--format", "json", "--db", db)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    frame = pd.DataFrame(out["rows"])
    expected = jt.audit_ppi(Store.open(db), "a")
    assert list(frame.columns) == jt.PPI_COLUMNS
    assert frame["ppi"].to_numpy() == pytest.approx(expected["ppi"].to_numpy())
    assert out["verdicts changed on re-judging (run-a)"] == jt.NOT_MEASURED
    csv = run_core("audit", "ppi", "--run", "run-a", "--format", "csv", "--db", db)
    assert csv.returncode == 0 and csv.stdout.splitlines()[0] == ",".join(jt.PPI_COLUMNS)
    table = run_core("audit", "ppi", "--run", "run-a", "--db", db)
    assert table.returncode == 0 and "PPI++" in table.stdout and LABEL in table.stdout
    bad = run_core("audit", "ppi", "--db", db)
    assert bad.returncode == 1 and "give --run" in bad.stderr
    unknown = run_core("audit", "ppi", "--run", "nope", "--db", db)
    assert unknown.returncode == 1 and "unknown run" in unknown.stderr


def test_a_benchmark_without_controls_gets_rates_from_its_registry_labels(store, monkeypatch):
    """Generic over the registry: the two-label test benchmark (no controls, so no F1) gets one
    `rate` row per label, the same numbers as ppi_mean on its labels by hand."""
    from core import registry
    from tests.test_audit_generic import BENCH, LETTERS, NAME, add_two_label_run

    monkeypatch.setitem(registry.BENCHMARKS, NAME, BENCH)
    with store.session():  # 82 small inserts: one open of the file
        judged = add_two_label_run(store, "two", n=40, seed=5)
    audit.create_audit(store, "t", ["two"], fraction=0.5, seed=2)
    people = {
        i: {"found": not v["found"] if i.endswith("0") else v["found"], "fixed": False}
        for i, v in judged.items()
    }
    sample = audit.audit_queue(store, "t")
    rows = [
        {
            "run_id": "two",
            "item_id": r.item_id,
            "variant": r.variant,
            "annotator": "a",
            "label": label,
            "value": value,
        }
        for r in sample.itertuples()
        for label, value in people[r.item_id].items()
    ]
    store.insert_df("human_labels", pd.DataFrame(rows))
    table = jt.run_ppi(store, "two", "t")
    assert list(table["label"]) == list(LETTERS) and set(table["metric"]) == {"rate"}
    labelled = set(sample["item_id"])
    order = sorted(judged)
    for label in LETTERS:
        y = [float(people[i][label]) for i in order if i in labelled]
        yhat = [float(judged[i][label]) for i in order if i in labelled]
        rest = [float(judged[i][label]) for i in order if i not in labelled]
        want = ppi_mean(y, yhat, rest)
        got = table.set_index("label").loc[label]
        assert (got["ppi"], got["ci_low"], got["ci_high"]) == pytest.approx(
            (want.estimate, want.ci_low, want.ci_high)
        )
        assert got["n_human"] == len(labelled) and got["n_judge"] == len(judged)


def test_the_intervals_cover_the_population_value_about_95_percent_of_the_time():
    """400 seeded draws of 120 labelled + 1200 judged responses from a population with a judge
    that is biased (says 'true' too often): the rate's and F1's 95% intervals contain the
    population's values in about 95% of the draws (binomial sd ≈ 1.1 points), where the
    judge-only rate is off by more than 5 points."""
    human, judge, truth, _ = _simulated(9, n=100_000, big_n=0, flip=0.1, bias=0.15)
    true_rate = human.mean()
    true_f1 = f1_from_rates((human * truth).mean(), (human * (1 - truth)).mean(), truth.mean())
    rng = np.random.default_rng(1)
    n, big_n, reps = 120, 1200, 400
    hit_rate = hit_f1 = 0
    for _ in range(reps):
        idx = rng.choice(len(human), n + big_n, replace=False)
        a, b = idx[:n], idx[n:]
        rate = ppi_mean(human[a], judge[a], judge[b])
        f1 = ppi_f1(human[a], judge[a], truth[a], judge[b], truth[b])
        hit_rate += rate.ci_low <= true_rate <= rate.ci_high
        hit_f1 += f1.ci_low <= true_f1 <= f1.ci_high
    assert 0.92 <= hit_rate / reps <= 0.98
    assert 0.92 <= hit_f1 / reps <= 0.98
    assert abs(judge.mean() - true_rate) > 0.05


# -- issue 29, point 5: a bootstrap of the whole F1 estimator, and a warning under 30 labels ----


def test_ppi_f1_bootstrap_matches_ppi_pythons_resampler_on_the_whole_estimator():
    """`ppi_f1_bootstrap` (a multinomial over the ≤ 8 labelled and ≤ 4 unlabelled patterns,
    λ re-tuned in every draw) against ppi-python's own resampler (`ppi_py.bootstrap`, the
    labelled triples paired, the unlabelled pairs apart) drawing the same estimator
    (`ppi_f1(...).estimate`) one resample at a time: two Monte-Carlo estimates of one
    percentile interval."""
    from ppi_py import bootstrap

    from core.ppi import ppi_f1_bootstrap

    human, judge, truth, n = _simulated(5, n=27, big_n=300)
    low, high = ppi_f1_bootstrap(human[:n], judge[:n], truth[:n], judge[n:], truth[n:], seed=1)

    def estimator(y, yhat, e, u, eu):
        return ppi_f1(y, yhat, e, u, eu).estimate

    np.random.seed(0)  # ppi_py's resampler draws from numpy's global generator
    values = np.array(
        bootstrap(
            [human[:n], judge[:n], truth[:n], judge[n:], truth[n:]],
            estimator,
            n_resamples=4000,
            paired=[[0, 1, 2], [3, 4]],
        ),
        dtype=float,
    )
    ref_low, ref_high = np.nanpercentile(values, [2.5, 97.5])
    assert low == pytest.approx(ref_low, abs=0.03) and high == pytest.approx(ref_high, abs=0.03)
    # not the delta method's interval at n = 27 (the issue: [0.302, 0.813] vs [0.380, 0.842])
    delta = ppi_f1(human[:n], judge[:n], truth[:n], judge[n:], truth[n:])
    assert (low, high) != pytest.approx((delta.ci_low, delta.ci_high), abs=1e-3)
    # the same seed, the same interval; other seeds within a point
    again = ppi_f1_bootstrap(human[:n], judge[:n], truth[:n], judge[n:], truth[n:], seed=1)
    assert again == (low, high)
    for seed in (2, 3):
        other = ppi_f1_bootstrap(human[:n], judge[:n], truth[:n], judge[n:], truth[n:], seed=seed)
        assert other == pytest.approx((low, high), abs=0.01)


def test_ppi_table_gives_both_f1_intervals_labelled_and_warns_under_30_labels(biased):
    """The F1 rows carry the delta-method interval and the bootstrap one (`boot_ci_low`,
    `boot_ci_high`), and every row says whether it rests on fewer than 30 people's labels."""
    from core.ppi import MIN_LABELLED

    store, truth, _ = biased
    audit.create_audit(store, "a", ["run-a"], fraction=0.3, seed=1)
    label_sample(store, "a", truth)
    frame = jt.audit_ppi(store, "a")
    f1 = frame[frame["metric"] == "f1"]
    assert len(f1) and f1["boot_ci_low"].notna().all() and f1["boot_ci_high"].notna().all()
    assert (frame[frame["metric"] == "rate"]["boot_ci_low"].isna()).all()
    assert MIN_LABELLED == 30
    assert (frame["few_labels"] == (frame["n_human"] < 30)).all()
