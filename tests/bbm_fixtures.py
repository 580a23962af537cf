"""Shared set-up for the BBM page tests: a scripted direct_trace run of the sample (real HTTP)."""

from __future__ import annotations

from tests.fake_openai import FakeOpenAI
from tests.test_bbm_run import responder_for, sample

RUN_ID = "bbm-scripted-direct_trace"


def scripted_run(
    method: str = "direct_trace", run_id: str = RUN_ID, model: str = "scripted"
) -> str:
    from core.cli import main as cli

    with FakeOpenAI(responder=responder_for(sample())) as server:
        rc = cli(
            [
                "run",
                "bbm",
                "--items",
                "bbm-sample",
                "--base-url",
                server.url,
                "--model",
                model,
                "--method",
                method,
                "--run-name",
                run_id,
                "--quiet",
            ]
        )
    assert rc == 0
    return run_id
