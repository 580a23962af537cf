"""ProcessBench (Zheng et al., ACL 2025) — passive error finding in math solutions: name the
earliest wrong paragraph of a step-by-step solution, or -1 when all are correct.

Modules: items (import), parse (the `\\boxed{}` answer), prompts (the paper's critique template),
task (runner Task), record (the generic result record), metrics (error / correct accuracy, F1),
queries (data access), charts (figures), commands (its CLI hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.registry import Benchmark, RunField

if TYPE_CHECKING:
    from collections.abc import Sequence

    from core.engine.task import Task
    from core.registry import (
        BenchmarkCommands,
        BuiltinImporter,
        Importer,
        Scorer,
    )

NAME = "processbench"


def _commands() -> BenchmarkCommands:
    from core.benchmarks.processbench.commands import COMMANDS

    return COMMANDS


def _import_bytes() -> Importer:
    from core.benchmarks.processbench.items import import_bytes

    return import_bytes


def _import_builtin() -> BuiltinImporter:
    from core.benchmarks.processbench.items import import_builtin

    return import_builtin


def _processbenchtask() -> type[Task]:
    from core.benchmarks.processbench.task import ProcessBenchTask

    return ProcessBenchTask


def _score_stored() -> Scorer:
    from core.benchmarks.processbench.task import score_stored

    return score_stored


def _template_choices() -> Sequence[str]:
    from core.benchmarks.processbench.prompts import template_choices

    return template_choices()


def _label(option: str) -> str:
    from core.engine.templates import label

    return label(option)


BENCHMARK = Benchmark(
    name="processbench",
    label="ProcessBench",
    description="ProcessBench (earliest wrong step in math solutions)",
    variant_name="prompt",
    variants=("critique",),
    mode="passive",
    import_word="processbench",
    import_help="import ProcessBench solutions (Parquet, JSONL or JSON from Qwen/ProcessBench)",
    import_files=("parquet", "jsonl", "json"),
    cli=_commands,
    importer=_import_bytes,
    builtin=(
        "processbench-sample",
        "processbench_sample.jsonl",
        _import_builtin,
    ),
    task=_processbenchtask,
    judged_by_model=False,
    scorer=_score_stored,
    page="pages/processbench_results.py",
    page_title="ProcessBench",
    page_icon=":material/functions:",
    drill_params=(("pb_runs", "{run}"), ("pb_run", "{run}")),
    run_param="pb_runs",
    short="pb",
    sample_strata=("primary_category", "is_error"),  # split × wrong step present
    import_label="ProcessBench solutions",
    gold_label="Earliest wrong step (-1 = none)",
    grid_note="Cell: the paragraph the critique named as the earliest wrong one (-1 = none) "
    "vs the label, then the critique. ✓ index = label; ✗ wrong, unparsable or out of "
    "range; – failed.",
    run_fields=(
        RunField(
            "--template",
            "Prompt template",
            "select",
            default="processbench/critique.v1",
            choices_from=_template_choices,
            format_from=_label,
            help="processbench/critique.v1: the paper's critique prompt "
            "(github.com/QwenLM/ProcessBench, code/templates/critique_template.txt); the "
            "answer is the index in the last \\boxed{}. "
            "processbench/critique_structured.v1 asks for JSON bounded by a response_format "
            "schema so a small local model's answers can be read — NOT the paper's protocol "
            "(needs a server that honours response_format: the local SmolLM2, vLLM, OpenAI)",
        ),
    ),
    order=3,
)
