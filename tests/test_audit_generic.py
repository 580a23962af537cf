"""The judge audit is generic over LLM-judged benchmarks with named labels (issue 16).

A test-only benchmark with two labels (`found`, `fixed`) is registered beside Mis-prompt; its
runs are audited through core.services.audit with nothing but its registry entry: the labels
come from `labels`, are read from `results.labels`, help texts from `label_help`, and it has
no `label_metrics` (so no F1 table).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from core import registry
from core.services import audit
from core.store import Store
from tests.audit_fixtures import add_items, add_judged_run

NAME = "twolabel"
LETTERS = {"found": "F", "fixed": "X"}
HELP = {"found": "It notices the problem.", "fixed": "It fixes it."}
BENCH = registry.Benchmark(
    name=NAME,
    label="Two labels",
    description="Two labels (test only)",
    variant_name="variant",
    variants=("plain",),
    mode="proactive",
    imports=registry.Imports(
        word=NAME,
        help="",
        files=(),
        importer=lambda: None,  # type: ignore[arg-type,return-value]
    ),
    cli=lambda: sys.modules[__name__],  # type: ignore[arg-type,return-value]
    task=lambda: None,  # type: ignore[arg-type,return-value]
    scoring=registry.Judged(
        judge=lambda: None,  # type: ignore[arg-type,return-value]
        template=lambda: None,  # type: ignore[arg-type,return-value]
        labels=lambda: LETTERS,
        label_help=lambda: HELP,
    ),
    results_page=registry.ResultsPage(path="pages/overview.py", title="Overview"),
)


@pytest.fixture
def store(tmp_path, monkeypatch) -> Store:
    monkeypatch.setitem(registry.BENCHMARKS, NAME, BENCH)
    return Store.open(tmp_path / "generic.duckdb")


def add_two_label_run(store: Store, run_id: str, n: int = 12, seed: int = 3) -> dict:
    """A judged run of the test benchmark: one ok response and one labelled result per item."""
    rng = np.random.default_rng(seed)
    items = [f"t-{k:02d}" for k in range(n)]
    store.execute(
        "INSERT INTO items (item_set, item_id, benchmark, is_error, primary_category, prompt) "
        f"SELECT 'two-set', i, ?, true, 'cat-' || (k % 2), 'prompt ' || i "
        f"FROM (SELECT unnest(?) AS i, unnest(range({n})) AS k)",
        [NAME, items],
    )
    store.execute(
        "INSERT INTO runs (run_id, benchmark, kind, item_set, model, endpoint, setting, mode, "
        "judge_model, status, n_planned) VALUES (?, ?, 'eval', 'two-set', 'model-t', 'test', "
        "'plain', 'proactive', 'judge-model', 'done', ?)",
        [run_id, NAME, n],
    )
    judged = {i: {l: bool(rng.random() < 0.5) for l in LETTERS} for i in items}
    for i in items:
        store.execute(
            "INSERT INTO responses (run_id, item_id, variant, status, response) "
            "VALUES (?, ?, 'plain', 'ok', 'an answer')",
            [run_id, i],
        )
        store.execute(
            "INSERT INTO results (run_id, judging, item_id, variant, status, judge_model, labels, "
            "metadata) VALUES (?, 'default', ?, 'plain', 'ok', 'judge-model', ?, ?)",
            [run_id, i, json.dumps(judged[i]), json.dumps({"rationales": {"found": "why " + i}})],
        )
    return judged


def test_the_labels_come_from_the_registry(store):
    labels = audit.label_set(NAME)
    assert labels.names == ("found", "fixed")
    assert labels.letters == LETTERS and labels.help == HELP
    with pytest.raises(audit.AuditError, match="cannot be audited"):
        audit.label_set("errorbench")  # code-scored: no judge labels


def test_a_two_label_benchmark_is_audited_through_its_registry_entry(store):
    judged = add_two_label_run(store, "two-1")
    runs = audit.auditable_runs(store)
    assert runs[["run_id", "benchmark", "n_verdicts"]].values.tolist() == [
        ["two-1", NAME, len(judged)]
    ]
    info = audit.create_audit(store, "g", ["two-1"], fraction=1.0, seed=0)
    assert info.n_sampled == len(judged)
    assert audit.label_set_of_audit(store, "g").names == ("found", "fixed")

    queue = audit.audit_queue(store, "g")
    assert "detection" not in queue
    for row in queue.to_dict("records"):
        assert (row["found"], row["fixed"]) == (
            judged[row["item_id"]]["found"],
            judged[row["item_id"]]["fixed"],
        )
        assert json.loads(row["rationales"]) == {"found": "why " + row["item_id"]}

    with pytest.raises(audit.AuditError, match="unknown label"):
        audit.save_labels(store, "two-1", queue.item_id[0], "plain", "ann", {"detection": True})
    mine = {}
    for k, row in enumerate(queue.to_dict("records")):
        mine[row["item_id"]] = {"found": k % 3 == 0, "fixed": bool(row["fixed"])}
        audit.save_labels(store, "two-1", row["item_id"], "plain", "ann", mine[row["item_id"]])
    assert audit.progress(store, "g", "ann") == {"total": len(judged), "done": len(judged)}
    assert audit.next_position(store, "g", "ann") is None

    table = audit.agreement_table(audit.audit_labels(store, "g"), names=("found", "fixed"))
    assert list(table["label"]) == ["found", "fixed"]
    ids = sorted(judged)
    for label, kappa in zip(table["label"], table["cohen_kappa"]):
        expected = cohen_kappa_score([judged[i][label] for i in ids], [mine[i][label] for i in ids])
        assert kappa == pytest.approx(1.0 if np.isnan(expected) else expected)

    f1 = audit.f1_comparison(store, "g")  # no label_metrics: no F1 rows, its columns
    assert f1.empty and list(f1.columns)[-3:] == ["found", "fixed", "average"]


def test_an_audit_samples_one_benchmarks_runs(store):
    add_two_label_run(store, "two-1")
    items = add_items(store, n_per_category=2, n_controls=2)
    add_judged_run(store, "mp-1", "model-m", items, seed=1)
    with pytest.raises(audit.AuditError, match="one benchmark"):
        audit.create_audit(store, "mixed", ["two-1", "mp-1"], fraction=1.0)
    assert set(audit.auditable_runs(store)["benchmark"]) == {NAME, "misprompt"}


def test_an_import_checks_labels_against_the_runs_benchmark(store):
    add_two_label_run(store, "two-1")
    header = "run_id,item_id,variant,annotator,label,value\n"
    with pytest.raises(audit.AuditError, match="label 'detection' is not one of found, fixed"):
        audit.import_labels_csv(store, header + "two-1,t-00,plain,ann,detection,true\n")
    result = audit.import_labels_csv(store, header + "two-1,t-00,plain,ann,found,true\n")
    assert (result.written, result.rows) == (1, 1)
