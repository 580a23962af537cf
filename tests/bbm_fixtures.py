"""Shared set-up for the BBM page tests: a scripted direct_trace run of the sample (real HTTP)."""

from __future__ import annotations

from tests.fake_openai import FakeOpenAI
from tests.test_bbm_run import responder_for, run_bbm, sample

RUN_ID = "bbm-scripted-direct_trace"


def scripted_run(
    method: str = "direct_trace", run_id: str = RUN_ID, model: str = "scripted"
) -> str:
    with FakeOpenAI(responder=responder_for(sample())) as server:
        rc = run_bbm(server.url, "--method", method, "--run-name", run_id, "--quiet", model=model)
    assert rc == 0
    return run_id
