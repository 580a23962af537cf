"""End to end: `python -m core run bbm` against the scripted local server (tests/fake_openai.py).

The responder plays a model with a scripted belief per trace (a step number, "No", or garbage),
answering the trace-level question with it and each step-level question Yes/No by step. Expected
scores are computed here from the script and the gold, independently of core.benchmarks.bbm.metrics.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import f1_score

from core.cli import main as cli
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "bbm_sample.jsonl"
LABEL = {
    "word_sorting": "Word sorting",
    "tracking_shuffled_objects": "Tracking shuffled objects",
    "logical_deduction": "Logical deduction",
    "multistep_arithmetic": "Multistep arithmetic",
    "dyck_languages": "Dyck languages",
}

# per sample line (1-based): (direct_trace reply, believed first wrong step or None or "garbage")
SCRIPT = {
    1: ("No", None),
    2: ("Thought 4", 4),
    3: ("2", 2),
    4: ("The first mistake is in step 1.", 1),
    5: ("blah", "garbage"),
    6: ("No", None),
    7: ("3", 3),
    8: ("No mistakes.", None),
    9: ("No", None),
    10: ("**No**", None),
    11: ("6", 6),
    12: ("99", 99),
}


def sample():
    return [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


def responder_for(traces):
    by_input = {t["input"]: (n, t) for n, t in enumerate(traces, start=1)}

    def respond(body):
        user = body["messages"][-1]["content"]
        question = user.split("Question:\n", 1)[1].split("\n\nStep-by-step answer", 1)[0]
        n, trace = by_input[question]
        reply, belief = SCRIPT[n]
        m = re.search(r"Is Thought (\d+) correct|Check Thought (\d+):", user)
        if m is None:  # trace level
            return reply
        step = int(m.group(1) or m.group(2))
        if belief == "garbage":
            return "Hmm, let me see."  # nothing readable (a hedge would be `ambiguous`)
        cot = "Let me redo this step. " if m.group(2) else ""
        verdict = "No" if belief == step else "Yes"
        return f"{cot}Answer: {verdict}" if cot else verdict

    return respond


def expected(method: str):
    """Per task: (accuracy, with, without, weighted F1, unparsable %, out-of-range %) from the
    script."""
    rows = []
    for n, t in enumerate(sample(), start=1):
        reply, belief = SCRIPT[n]
        steps = len(t["steps"])
        out_of_range = False
        if belief == "garbage":
            pred, readable = None, False
        elif isinstance(belief, int) and belief > steps:
            pred, readable = None, method != "direct_trace"  # a step method never asks step 99
            out_of_range = method == "direct_trace"
        else:
            pred, readable = (belief - 1 if isinstance(belief, int) else None), True
        gold = t["mistake_index"]
        rows.append(
            {
                "task": LABEL[t["task"]],
                "gold": gold,
                "right": readable and pred == gold,
                "unreadable": not readable and not out_of_range,
                "out_of_range": out_of_range,
                "true": "c" if t["answer"].strip() == t["target"].strip() else "i",
                "pred_label": "i"
                if isinstance(belief, int) and (method == "direct_trace" or belief <= steps)
                else "c",
            }
        )
    f = pd.DataFrame(rows)
    out = {}
    for task, g in f.groupby("task"):
        w = g[g["gold"].notna()]
        wo = g[g["gold"].isna()]
        out[task] = (
            100 * g["right"].mean(),
            100 * w["right"].mean() if len(w) else None,
            100 * wo["right"].mean() if len(wo) else None,
            100 * f1_score(g["true"], g["pred_label"], average="weighted", zero_division=0),
            100 * g["unreadable"].mean(),
            100 * g["out_of_range"].mean(),
        )
    return out


def metrics(run_id, capsys):
    capsys.readouterr()
    assert cli(["metrics", "bbm", "--source", run_id]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


def run_bbm(url: str, *args: str, model: str = "scripted", items: str = "bbm-sample") -> int:
    """`python -m core run bbm --items ITEMS --base-url URL --model MODEL ARGS` in this process."""
    return cli(["run", "bbm", "--items", items, "--base-url", url, "--model", model, *args])


def get(m, task, measure, subset="all"):
    hit = m[(m["task"] == task) & (m["measure"] == measure) & (m["subset"] == subset)]
    return None if hit.empty else float(hit["value"].iloc[0])


@pytest.mark.parametrize("method", ["direct_trace", "direct_step", "cot_step"])
def test_run_each_method_end_to_end(initialised_store, capsys, method):
    traces = sample()
    with FakeOpenAI(responder=responder_for(traces)) as server:
        rc = run_bbm(server.url, "--method", method, "--run-name", f"e2e-{method}", "--quiet")
        assert rc == 0
        calls = server.chat_requests
    store = initialised_store
    run = store.df("SELECT * FROM runs WHERE run_id = ?", [f"e2e-{method}"]).iloc[0]
    assert run["benchmark"] == "bbm" and run["setting"] == method
    assert run["template_id"] == f"bbm/{method}.v1" and run["status"] == "done"
    resp = store.df("SELECT * FROM responses WHERE run_id = ? ORDER BY item_id", [f"e2e-{method}"])
    assert len(resp) == len(traces) and set(resp["variant"]) == {method}
    assert (resp["status"] == "ok").all()

    # step methods stop at the first "No": calls = believed step, else every step
    expected_calls = 0
    for n, t in enumerate(traces, start=1):
        belief = SCRIPT[n][1]
        if method == "direct_trace":
            expected_calls += 1
        elif isinstance(belief, int) and belief <= len(t["steps"]):
            expected_calls += belief
        else:
            expected_calls += len(t["steps"])
    assert len(calls) == expected_calls
    for body in (c["body"] for c in calls):
        assert body["model"] == "scripted" and body["temperature"] == 0

    scores = {r.item_id: json.loads(r.scores) for r in resp.itertuples()}
    if method != "direct_trace":
        s = scores["bbm_sample:2"]  # believed step 4: Yes, Yes, Yes, No
        assert s["step_answers"] == ["yes", "yes", "yes", "no"] and s["predicted_index"] == 3
        assert scores["bbm_sample:5"]["parse_status"] == "unparsable"
    else:
        assert scores["bbm_sample:5"]["parse_status"] == "unparsable"
        assert scores["bbm_sample:12"]["parse_status"] == "out_of_range"
        assert scores["bbm_sample:4"]["predicted_index"] == 0

    m = metrics(f"e2e-{method}", capsys)
    assert set(m["source"]) == {f"e2e-{method}"} and set(m["model"]) == {"scripted"}
    exp = expected(method)
    for task, (acc, with_m, without_m, wf1, unp, oor) in exp.items():
        assert get(m, task, "mistake_location_accuracy") == pytest.approx(acc)
        assert get(m, task, "mistake_location_accuracy", "traces_with_mistake") == (
            None if with_m is None else pytest.approx(with_m)
        )
        assert get(m, task, "mistake_location_accuracy", "traces_without_mistake") == (
            None if without_m is None else pytest.approx(without_m)
        )
        assert get(m, task, "weighted_f1_answer_correctness") == pytest.approx(wf1)
        assert get(m, task, "unparsable_answers") == pytest.approx(unp)
        assert get(m, task, "out_of_range_answers") == pytest.approx(oor)
    overall = sum(v[0] for v in exp.values()) / len(exp)
    assert get(m, "Overall", "mistake_location_accuracy") == pytest.approx(overall)
    if method == "direct_trace":  # hand check: word sorting 1 ✓, 2 ✓, 12 ✗ (step 99 of 5)
        assert get(m, "Word sorting", "mistake_location_accuracy") == pytest.approx(200 / 3)


def test_failed_call_is_recorded_then_resumed(initialised_store, capsys):
    traces = sample()
    target = traces[2]["input"]  # the flags trace: fail its 2nd step-level call, for good

    def fault(body):
        user = body["messages"][-1]["content"]
        if target in user and "Is Thought 2 correct" in user:
            return {"status": 400, "message": "scripted refusal"}
        return None

    with FakeOpenAI(responder=responder_for(traces), fault_fn=fault) as server:
        rc = run_bbm(server.url, "--method", "direct_step", "--run-name", "e2e-fail", "--quiet")
        port = server.port  # a resume must use the same endpoint URL
    assert rc == 1
    store = initialised_store
    row = store.df(
        "SELECT status, error, scores FROM responses WHERE run_id = 'e2e-fail' "
        "AND item_id = 'bbm_sample:3'"
    ).iloc[0]
    assert row["status"] == "failed" and "scripted refusal" in row["error"]
    assert json.loads(row["scores"])["step_answers"] == ["yes"]
    from core.benchmarks.bbm.queries import run_counts

    assert run_counts(store, "e2e-fail")["failed"] == 1
    m = metrics("e2e-fail", capsys)  # the failed trace is left out: TSO has one scored trace
    assert get(m, "Tracking shuffled objects", "mistake_location_accuracy") == 0.0
    assert (
        get(m, "Tracking shuffled objects", "mistake_location_accuracy", "traces_with_mistake")
        is None
    )

    with FakeOpenAI(responder=responder_for(traces), port=port) as server:  # only the failed
        rc = run_bbm(
            server.url, "--method", "direct_step", "--run-name", "e2e-fail", "--quiet", "--no-cache"
        )
        assert rc == 0
        assert len(server.chat_requests) == 2  # SCRIPT[3] believes step 2: Yes, No
    assert store.scalar(
        "SELECT count(*) FROM responses WHERE run_id = 'e2e-fail' AND status = 'ok'"
    ) == len(traces)


def test_template_flag_takes_the_full_id_of_the_method(initialised_store, capsys):
    """`--template bbm/<method>.vN` (one spelling, as for ErrorBench); a short spelling or
    another method's template is refused naming the valid ids; the old `--template-version`
    still runs, with a deprecation warning."""
    with FakeOpenAI(responder=responder_for(sample())) as server:
        rc = run_bbm(server.url, "--method", "direct_step", "--template", "bbm/direct_step.v1",
                     "--run-name", "t-full", "--quiet")  # fmt: skip
        assert rc == 0
        for bad in ("direct_step.v1", "v1", "bbm/direct_trace.v1"):
            assert exit_code(run_bbm, server.url, "--method", "direct_step", "--template", bad) == 2
            assert "bbm/direct_step.v1" in capsys.readouterr().err
        rc = run_bbm(server.url, "--method", "direct_step", "--template-version", "v1",
                     "--run-name", "t-old", "--quiet")  # fmt: skip
        assert rc == 0
        assert "deprecated; use --template bbm/direct_step.v1" in capsys.readouterr().err
    ids = dict(initialised_store.rows("SELECT run_id, template_id FROM runs"))
    assert ids == {"t-full": "bbm/direct_step.v1", "t-old": "bbm/direct_step.v1"}


def exit_code(fn, *args: str) -> int:  # noqa: ANN001 - a CLI entry point of the tests
    """The command's exit code, also when argparse refuses a flag value (SystemExit)."""
    try:
        return int(fn(*args))
    except SystemExit as exc:
        return int(exc.code or 0)


