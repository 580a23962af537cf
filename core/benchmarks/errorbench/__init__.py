"""ErrorBench: numeric anchoring vs count-based F1 on CoNLL-2014 passages (SPEC §2).

m2 (read M2/SGML) → items (passages: group, select) → prompts (five conditions) → parse
(reported count) → extract (hypothesis edits) → metrics (count and span scores) → bootstrap →
charts; task (runner Task) and commands (CLI hooks) tie them to the database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.registry import BENCHMARK_COMMANDS, Benchmark, Command, RunField

if TYPE_CHECKING:
    from collections.abc import Sequence

    from core.declared import Declarations
    from core.engine.task import Task
    from core.registry import (
        BenchmarkCommands,
        BuiltinImporter,
        Importer,
        Scorer,
    )

NAME = "errorbench"
# what one run varies: its variants and its run form's choices alike
CONDITIONS: tuple[str, ...] = ("blind", "hinted", "anchored", "mislead_high", "mislead_low")


def _commands() -> BenchmarkCommands:
    from core.benchmarks.errorbench.commands import COMMANDS

    return COMMANDS


def _import_bytes() -> Importer:
    from core.benchmarks.errorbench.commands import import_bytes

    return import_bytes


def _import_builtin() -> BuiltinImporter:
    from core.benchmarks.errorbench.commands import import_builtin

    return import_builtin


def _errorbenchtask() -> type[Task]:
    from core.benchmarks.errorbench.task import ErrorBenchTask

    return ErrorBenchTask


def _migrate_sql() -> str:
    from core.benchmarks.errorbench.record import MIGRATE_SQL

    return MIGRATE_SQL


def _score_stored() -> Scorer:
    from core.benchmarks.errorbench.task import score_stored

    return score_stored


def _template_choices() -> Sequence[str]:
    from core.benchmarks.errorbench.prompts import template_choices

    return template_choices()


def _label(option: str) -> str:
    from core.engine.templates import label

    return label(option)


def _declared() -> Declarations:
    from core.benchmarks.errorbench.declared import DECLARED

    return DECLARED


BENCHMARK = Benchmark(
    name="errorbench",
    label="ErrorBench",
    description="ErrorBench (anchoring)",
    variant_name="conditions",
    variants=CONDITIONS,
    mode="passive",
    import_word="m2",
    import_help="build ErrorBench passages from an M2 file",
    import_files=("m2", "txt"),
    cli=_commands,
    importer=_import_bytes,
    builtin=(
        "errorbench-sample",
        "errorbench_sample.m2",
        _import_builtin,
    ),
    task=_errorbenchtask,
    judged_by_model=False,
    migrate_sql=_migrate_sql,
    declared=_declared,
    sample_strata=("gold",),  # the passage's error count N
    page="pages/anchoring.py",
    page_title="Anchoring (ErrorBench)",
    page_icon=":material/anchor:",
    run_param="eb_runs",
    drill_params=(("eb_runs", "{run}"), ("eb_drill_run", "{run}")),
    short="eb",
    scorer=_score_stored,
    variants_per_run=True,
    import_label="ErrorBench (M2 file)",
    grid_note="Cell: reported count n̂ vs the passage's gold N, then the response. ✓ n̂ = N; "
    "✗ otherwise; – failed.",
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
            choices_from=_template_choices,
            format_from=_label,
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
