"""PCBench (Li et al., EMNLP 2025 Findings; github MLGroupJLU/Premise_Critique, MIT; data
`ALIENS232/PCBench` on the Hugging Face hub): math problems with a flawed premise (four error
types × three difficulty levels), each asked proactively (as is) and assisted (told to check the
premises); an LLM judge decides whether the response critiques the flawed premise.

The package declares itself: BENCHMARK below (docs/adding-a-benchmark.md).
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
    from core.benchmarks.pcbench import commands as _commands
    from core.benchmarks.pcbench import compare as _compare
    from core.benchmarks.pcbench import declared as _declared
    from core.benchmarks.pcbench import items as _items
    from core.benchmarks.pcbench import prompts as _prompts
    from core.benchmarks.pcbench import published as _published
    from core.benchmarks.pcbench import record as _record
    from core.benchmarks.pcbench import task as _task
    from core.benchmarks.pcbench import verdicts as _verdicts
else:
    _commands, _compare, _declared, _items, _prompts, _published = lazy_modules(
        __name__, "commands", "compare", "declared", "items", "prompts", "published"
    )
    _record, _task, _verdicts = lazy_modules(__name__, "record", "task", "verdicts")

NAME = "pcbench"
# the benchmark's variants: `proactive` asks the flawed problem as is, `assisted` appends the
# paper's check-the-premises instruction (the paper's "active" and "passive" settings)
VARIANTS = ("proactive", "assisted")
# each variant's side in the proactive-vs-passive comparison
MODES = {"proactive": "proactive", "assisted": "passive"}


BENCHMARK = Benchmark(
    name="pcbench",
    label="PCBench",
    description="PCBench (premise critique, proactive and assisted; judged)",
    variant_name="variants",
    variants=VARIANTS,
    # the benchmark as is: the model is not told to check the premises; its `assisted`
    # variant is the passive side (rows of its comparison carry each variant's mode)
    mode="proactive",
    imports=Imports(
        word="pcbench",
        help="import PCBench problems (dataset.jsonl of ALIENS232/PCBench; JSONL, JSON)",
        files=("jsonl", "json"),
        importer=lambda: _items.import_bytes,
        builtin=(
            "pcbench-sample",
            "pcbench_sample.jsonl",
            lambda: _items.import_builtin,
        ),
        label="PCBench problems",
        format_help=lambda: _items.FORMAT_HELP,
    ),
    cli=lambda: _commands.COMMANDS,
    task=lambda: _task.PcbenchTask,
    scoring=Judged(
        judge=lambda: _record.judge,
        template=lambda: _prompts.judge_template_id,
        labels=lambda: _record.LABEL_LETTERS,
        label_help=lambda: _record.LABEL_HELP,
    ),
    views=lambda: _record.VIEWS,
    declared=lambda: _declared.DECLARED,
    results_page=ResultsPage(
        path="pages/pcbench_results.py",
        title="Premise critique (PCBench)",
        icon=":material/report:",
        run_param="pc_runs",
        drill_params=(("pc_run", "{run}"),),
        grid_note="Cell: C when the judge says the response critiques the flawed premise (∅ "
        "not), then the response. ✓ critiqued; ✗ not; – failed or not judged.",
        gold_label="Flawed premise",
    ),
    short="pc",
    variants_per_run=True,
    sample_strata=("primary_category", "secondary_category"),  # error type × difficulty
    paper=Published(
        tables=(("published_pcbench", lambda: _published.read()),),
        sources=lambda: _published.sources,
    ),
    result_formats=(("pcbench-verdicts", lambda: _verdicts),),
    roles=Roles(
        comparison=lambda: _compare.COMPARISON,
    ),
    run_fields=(
        RunField(
            "--variants",
            "Variants",
            "multi",
            VARIANTS,
            VARIANTS,
            required=True,
            help="proactive: the flawed problem as is; assisted: followed by the paper's "
            "instruction to check the premises. Both (default) ask the same problems both "
            "ways, for a paired comparison.",
        ),
        RunField(
            "--judge-template",
            "Judge template",
            "select",
            default="pcbench/judge.v2",
            choices_from=lambda: _prompts.judge_templates(),
            help="pcbench/judge.v2: the paper's judge prompt byte for byte (evaluation/eval.py "
            "of MLGroupJLU/Premise_Critique); judge.v1: the same words without its leading "
            "and trailing newline. Stored with the run.",
        ),
    ),
    order=4,
)