def test_run_rejects_unknown_set_and_limit_works(initialised_store, capsys):
    traces = sample()
    with FakeOpenAI(responder=responder_for(traces)) as server:
        rc = run_bbm(server.url, "--method", "direct_trace", "--quiet", model="x", items="nope")
        assert rc != 0
        assert "nope" in capsys.readouterr().err
        rc = run_bbm(
            server.url, "--method", "direct_trace", "--quiet", model="x", items="misprompt-sample"
        )
        assert rc != 0
        rc = run_bbm(
            server.url,
            "--method",
            "direct_trace",
            "--limit",
            "3",
            "--run-name",
            "lim",
            "--quiet",
            model="x",
        )
        assert rc == 0
    assert initialised_store.scalar("SELECT count(*) FROM responses WHERE run_id='lim'") == 3


def test_smollm_by_url_is_marked_weak(initialised_store, capsys):
    with FakeOpenAI(responder=responder_for(sample())) as server:
        rc = run_bbm(
            server.url,
            "--method",
            "direct_trace",
            "--run-name",
            "weak",
            "--limit",
            "2",
            "--quiet",
            model="SmolLM2-135M-Instruct",
        )
        assert rc == 0 and "weak model" in capsys.readouterr().err
        rc = run_bbm(
            server.url,
            "--method",
            "direct_trace",
            "--run-name",
            "strong",
            "--limit",
            "2",
            "--quiet",
        )
        assert rc == 0 and "weak model" not in capsys.readouterr().err
    weak = dict(initialised_store.rows("SELECT run_id, weak_model FROM runs"))
    assert weak == {"weak": True, "strong": False}


