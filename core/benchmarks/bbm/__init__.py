"""BIG-Bench Mistake — passive mistake finding in reasoning traces (SPEC §3).

Modules: items (import), parse (answers), prompts + paper_prompts (templates), task (runner
Task), metrics (scores), consistency (paper-internal checks), queries (data access), charts
(figures), commands (its CLI hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.registry import (
    Benchmark,
    Imports,
    Published,
    ResultsPage,
    Roles,
    RunField,
    Scored,
    lazy_modules,
)

# its modules: imported for mypy, which checks each loader's target against its field's type;
# at run time imported when a loader is first called (core.registry.lazy_modules)
if TYPE_CHECKING:
    from core.benchmarks.bbm import commands as _commands
    from core.benchmarks.bbm import compare as _compare
    from core.benchmarks.bbm import declared as _declared
    from core.benchmarks.bbm import extract as _extract
    from core.benchmarks.bbm import items as _items
    from core.benchmarks.bbm import prompts as _prompts
    from core.benchmarks.bbm import published as _published
    from core.benchmarks.bbm import record as _record
    from core.benchmarks.bbm import task as _task
else:
    _commands, _compare, _declared, _extract, _items = lazy_modules(
        __name__, "commands", "compare", "declared", "extract", "items"
    )
    _prompts, _published, _record, _task = lazy_modules(
        __name__, "prompts", "published", "record", "task"
    )

NAME = "bbm"
# what one run varies: its variants and its run form's choices alike
METHODS: tuple[str, ...] = ("direct_trace", "direct_step", "cot_step")


BENCHMARK = Benchmark(
    name="bbm",
    label="BIG-Bench Mistake",
    description="BIG-Bench Mistake (mistake finding)",
    variant_name="method",
    variants=METHODS,
    mode="passive",
    imports=Imports(
        word="bbm",
        help="import BIG-Bench Mistake traces (JSONL)",
        files=("jsonl", "json"),
        importer=lambda: _items.import_bytes,
        builtin=("bbm-sample", "bbm_sample.jsonl", lambda: _items.import_builtin),
        label="BIG-Bench Mistake traces",
    ),
    cli=lambda: _commands.COMMANDS,
    task=lambda: _task.BbmTask,
    migrate_sql=lambda: _record.MIGRATE_SQL,
    declared=lambda: _declared.DECLARED,
    results_page=ResultsPage(
        path="pages/mistake_finding.py",
        title="Mistake finding (BBM)",
        icon=":material/search:",
        drill_params=(("runs", "{run}"), ("trace_run", "{run}")),
        grid_note="Cell: predicted first wrong step vs gold (none = no mistake), then the response. "
        "✓ exact location; ✗ wrong or unparsable; – failed.",
    ),
    short="bbm",
    scoring=Scored(
        scorer=lambda: _task.score_stored,
        extractor=lambda: _extract.extract,
    ),
    sample_strata=("primary_category", "is_error"),  # task × mistake present
    roles=Roles(
        comparison=lambda: _compare.COMPARISON,
    ),
    paper=Published(
        tables=(("published_bbm", lambda: _published.read_bbm()),),
        sources=lambda: _published.sources,
    ),
    run_fields=(
        RunField(
            "--method",
            "Method",
            "select",
            METHODS,
            "direct_trace",
            required=True,
            help="direct_trace: whole trace, one call; direct_step: Yes/No per step, stop at "
            "the first No; cot_step: reason, then Yes/No per step",
        ),
        RunField(
            "--template",
            "Prompt template",
            "select",
            default="",
            choices_from=lambda: _prompts.form_template_choices(),
            format_from=lambda option: _prompts.form_template_label(option),
            help="must name the method (default: the method's own v1); "
            "bbm/direct_trace_structured.v1 asks for JSON bounded by a response_format schema "
            "(the first wrong step or null) so a small local model's answers can be read — NOT "
            "the paper's protocol (needs a server that honours response_format: the local "
            "SmolLM2, vLLM, OpenAI)",
        ),
    ),
    order=2,
)
