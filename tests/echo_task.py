"""A tiny task for tests and benchmarks (`python -m tests.echo_task`): every engine path — a
model call, a judge call with a JSON-schema response format, failures — with no benchmark."""

from __future__ import annotations

import gc

if __name__ == "__main__":  # as python -m core: before the imports (core/startup.py)
    from core.startup import quiet_start

    quiet_start()

import argparse
import json
import sys
from dataclasses import dataclass

import pandas as pd

from core.engine.client import CallFailed
from core.engine.endpoints import Endpoint
from core.engine.results import Response, Result
from core.engine.runner.execute import _failed_response, execute_run
from core.engine.runner.spec import RunSpec, add_run_args, spec_from_args
from core.engine.task import RunContext, UnitResult, WorkUnit
from core.store import DatabaseError, Store, replace_item_set

# -- a tiny task for tests and benchmarks ----------------------------------------------------

ECHO_JUDGE_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "echo_verdict",
        "schema": {
            "type": "object",
            "properties": {"detection": {"type": "boolean"}, "rationale": {"type": "string"}},
            "required": ["detection", "rationale"],
        },
    },
}


@dataclass
class EchoTask:
    """One model call per item (its prompt), then one judge call with a JSON schema.

    Exercises everything a real benchmark does (two roles, verdict rows, failures) without
    benchmark logic; used by the runner's tests, the jobs test and bench/bench_runner.py.
    """

    benchmark: str = "echo"
    needs_judge: bool = True
    variant: str = "echo"
    max_tokens: int = 64

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        return [WorkUnit(str(i), self.variant) for i in items["item_id"]]

    async def process(self, unit: WorkUnit, item: dict, ctx: RunContext) -> UnitResult:
        messages = [{"role": "user", "content": str(item.get("prompt") or "")}]
        try:
            answer = await ctx.model.chat(messages, max_tokens=self.max_tokens)
        except CallFailed as exc:
            return UnitResult(_failed_response(str(exc), exc.attempts, messages))
        response = Response.answered(messages, answer, scores={"length": len(answer.text)})
        if not self.needs_judge or ctx.judge is None:
            return UnitResult(response)
        judge_messages = [
            {"role": "system", "content": "Does the answer repeat the question?"},
            {"role": "user", "content": f"Q: {messages[0]['content']}\nA: {answer.text}"},
        ]
        try:
            verdict_call = await ctx.judge.chat(
                judge_messages, max_tokens=64, response_format=ECHO_JUDGE_SCHEMA, role="judge"
            )
        except CallFailed as exc:
            return UnitResult(response, Result.failed(str(exc)))
        try:
            parsed = json.loads(verdict_call.text)
            detected = bool(parsed["detection"])
            verdict = Result(
                status="ok",
                answer="D" if detected else "∅",
                labels={"detection": detected},
                explanation=str(parsed.get("rationale", "")),
                parse_note="schema",
            )
        except (ValueError, KeyError, TypeError) as exc:
            verdict = Result.failed(f"unparsable judge output: {exc}")
        verdict.raw = verdict_call.text
        verdict.prompt_tokens = verdict_call.prompt_tokens
        verdict.completion_tokens = verdict_call.completion_tokens
        verdict.latency_ms = verdict_call.latency_ms
        verdict.cost_usd = verdict_call.cost_usd
        return UnitResult(response, verdict)


def bench_spec(run_id: str, url: str, concurrency: int, model: str = "fake-model") -> RunSpec:
    """An echo run over the item set "bench" against `url` (the benches' throughput runs)."""
    endpoint = Endpoint("bench", (url,), model, max_concurrency=concurrency, timeout_s=60)
    return RunSpec(
        run_id=run_id,
        benchmark="echo",
        item_set="bench",
        endpoint=endpoint,
        setting="echo",
        concurrency=concurrency,
    )


def create_item_set(store: Store, name: str, benchmark: str, prompts: list[str]) -> None:
    """Test/bench helper: an item set of plain prompts (item ids i0001, i0002, ...)."""
    frame = pd.DataFrame(
        {
            "item_set": name,
            "item_id": [f"i{i:05d}" for i in range(1, len(prompts) + 1)],
            "benchmark": benchmark,
            "prompt": prompts,
        }
    )

    store.transaction(lambda con: replace_item_set(con, name, benchmark, frame, origin="test"))


def _echo_main(argv: list[str] | None = None) -> int:
    """`python -m tests.echo_task --items SET …`: the EchoTask from a command line (tests only)."""
    from core.cli import add_db_arg, end_startup

    parser = argparse.ArgumentParser(
        prog="python -m tests.echo_task", description="run the test-only EchoTask"
    )
    add_run_args(parser, judge=True)
    add_db_arg(parser)
    parser.add_argument("--no-judge", action="store_true")
    args = parser.parse_args(argv)
    store = Store.open(args.db)
    spec = spec_from_args(args, "echo", setting="echo")
    end_startup()
    try:
        summary = execute_run(
            store, spec, EchoTask(needs_judge=not args.no_judge), progress=not args.quiet
        )
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(summary)
    return 0 if summary.status in ("done", "cancelled") else 1


if __name__ == "__main__":
    code = _echo_main()
    gc.freeze()  # as core/__main__.py: no last full collection on the way out
    sys.exit(code)
