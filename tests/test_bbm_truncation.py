"""cot_step answers cut at max_tokens (issue 20.3): their own status, the scan stops, a warning,
and a default max_tokens that fits the prompt's example answers."""

from __future__ import annotations

import json

from core.benchmarks.bbm.task import BbmTask, cot_max_tokens, trace_scores
from tests.fake_openai import FakeOpenAI
from tests.test_bbm_run import responder_for, run_bbm, sample

CUT = "Let me redo Thought 2: 12 - 5 is 7, and the stack then holds ( [ so the next"


def test_truncated_step_answer_is_its_own_status_and_stops_the_scan() -> None:
    steps = list("abcd")
    s = trace_scores("cot_step", steps, 2, ["Answer: Yes", CUT], [None, "length"])
    assert s["parse_status"] == "truncated" and s["step_answers"] == ["yes", "truncated"]
    assert s["predicted_index"] is None and not s["location_correct"]
    # not "no mistake" on a control trace either
    s = trace_scores("cot_step", steps, None, ["Answer: Yes", CUT], [None, "length"])
    assert s["parse_status"] == "truncated" and not s["location_correct"]
    # a "No" before the cut still decides; the same text without the "length" stop is no
    # truncation, only a reasoning that stops before its conclusion: ambiguous (h29r3)
    s = trace_scores("cot_step", steps, 0, ["Answer: No"], ["stop"])
    assert s["parse_status"] == "ok" and s["location_correct"]
    assert trace_scores("cot_step", steps, None, [CUT])["parse_status"] == "ambiguous"
    # a direct answer that was cut but still reads is read; an unreadable one is truncated
    assert trace_scores("direct_step", steps, 0, ["No, 3"], ["length"])["parse_status"] == "ok"
    t = trace_scores("direct_trace", steps, 1, ["Let me look at"], ["length"])
    assert t["parse_status"] == "truncated"


def test_cot_default_max_tokens_follows_the_examples() -> None:
    assert BbmTask("cot_step").max_tokens == cot_max_tokens([]) >= 512
    long_answer = "x" * 2200  # the paper's chain-of-thought examples run to ~2,200 characters
    assert cot_max_tokens([long_answer, "short"]) >= 2 * 2200 // 4

    class Paper:
        messages = ({"role": "user", "content": "q"}, {"role": "assistant", "content": long_answer})

    task = BbmTask("cot_step", paper={"word_sorting": Paper()})
    default = BbmTask("cot_step").max_tokens
    assert default is not None
    assert task.max_tokens == cot_max_tokens([long_answer]) > default
    assert BbmTask("cot_step", max_tokens=300).max_tokens == 300  # an explicit limit wins


def test_run_records_truncation_and_warns(initialised_store, capsys) -> None:
    traces = sample()
    respond = responder_for(traces)

    def fault(body):  # every second step of every trace is cut at max_tokens
        user = body["messages"][-1]["content"]
        if "Check Thought 2:" in user:
            return {"content": CUT, "finish_reason": "length"}
        return None

    with FakeOpenAI(responder=respond) as server:
        server.fault_fn = fault
        rc = run_bbm(server.url, "--method", "cot_step", "--run-name", "cut", "--quiet")
        assert rc == 0
        asked_step3 = [
            r
            for r in server.chat_requests
            if "Check Thought 3:" in r["body"]["messages"][-1]["content"]
        ]
        max_tokens = {r["body"].get("max_tokens") for r in server.chat_requests}
    err = capsys.readouterr().err
    store = initialised_store
    rows = store.df("SELECT item_id, status, metadata FROM results WHERE run_id = 'cut'")
    meta = [json.loads(m) for m in rows["metadata"]]
    # every trace that reaches step 2 (its step 1 was not a "No") is cut there
    reached = [m for m in meta if m["step_answers"][0] != "no"]
    cut = [m for m in meta if m["parse_status"] == "truncated"]
    assert cut == reached and all(m["step_answers"][1:] == ["truncated"] for m in cut)
    assert set(rows.loc[[m in cut for m in meta], "status"]) == {"truncated"}
    assert not asked_step3  # the scan stopped at the cut step
    assert max_tokens == {BbmTask("cot_step").max_tokens}
    warning = [line for line in err.splitlines() if line.startswith("warning:")]
    assert any(f"{len(cut)} trace(s)" in line and "max_tokens" in line for line in warning), err