def test_few_shot_exemplars_are_same_task_gold_turns(initialised_store):
    traces = sample()
    with FakeOpenAI(responder=responder_for(traces)) as server:
        rc = run_bbm(
            server.url, "--method", "direct_trace", "--run-name", "shots", "--shots", "2", "--quiet"
        )
        assert rc == 0
        bodies = [c["body"] for c in server.chat_requests]
    assert (
        initialised_store.scalar("SELECT template_id FROM runs WHERE run_id = 'shots'")
        == "bbm/direct_trace.v1+2shot"
    )
    by_question = {}
    for body in bodies:
        q = body["messages"][-1]["content"].split("Question:\n", 1)[1].split("\n\n", 1)[0]
        by_question[q] = body["messages"]
    # multistep arithmetic has three sample traces: each sees the other two, never itself
    ma = [t for t in traces if t["task"] == "multistep_arithmetic"]
    for t in ma:
        msgs = by_question[t["input"].split("\n\n")[0]]
        assert [m["role"] for m in msgs] == [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
        ]
        shown = [m["content"] for m in msgs[1:5:2]]
        others = [o for o in ma if o is not t]
        for content, other in zip(shown, others):
            assert other["input"] in content and t["input"] not in content
        gold = ["No" if o["mistake_index"] is None else str(o["mistake_index"] + 1) for o in others]
        assert [m["content"] for m in msgs[2:5:2]] == gold
    # dyck has two traces: one exemplar each (the other one)
    dy = [t for t in traces if t["task"] == "dyck_languages"]
    msgs = by_question[dy[0]["input"]]
    assert len(msgs) == 4 and dy[1]["input"] in msgs[1]["content"]


