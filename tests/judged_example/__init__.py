"""An LLM-judged example benchmark, added exactly the way docs/adding-a-benchmark.md says:
one package declaring `BENCHMARK = Benchmark(...)` in its `__init__.py` (a shipped one lives
under core/benchmarks/ and is found there; this one lives under tests/ and is found through the
`ehw.benchmarks` entry-point group once installed, see tests/test_judged_example.py).

The benchmark: each item is a question, most with a planted error (a false premise), some
without (controls). The model answers; an LLM judge says whether the answer `noticed` the
error and whether it `fixed` it (two named labels). Used by tests/test_judged_example.py,
which drives every entry point (CLI, pages) with it through the registry alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.registry import Benchmark, Imports, Judged, ResultsPage, RunField

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from core.engine.task import Task
    from core.registry import BenchmarkCommands, Importer, Judge, TemplateChooser

NAME = "judged"
VARIANTS = ("plain",)


def _commands() -> BenchmarkCommands:
    from .commands import COMMANDS

    return COMMANDS


def _import_bytes() -> Importer:
    from .items import import_bytes

    return import_bytes


def _task() -> type[Task]:
    from .task import JudgedTask

    return JudgedTask


def _judge() -> Judge:
    from .record import judge

    return judge


def _judge_template_id() -> TemplateChooser:
    from .prompts import judge_template_id

    return judge_template_id


def _labels() -> Mapping[str, str]:
    from .record import LABEL_LETTERS

    return LABEL_LETTERS


def _views() -> str:
    from .record import VIEWS

    return VIEWS


def _judge_templates() -> Sequence[str]:
    from .prompts import judge_templates

    return judge_templates()


BENCHMARK = Benchmark(
    name=NAME,
    label="Judged example",
    description="Judged example (planted errors; judged)",
    variant_name="variant",
    variants=VARIANTS,
    mode="proactive",
    imports=Imports(
        word=NAME,
        help="import judged-example questions (JSONL)",
        files=("jsonl",),
        importer=_import_bytes,
        label="Judged example questions",
    ),
    cli=_commands,
    task=_task,
    scoring=Judged(
        judge=_judge,
        template=_judge_template_id,
        labels=_labels,
    ),
    views=_views,
    # a package installed from outside names its own results page by path (a shipped one names
    # its file under pages/): app.py lists it, the Overview links it
    results_page=ResultsPage(
        path=str(Path(__file__).with_name("results_page.py")),
        title="Judged example results",
        grid_note="Cell: the judge labels that are true — N noticed, F fixed (∅ none) — then the "
        "response. ✓ noticed on an item with an error, not noticed on a control; ✗ wrong.",
        gold_label="Planted error",
    ),
    short="jx",
    has_controls=True,
    run_fields=(
        RunField("--variant", "Variant", "select", VARIANTS, "plain"),
        RunField(
            "--judge-template",
            "Judge template",
            "select",
            default="judged/judge.v1",
            choices_from=_judge_templates,
        ),
    ),
)
