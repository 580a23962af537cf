"""A minimal benchmark added the way docs/adding-a-benchmark.md describes: one module (in a
real benchmark, a package under core/ declaring `BENCHMARK`), registered by hand. Used by
tests/test_registry.py to show every entry point finds it through the registry alone.

The benchmark: each item is a line of text; the model should repeat it; a response is correct
when it contains the item's text. Scored by code (no judge).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.engine.client import CallFailed
from core.engine.results import Response, Result
from core.engine.runner import add_run_args, execute_run, spec_from_args
from core.engine.task import RunContext, UnitResult, WorkUnit
from core.registry import (
    Benchmark,
    BenchmarkCommands,
    Imports,
    Option,
    Options,
    ResultsPage,
    RunField,
    Scored,
    Verb,
    register,
)
from core.store import Store, replace_item_set

NAME = "example"


def import_bytes(store: Store, data: bytes, filename: str, name: str) -> int:
    """One item per non-empty line; a line of only spaces is an error naming file and line."""
    lines = data.decode("utf-8").split("\n")
    problems = [
        f"{filename}:{n}: blank item"
        for n, line in enumerate(lines, 1)
        if line and not line.strip()
    ]
    if problems:
        raise ValueError("\n".join(problems))
    texts = [line for line in lines if line.strip()]
    frame = pd.DataFrame(
        {
            "item_id": [f"x{i}" for i in range(1, len(texts) + 1)],
            "benchmark": NAME,
            "prompt": texts,
            "item_set": name,
            "primary_category": "repeat",
        }
    )
    store.transaction(lambda con: replace_item_set(con, name, NAME, frame, origin=filename))
    return len(frame)


def score_stored(
    item: dict[str, Any],
    response: dict[str, Any],
    run: dict[str, Any] | None = None,  # noqa: ARG001 - `rescore` passes the run; not needed here
) -> Result:
    correct = str(item.get("prompt") or "") in str(response.get("response") or "")
    return Result(
        status="ok",
        answer="repeated" if correct else "not repeated",
        correct=correct,
        metadata={"correct": correct},
    )


@dataclass
class ExampleTask:
    variant: str = "plain"
    benchmark: str = NAME
    needs_judge: bool = False
    template_id: str = "example/plain.v1"

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        return [WorkUnit(str(i), self.variant) for i in items["item_id"]]

    async def process(
        self,
        unit: WorkUnit,  # noqa: ARG002 - the Task protocol; one unit per item here
        item: dict,
        ctx: RunContext,
    ) -> UnitResult:
        messages = [{"role": "user", "content": f"Repeat: {item['prompt']}"}]
        try:
            answer = await ctx.model.chat(messages, max_tokens=32)
        except CallFailed as exc:
            return UnitResult(Response.failed(str(exc), attempts=exc.attempts, messages=messages))
        result = score_stored(item, {"response": answer.text})
        return UnitResult(Response.answered(messages, answer, scores=result.metadata), result)


def metrics(store: Store, run_id: str) -> pd.DataFrame:
    rows = store.df("SELECT scores FROM responses WHERE run_id = ? AND status = 'ok'", [run_id])
    correct = [json.loads(s)["correct"] for s in rows["scores"]]
    return pd.DataFrame(
        [
            {
                "source": run_id,
                "n": len(correct),
                "accuracy": 100 * sum(correct) / len(correct) if correct else None,
            }
        ]
    )


IMPORT_OPTIONS = (
    Option("path"),
    Option("--name", required=True),
)


def do_import(args: argparse.Namespace) -> int:
    path = Path(args.path)
    n = import_bytes(Store.open(args.db), path.read_bytes(), path.name, args.name)
    print(f"imported {n} items")
    return 0


def configure_run(parser: argparse.ArgumentParser) -> None:
    add_run_args(parser)  # --variant comes from the declared run_fields below


def do_run(args: argparse.Namespace) -> int:
    spec = spec_from_args(
        args, NAME, setting=args.variant, mode="passive", template_id=ExampleTask.template_id
    )
    print(execute_run(Store.open(args.db), spec, ExampleTask(args.variant), progress=False))
    return 0


METRICS_OPTIONS = (Option("--source", required=True),)


def do_metrics(args: argparse.Namespace) -> int:
    sys.stdout.write(metrics(Store.open(args.db), args.source).to_csv(index=False))
    return 0


COMMANDS = BenchmarkCommands(
    import_=Options(IMPORT_OPTIONS, do_import),
    run=Verb(configure_run, do_run),
    metrics=Options(METRICS_OPTIONS, do_metrics),
)


BENCHMARK = Benchmark(
    name=NAME,
    label="Example",
    description="Example (repeat a line)",
    variant_name="variant",
    variants=("plain",),
    mode="passive",
    imports=Imports(
        word=NAME,
        help="import lines",
        files=("txt",),
        importer=lambda: import_bytes,
    ),
    cli=lambda: COMMANDS,
    task=lambda: ExampleTask,
    scoring=Scored(
        scorer=lambda: score_stored,
    ),
    results_page=ResultsPage(
        path="pages/overview.py",
        title="Overview",
    ),
    run_fields=(RunField("--variant", "Variant", "select", ("plain",), "plain"),),
)


def install() -> Benchmark:
    return register(BENCHMARK)
