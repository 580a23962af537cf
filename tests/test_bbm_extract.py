"""The optional LLM extraction step for BBM answers (issue 29, point 3): `rescore` with a judge
endpoint asks an extractor model to read each stored answer, and records its readings as a
judging of its own (kind judge, its model named), beside the parser's `default` — auditable
like any judge. The extractor is the scripted server of tests/fake_openai.py."""

from __future__ import annotations

import json
import re

from core.benchmarks.bbm.extract import read_step_reply, read_trace_reply
from core.cli import main as cli
from core.store import Store
from tests.fake_openai import FakeOpenAI
from tests.test_bbm_run import SCRIPT, responder_for, run_bbm, sample

ANSWER = re.compile(r"<<<\n(.*?)\n>>>", re.S)


def extractor(body: dict) -> str:
    """Reads the answer it is shown: a number or "Thought N" is that step, "No…" is null,
    anything else is ambiguous."""
    found = ANSWER.search(body["messages"][-1]["content"])
    assert found is not None, body
    answer = found.group(1)
    m = re.search(r"(\d+)", answer)
    if m:
        return json.dumps({"first_wrong_step": int(m.group(1)), "ambiguous": False})
    if answer.strip("*. ").lower().startswith("no"):
        return json.dumps({"first_wrong_step": None, "ambiguous": False})
    return json.dumps({"first_wrong_step": None, "ambiguous": True})


def test_extraction_is_a_judging_of_its_own_that_reads_only_the_answer(initialised_store):
    store: Store = initialised_store
    traces = sample()
    with FakeOpenAI(responder=responder_for(traces)) as server:
        assert run_bbm(server.url, "--method", "direct_trace", "--run-name", "tr", "--quiet") == 0
    parser_rows = "SELECT * FROM results WHERE run_id = 'tr' AND judging = 'default'"
    before = sorted(store.rows(parser_rows), key=repr)
    assert len(before) == len(SCRIPT)
    with FakeOpenAI(responder=extractor) as ext:
        args = ["rescore", "--source", "tr", "--judge-base-url", ext.url]
        args += ["--judge-model", "reader-llm", "--as", "llm-read", "--quiet", "--no-cache"]
        assert cli([*args, "--db", str(store.path)]) == 0
        requests = ext.chat_requests
    kind, model, template = store.rows(
        "SELECT kind, judge_model, template_id FROM judgings WHERE run_id = 'tr' "
        "AND judging = 'llm-read'"
    )[0]
    assert (kind, model, template) == ("judge", "reader-llm", "bbm/extract.v1")
    assert len(requests) == len(traces)  # --no-cache: identical answers are asked each time
    for r in requests:
        body = r["body"]
        assert body["response_format"]["json_schema"]["name"] == "bbm_answer_claim"
        shown = "\n".join(m["content"] for m in body["messages"])
        assert "Thought 1:" not in shown  # the trace (and so the gold) is never shown
    got = {
        item: (status, json.loads(meta))
        for item, status, meta in store.rows(
            "SELECT item_id, status, metadata FROM results WHERE run_id = 'tr' "
            "AND judging = 'llm-read'"
        )
    }
    assert got["bbm_sample:5"][0] == "ambiguous"  # "blah"
    assert got["bbm_sample:2"][1]["predicted_step"] == 4  # "Thought 4"
    assert got["bbm_sample:12"][0] == "out_of_range"  # "99"
    assert got["bbm_sample:8"][1]["predicted_step"] is None and got["bbm_sample:8"][0] == "ok"
    assert all(m["extractor_replies"] for _, m in got.values())
    assert len(got) == len(SCRIPT)
    # the parser's judging is untouched
    assert sorted(store.rows(parser_rows), key=repr) == before


def test_extractor_replies_are_read_strictly() -> None:
    assert read_trace_reply('{"first_wrong_step": 3, "ambiguous": false}', 8).step == 3
    assert (
        read_trace_reply('{"first_wrong_step": 9, "ambiguous": false}', 8).status == "out_of_range"
    )
    assert (
        read_trace_reply('{"first_wrong_step": null, "ambiguous": true}', 8).status == "ambiguous"
    )
    assert read_trace_reply("Thought 3", 8).status == "unparsable"  # not the schema's JSON
    assert read_step_reply('{"step_correct": false, "ambiguous": false}') == "no"
    assert read_step_reply('{"step_correct": null, "ambiguous": false}') == "ambiguous"
    assert read_step_reply("yes") == "unparsable"
