"""ErrorBench: numeric anchoring vs count-based F1 on CoNLL-2014 passages (SPEC §2).

m2 (read M2/SGML) → items (passages: group, select) → prompts (five conditions) → parse
(reported count) → extract (hypothesis edits) → metrics (count and span scores) → bootstrap →
charts; task (runner Task) and commands (CLI hooks) tie them to the database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.registry import (
    BENCHMARK_COMMANDS,
    Benchmark,
    Command,
    Imports,
    ResultsPage,
    RunField,
    Scored,
    lazy_modules,
)

# its modules: imported for mypy, which checks each loader's target against its field's type;
# at run time imported when a loader is first called (core.registry.lazy_modules)
if TYPE_CHECKING:
    from core.benchmarks.errorbench import commands as _commands
    from core.benchmarks.errorbench import declared as _declared
    from core.benchmarks.errorbench import prompts as _prompts
    from core.benchmarks.errorbench import record as _record
    from core.benchmarks.errorbench import task as _task
    from core.engine import templates as _templates
else:
    _commands, _declared, _prompts, _record, _task = lazy_modules(
        __name__, "commands", "declared", "prompts", "record", "task"
    )
    (_templates,) = lazy_modules(__name__, "core.engine.templates")

NAME = "errorbench"
# what one run varies: its variants and its run form's choices alike
CONDITIONS: tuple[str, ...] = ("blind", "hinted", "anchored", "mislead_high", "mislead_low")


BENCHMARK = Benchmark(
    name="errorbench",
    label="ErrorBench",
    description="ErrorBench (anchoring)",
    variant_name="conditions",
    variants=CONDITIONS,
    mode="passive",
    imports=Imports(
        word="m2",
        help="build ErrorBench passages from an M2 file",
        files=("m2", "txt"),
        importer=lambda: _commands.import_bytes,
        builtin=(
            "errorbench-sample",
            "errorbench_sample.m2",
            lambda: _commands.import_builtin,
        ),
        label="ErrorBench (M2 file)",
    ),
    cli=lambda: _commands.COMMANDS,
    task=lambda: _task.ErrorBenchTask,
    migrate_sql=lambda: _record.MIGRATE_SQL,
    declared=lambda: _declared.DECLARED,
    sample_strata=("gold",),  # the passage's error count N
    results_page=ResultsPage(
        path="pages/anchoring.py",
        title="Anchoring (ErrorBench)",
        icon=":material/anchor:",
        run_param="eb_runs",
        drill_params=(("eb_runs", "{run}"), ("eb_drill_run", "{run}")),
        grid_note="Cell: reported count n̂ vs the passage's gold N, then the response. ✓ n̂ = N; "
        "✗ otherwise; – failed.",
    ),
    short="eb",
    scoring=Scored(
        scorer=lambda: _task.score_stored,
    ),
    variants_per_run=True,
    run_fields=(
        RunField(
            "--conditions",
            "Conditions",
            "multi",
            CONDITIONS,
            CONDITIONS,
            required=True,
        ),
        RunField(
            "--template",
            "Prompt template",
            "select",
            default="errorbench/quoted.v1",
            choices_from=lambda: _prompts.template_choices(),
            format_from=lambda option: _templates.label(option),
            help="quoted.v1: ERROR lines as a quoted pair (locatable, default); free.v1: "
            "free descriptions (the paper's format); structured.v1: JSON bounded by a "
            "response_format schema so a small local model's answers can be read — NOT the "
            "paper's protocol (needs a server that honours response_format: the local "
            "SmolLM2, vLLM, OpenAI)",
        ),
    ),
    commands=(
        Command(
            ("m2-score",),
            BENCHMARK_COMMANDS,
            "score a hypothesis M2 file against a gold M2 file",
        ),
    ),
    order=1,
)
