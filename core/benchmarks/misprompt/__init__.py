"""Mis-prompt — proactive error handling: does a model notice an erroneous prompt on its own?
(SPEC §1). An LLM judge gives six labels per response; F1 per category against controls.

Modules: taxonomy (categories), items (import), prompts (settings, judge templates), task
(runner Task), judge (the LLM judge), metrics (F1, bootstrap, run counts cache), agreement
(judge vs judge), consistency (published-table checks), queries (page data), charts (figures),
playground (its playground role), audit (human labels), synth (synthetic runs for benchmarks), commands (CLI hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.registry import Benchmark, RunField

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import pandas as pd

    from core.declared import Declarations
    from core.engine.task import Task
    from core.registry import (
        BenchmarkCommands,
        BuiltinImporter,
        Importer,
        ItemExporter,
        Judge,
        LabelMetrics,
        Previewer,
        SourcesReader,
        TemplateChooser,
    )
    from core.services.compare import Contribution
    from core.services.playground import PlaygroundRole

NAME = "misprompt"
# what one run varies: its variants and its run form's choices alike
SETTINGS = ("zero-shot", "one-shot", "three-shot", "cot")


def _commands() -> BenchmarkCommands:
    from core.benchmarks.misprompt.commands import COMMANDS

    return COMMANDS


def _import_bytes() -> Importer:
    from core.benchmarks.misprompt.items import import_bytes

    return import_bytes


def _import_builtin() -> BuiltinImporter:
    from core.benchmarks.misprompt.items import import_builtin

    return import_builtin


def _misprompttask() -> type[Task]:
    from core.benchmarks.misprompt.task import MispromptTask

    return MispromptTask


def _judge() -> Judge:
    from core.benchmarks.misprompt.record import judge

    return judge


def _judge_template_id() -> TemplateChooser:
    from core.benchmarks.misprompt.prompts import judge_template_id

    return judge_template_id


def _views() -> str:
    from core.benchmarks.misprompt.record import VIEWS

    return VIEWS


def _migrate_sql() -> str:
    from core.benchmarks.misprompt.record import MIGRATE_SQL

    return MIGRATE_SQL


def _label_letters() -> Mapping[str, str]:
    from core.benchmarks.misprompt.taxonomy import LABEL_LETTERS

    return LABEL_LETTERS


def _role() -> PlaygroundRole:
    from core.benchmarks.misprompt.playground import ROLE

    return ROLE


def _label_help() -> Mapping[str, str]:
    from core.benchmarks.misprompt.taxonomy import LABEL_HELP

    return LABEL_HELP


def _overall_f1() -> LabelMetrics:
    from core.benchmarks.misprompt.audit_metrics import overall_f1

    return overall_f1


def _no_controls() -> str:
    from core.benchmarks.misprompt.task import NO_CONTROLS

    return NO_CONTROLS


def _read_misprompt_f1() -> pd.DataFrame:
    from core.benchmarks.misprompt.published import read_misprompt_f1

    return read_misprompt_f1()


def _read_counts() -> pd.DataFrame:
    from core.benchmarks.misprompt.published import read_counts

    return read_counts()


def _sources() -> SourcesReader:
    from core.benchmarks.misprompt.published import sources

    return sources


def _comparison() -> Contribution:
    from core.benchmarks.misprompt.compare import COMPARISON

    return COMPARISON


def _preview_upload() -> Previewer:
    from core.benchmarks.misprompt.items import preview_upload

    return preview_upload


def _export_items_csv() -> ItemExporter:
    from core.benchmarks.misprompt.items import export_items_csv

    return export_items_csv


def _format_help() -> str:
    from core.benchmarks.misprompt.items import FORMAT_HELP

    return FORMAT_HELP


def _judge_templates() -> Sequence[str]:
    from core.benchmarks.misprompt.prompts import judge_templates

    return judge_templates()


def _declared() -> Declarations:
    from core.benchmarks.misprompt.declared import DECLARED

    return DECLARED


BENCHMARK = Benchmark(
    name="misprompt",
    label="Mis-prompt",
    description="Mis-prompt (proactive; judged)",
    variant_name="setting",
    variants=SETTINGS,
    mode="proactive",
    import_word="misprompt",
    import_help="import Mis-prompt items (CSV, JSON, JSONL)",
    import_files=("csv", "json", "jsonl", "tsv"),
    cli=_commands,
    importer=_import_bytes,
    builtin=(
        "misprompt-sample",
        "misprompt_sample.csv",
        _import_builtin,
    ),
    task=_misprompttask,
    judged_by_model=True,
    judge=_judge,
    judge_template=_judge_template_id,
    views=_views,
    migrate_sql=_migrate_sql,
    declared=_declared,
    labels=_label_letters,
    playground=_role,
    label_help=_label_help,
    label_metrics=_overall_f1,
    page="pages/misprompt_results.py",
    page_title="Mis-prompt results",
    page_icon=":material/grid_on:",
    drill_params=(("view", "Runs"), ("run", "{run}")),
    short="mp",
    has_controls=True,
    no_controls_note=_no_controls,
    published=(
        ("published_misprompt", _read_misprompt_f1),
        ("published_counts", _read_counts),
    ),
    published_sources=_sources,
    comparison=_comparison,
    import_label="Mis-prompt items",
    previewer=_preview_upload,
    item_exporter=_export_items_csv,
    format_help=_format_help,
    gold_label="Ground truth",
    grid_note="Cell: the judge labels that are true — D detection, IA identification attempt, "
    "IC identification accurate, CA correction attempt, CC correction accurate, "
    "G guidance (∅ none) — then the response. ✓ correct = detected on an erroneous "
    "item, not detected on a control; ✗ wrong; – failed or not judged.",
    run_fields=(
        RunField(
            "--setting",
            "Setting",
            "select",
            SETTINGS,
            "zero-shot",
        ),
        RunField(
            "--passive",
            "Passive (wrap each prompt in the error-handling instruction)",
            "flag",
            default=False,
        ),
        RunField(
            "--judge-template",
            "Judge template",
            "select",
            default="misprompt/judge.v2",
            choices_from=_judge_templates,
            help="misprompt/judge.v2 (default): the paper's C.1 definitions (accurate "
            "identification = right category AND location; guidance = how to avoid similar "
            "errors), both 'accurate' labels read alike on control questions. "
            "misprompt/judge.v1: the earlier wording. Stored with the run.",
        ),
    ),
    order=0,
)