def test_few_shot_step_method_shows_gold_step(initialised_store):
    from core.benchmarks.bbm.task import BbmTask, Exemplar

    ex = {
        "word_sorting": [
            Exemplar("a", "q1", ("s1", "s2", "s3"), 1),
            Exemplar("b", "q2", ("t1", "t2"), None),
        ]
    }
    task = BbmTask("cot_step", shots=2, exemplars=ex)
    turns = task.shot_turns("word_sorting", "another question")
    assert [a for _, a in turns] == ["Answer: No", "Answer: Yes"]
    assert turns[0][0]["step"] == "2" and "Thought 3" not in turns[0][0]["trace"]
    assert turns[1][0]["step"] == "2" and "Thought 2: t2" in turns[1][0]["trace"]
    assert task.shot_turns("word_sorting", "q1")[0][0]["input"] == "q2"  # never itself
    assert task.shot_turns("dyck_languages", "x") == []
    assert task.template_id == "bbm/cot_step.v1+2shot"


def test_resuming_a_run_keeps_its_max_tokens_when_none_is_given(initialised_store, capsys):
    """A run started with another limit (e.g. cot_step's old default, 512) resumes without
    --max-tokens: the stored limit is reused, not the method's new default (which the resume
    check would refuse as a changed parameter)."""
    traces = sample()
    with FakeOpenAI(responder=responder_for(traces)) as server:
        args = ("--method", "cot_step", "--run-name", "old-limit", "--quiet")
        assert run_bbm(server.url, *args, "--max-tokens", "512", "--limit", "2") == 0
        assert run_bbm(server.url, *args) == 0
        asked = {r["body"].get("max_tokens") for r in server.chat_requests}
    assert asked == {512}
    capsys.readouterr()
