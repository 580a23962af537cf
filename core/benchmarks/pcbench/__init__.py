"""PCBench (Li et al., EMNLP 2025 Findings; github MLGroupJLU/Premise_Critique, MIT; data
`ALIENS232/PCBench` on the Hugging Face hub): math problems with a flawed premise (four error
types × three difficulty levels), each asked proactively (as is) and assisted (told to check the
premises); an LLM judge decides whether the response critiques the flawed premise.

The package declares itself: BENCHMARK below (docs/adding-a-benchmark.md).
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
        Judge,
        ResultFormat,
        SourcesReader,
        TemplateChooser,
    )
    from core.services.compare import Contribution

NAME = "pcbench"
# the benchmark's variants: `proactive` asks the flawed problem as is, `assisted` appends the
# paper's check-the-premises instruction (the paper's "active" and "passive" settings)
VARIANTS = ("proactive", "assisted")
# each variant's side in the proactive-vs-passive comparison
MODES = {"proactive": "proactive", "assisted": "passive"}


def _format_help() -> str:
    from core.benchmarks.pcbench.items import FORMAT_HELP

    return FORMAT_HELP


def _commands() -> BenchmarkCommands:
    from core.benchmarks.pcbench.commands import COMMANDS

    return COMMANDS


def _import_bytes() -> Importer:
    from core.benchmarks.pcbench.items import import_bytes

    return import_bytes


def _import_builtin() -> BuiltinImporter:
    from core.benchmarks.pcbench.items import import_builtin

    return import_builtin


def _pcbenchtask() -> type[Task]:
    from core.benchmarks.pcbench.task import PcbenchTask

    return PcbenchTask


def _judge() -> Judge:
    from core.benchmarks.pcbench.record import judge

    return judge


def _judge_template_id() -> TemplateChooser:
    from core.benchmarks.pcbench.prompts import judge_template_id

    return judge_template_id


def _views() -> str:
    from core.benchmarks.pcbench.record import VIEWS

    return VIEWS


def _label_letters() -> Mapping[str, str]:
    from core.benchmarks.pcbench.record import LABEL_LETTERS

    return LABEL_LETTERS


def _label_help() -> Mapping[str, str]:
    from core.benchmarks.pcbench.record import LABEL_HELP

    return LABEL_HELP


def _declared() -> Declarations:
    from core.benchmarks.pcbench.declared import DECLARED

    return DECLARED


def _published_read() -> pd.DataFrame:
    from core.benchmarks.pcbench.published import read

    return read()


def _verdicts_module() -> ResultFormat:
    from core.benchmarks.pcbench import verdicts

    return verdicts


def _sources() -> SourcesReader:
    from core.benchmarks.pcbench.published import sources

    return sources


def _comparison() -> Contribution:
    from core.benchmarks.pcbench.compare import COMPARISON

    return COMPARISON


def _judge_templates() -> Sequence[str]:
    from core.benchmarks.pcbench.prompts import judge_templates

    return judge_templates()


BENCHMARK = Benchmark(
    name="pcbench",
    label="PCBench",
    description="PCBench (premise critique, proactive and assisted; judged)",
    variant_name="variants",
    variants=VARIANTS,
    # the benchmark as is: the model is not told to check the premises; its `assisted`
    # variant is the passive side (rows of its comparison carry each variant's mode)
    mode="proactive",
    import_word="pcbench",
    import_help="import PCBench problems (dataset.jsonl of ALIENS232/PCBench; JSONL, JSON)",
    import_files=("jsonl", "json"),
    import_label="PCBench problems",
    format_help=_format_help,
    cli=_commands,
    importer=_import_bytes,
    builtin=(
        "pcbench-sample",
        "pcbench_sample.jsonl",
        _import_builtin,
    ),
    task=_pcbenchtask,
    judged_by_model=True,
    judge=_judge,
    judge_template=_judge_template_id,
    views=_views,
    declared=_declared,
    labels=_label_letters,
    label_help=_label_help,
    page="pages/pcbench_results.py",
    page_title="Premise critique (PCBench)",
    page_icon=":material/report:",
    run_param="pc_runs",
    drill_params=(("pc_run", "{run}"),),
    short="pc",
    variants_per_run=True,
    sample_strata=("primary_category", "secondary_category"),  # error type × difficulty
    published=(("published_pcbench", _published_read),),
    result_formats=(("pcbench-verdicts", _verdicts_module),),
    published_sources=_sources,
    comparison=_comparison,
    gold_label="Flawed premise",
    grid_note="Cell: C when the judge says the response critiques the flawed premise (∅ "
    "not), then the response. ✓ critiqued; ✗ not; – failed or not judged.",
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
            choices_from=_judge_templates,
            help="pcbench/judge.v2: the paper's judge prompt byte for byte (evaluation/eval.py "
            "of MLGroupJLU/Premise_Critique); judge.v1: the same words without its leading "
            "and trailing newline. Stored with the run.",
        ),
    ),
    order=4,
)
