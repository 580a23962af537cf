"""ProcessBench (Zheng et al., ACL 2025) — passive error finding in math solutions: name the
earliest wrong paragraph of a step-by-step solution, or -1 when all are correct.

Modules: items (import), parse (the `\\boxed{}` answer), prompts (the paper's critique template),
task (runner Task), record (the generic result record), metrics (error / correct accuracy, F1),
queries (data access), charts (figures), commands (its CLI hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.registry import Benchmark, Imports, ResultsPage, RunField, Scored, lazy_modules

# its modules: imported for mypy, which checks each loader's target against its field's type;
# at run time imported when a loader is first called (core.registry.lazy_modules)
if TYPE_CHECKING:
    from core.benchmarks.processbench import commands as _commands
    from core.benchmarks.processbench import items as _items
    from core.benchmarks.processbench import prompts as _prompts
    from core.benchmarks.processbench import task as _task
    from core.engine import templates as _templates
else:
    _commands, _items, _prompts, _task, _templates = lazy_modules(
        __name__, "commands", "items", "prompts", "task", "core.engine.templates"
    )

NAME = "processbench"


BENCHMARK = Benchmark(
    name="processbench",
    label="ProcessBench",
    description="ProcessBench (earliest wrong step in math solutions)",
    variant_name="prompt",
    variants=("critique",),
    mode="passive",
    imports=Imports(
        word="processbench",
        help="import ProcessBench solutions (Parquet, JSONL or JSON from Qwen/ProcessBench)",
        files=("parquet", "jsonl", "json"),
        importer=lambda: _items.import_bytes,
        builtin=(
            "processbench-sample",
            "processbench_sample.jsonl",
            lambda: _items.import_builtin,
        ),
        label="ProcessBench solutions",
    ),
    cli=lambda: _commands.COMMANDS,
    task=lambda: _task.ProcessBenchTask,
    scoring=Scored(
        scorer=lambda: _task.score_stored,
    ),
    results_page=ResultsPage(
        path="pages/processbench_results.py",
        title="ProcessBench",
        icon=":material/functions:",
        run_param="pb_runs",
        drill_params=(("pb_runs", "{run}"), ("pb_run", "{run}")),
        grid_note="Cell: the paragraph the critique named as the earliest wrong one (-1 = none) "
        "vs the label, then the critique. ✓ index = label; ✗ wrong, unparsable or out of "
        "range; – failed.",
        gold_label="Earliest wrong step (-1 = none)",
    ),
    short="pb",
    sample_strata=("primary_category", "is_error"),  # split × wrong step present
    run_fields=(
        RunField(
            "--template",
            "Prompt template",
            "select",
            default="processbench/critique.v1",
            choices_from=lambda: _prompts.template_choices(),
            format_from=lambda option: _templates.label(option),
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
