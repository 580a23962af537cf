"""BIG-Bench Mistake — passive mistake finding in reasoning traces (SPEC §3).

Modules: items (import), parse (answers), prompts + paper_prompts (templates), task (runner
Task), metrics (scores), consistency (paper-internal checks), queries (data access), charts
(figures), commands (its CLI hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.registry import Benchmark, RunField

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from core.declared import Declarations
    from core.engine.task import Task
    from core.registry import (
        BenchmarkCommands,
        BuiltinImporter,
        Importer,
        Judge,
        Scorer,
        SourcesReader,
    )
    from core.services.compare import Contribution

NAME = "bbm"
# what one run varies: its variants and its run form's choices alike
METHODS: tuple[str, ...] = ("direct_trace", "direct_step", "cot_step")


def _commands() -> BenchmarkCommands:
    from core.benchmarks.bbm.commands import COMMANDS

    return COMMANDS


def _import_bytes() -> Importer:
    from core.benchmarks.bbm.items import import_bytes

    return import_bytes


def _import_builtin() -> BuiltinImporter:
    from core.benchmarks.bbm.items import import_builtin

    return import_builtin


def _bbmtask() -> type[Task]:
    from core.benchmarks.bbm.task import BbmTask

    return BbmTask


def _migrate_sql() -> str:
    from core.benchmarks.bbm.record import MIGRATE_SQL

    return MIGRATE_SQL


def _score_stored() -> Scorer:
    from core.benchmarks.bbm.task import score_stored

    return score_stored


def _extract() -> Judge:
    from core.benchmarks.bbm.extract import extract

    return extract


def _comparison() -> Contribution:
    from core.benchmarks.bbm.compare import COMPARISON

    return COMPARISON


def _read_bbm() -> pd.DataFrame:
    from core.benchmarks.bbm.published import read_bbm

    return read_bbm()


def _sources() -> SourcesReader:
    from core.benchmarks.bbm.published import sources

    return sources


def _form_template_choices() -> Sequence[str]:
    from core.benchmarks.bbm.prompts import form_template_choices

    return form_template_choices()


def _form_template_label(option: str) -> str:
    from core.benchmarks.bbm.prompts import form_template_label

    return form_template_label(option)


def _declared() -> Declarations:
    from core.benchmarks.bbm.declared import DECLARED

    return DECLARED


BENCHMARK = Benchmark(
    name="bbm",
    label="BIG-Bench Mistake",
    description="BIG-Bench Mistake (mistake finding)",
    variant_name="method",
    variants=METHODS,
    mode="passive",
    import_word="bbm",
    import_help="import BIG-Bench Mistake traces (JSONL)",
    import_files=("jsonl", "json"),
    cli=_commands,
    importer=_import_bytes,
    builtin=("bbm-sample", "bbm_sample.jsonl", _import_builtin),
    task=_bbmtask,
    judged_by_model=False,
    migrate_sql=_migrate_sql,
    declared=_declared,
    page="pages/mistake_finding.py",
    page_title="Mistake finding (BBM)",
    page_icon=":material/search:",
    drill_params=(("runs", "{run}"), ("trace_run", "{run}")),
    short="bbm",
    scorer=_score_stored,
    extractor=_extract,
    sample_strata=("primary_category", "is_error"),  # task × mistake present
    comparison=_comparison,
    published=(("published_bbm", _read_bbm),),
    published_sources=_sources,
    import_label="BIG-Bench Mistake traces",
    grid_note="Cell: predicted first wrong step vs gold (none = no mistake), then the response. "
    "✓ exact location; ✗ wrong or unparsable; – failed.",
    run_fields=(
        RunField(
            "--method",
            "Method",
            "select",
            METHODS,
            "direct_trace",
            required=True,
        ),
        RunField(
            "--template",
            "Prompt template",
            "select",
            default="",
            choices_from=_form_template_choices,
            format_from=_form_template_label,
            help="must name the method (default: the method's own v1); "
            "bbm/direct_trace_structured.v1 asks for JSON bounded by a response_format schema "
            "(the first wrong step or null) so a small local model's answers can be read — NOT "
            "the paper's protocol (needs a server that honours response_format: the local "
            "SmolLM2, vLLM, OpenAI)",
        ),
    ),
    order=2,
)
