"""Mis-prompt — proactive error handling: does a model notice an erroneous prompt on its own?
(SPEC §1). An LLM judge gives six labels per response; F1 per category against controls.

Modules: taxonomy (categories), items (import), prompts (settings, judge templates), task
(runner Task), judge (the LLM judge), metrics (F1, bootstrap, run counts cache), agreement
(judge vs judge), consistency (published-table checks), queries (page data), charts (figures),
playground (its playground role), audit (human labels), synth (synthetic runs for benchmarks), commands (CLI hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.registry import (
    Benchmark,
    Imports,
    Judged,
    Published,
    ResultsPage,
    Roles,
    RunField,
    lazy_modules,
)

# its modules: imported for mypy, which checks each loader's target against its field's type;
# at run time imported when a loader is first called (core.registry.lazy_modules)
if TYPE_CHECKING:
    from core.benchmarks.misprompt import audit_metrics as _audit_metrics
    from core.benchmarks.misprompt import commands as _commands
    from core.benchmarks.misprompt import compare as _compare
    from core.benchmarks.misprompt import declared as _declared
    from core.benchmarks.misprompt import items as _items
    from core.benchmarks.misprompt import playground as _playground
    from core.benchmarks.misprompt import prompts as _prompts
    from core.benchmarks.misprompt import published as _published
    from core.benchmarks.misprompt import record as _record
    from core.benchmarks.misprompt import task as _task
    from core.benchmarks.misprompt import taxonomy as _taxonomy
else:
    _audit_metrics, _commands, _compare, _declared, _items, _playground = lazy_modules(
        __name__, "audit_metrics", "commands", "compare", "declared", "items", "playground"
    )
    _prompts, _published, _record, _task, _taxonomy = lazy_modules(
        __name__, "prompts", "published", "record", "task", "taxonomy"
    )

NAME = "misprompt"
# what one run varies: its variants and its run form's choices alike
SETTINGS = ("zero-shot", "one-shot", "three-shot", "cot")


BENCHMARK = Benchmark(
    name="misprompt",
    label="Mis-prompt",
    description="Mis-prompt (proactive; judged)",
    variant_name="setting",
    variants=SETTINGS,
    mode="proactive",
    imports=Imports(
        word="misprompt",
        help="import Mis-prompt items (CSV, JSON, JSONL)",
        files=("csv", "json", "jsonl", "tsv"),
        importer=lambda: _items.import_bytes,
        builtin=(
            "misprompt-sample",
            "misprompt_sample.csv",
            lambda: _items.import_builtin,
        ),
        label="Mis-prompt items",
        previewer=lambda: _items.preview_upload,
        format_help=lambda: _items.FORMAT_HELP,
        item_exporter=lambda: _items.export_items_csv,
    ),
    cli=lambda: _commands.COMMANDS,
    task=lambda: _task.MispromptTask,
    scoring=Judged(
        judge=lambda: _record.judge,
        template=lambda: _prompts.judge_template_id,
        labels=lambda: _taxonomy.LABEL_LETTERS,
        label_help=lambda: _taxonomy.LABEL_HELP,
        label_metrics=lambda: _audit_metrics.overall_f1,
    ),
    views=lambda: _record.VIEWS,
    migrate_sql=lambda: _record.MIGRATE_SQL,
    declared=lambda: _declared.DECLARED,
    roles=Roles(
        playground=lambda: _playground.ROLE,
        comparison=lambda: _compare.COMPARISON,
    ),
    results_page=ResultsPage(
        path="pages/misprompt_results.py",
        title="Mis-prompt results",
        icon=":material/grid_on:",
        drill_params=(("view", "Runs"), ("run", "{run}")),
        grid_note="Cell: the judge labels that are true — D detection, IA identification attempt, "
        "IC identification accurate, CA correction attempt, CC correction accurate, "
        "G guidance (∅ none) — then the response. ✓ correct = detected on an erroneous "
        "item, not detected on a control; ✗ wrong; – failed or not judged.",
        gold_label="Ground truth",
    ),
    short="mp",
    has_controls=True,
    no_controls_note=lambda: _task.NO_CONTROLS,
    paper=Published(
        tables=(
            ("published_misprompt", lambda: _published.read_misprompt_f1()),
            ("published_counts", lambda: _published.read_counts()),
        ),
        sources=lambda: _published.sources,
    ),
    run_fields=(
        RunField(
            "--setting",
            "Setting",
            "select",
            SETTINGS,
            "zero-shot",
            help="zero-shot = the prompt alone (the proactive test); one-/three-shot = exemplar "
            "erroneous prompts with ground truths first; cot = reason step by step "
            "(default: zero-shot)",
        ),
        RunField(
            "--passive",
            "Passive (wrap each prompt in the error-handling instruction)",
            "flag",
            default=False,
            help="wrap each prompt in the explicit error-handling instruction (runs.mode = "
            "passive; the variant stays the setting)",
        ),
        RunField(
            "--judge-template",
            "Judge template",
            "select",
            default="misprompt/judge.v2",
            choices_from=lambda: _prompts.judge_templates(),
            help="misprompt/judge.v2 (default): the paper's C.1 definitions (accurate "
            "identification = right category AND location; guidance = how to avoid similar "
            "errors), both 'accurate' labels read alike on control questions. "
            "misprompt/judge.v1: the earlier wording. Stored with the run.",
        ),
    ),
    order=0,
)
