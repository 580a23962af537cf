"""The benchmark registry: one descriptor per benchmark, read by every entry point.

The CLI (`import`, `run`, `metrics`, `rescore`), `init`, the job launcher, `runs`, the Runs and
Import pages all loop over `BENCHMARKS`; no other file lists benchmarks. Adding a benchmark is
one package plus one `register(Benchmark(...))` call (see docs/adding-a-benchmark.md).

Descriptors name their code as "module:attribute" strings and resolve them on first use, so
reading the registry (e.g. for `python -m core --help`) imports no benchmark code, pandas or
duckdb.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any


def resolve(ref: str) -> Any:
    """ "package.module:attr" -> the object (imported now); "package.module" -> the module."""
    module_name, _, attr = ref.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr) if attr else module


@dataclass(frozen=True)
class RunField:
    """One benchmark-specific choice of the run form, and the CLI flag it becomes.

    kind: "select" (one of `choices`), "multi" (a comma-joined subset of `choices`) or
    "flag" (a switch without value). `default` is the form's initial value.
    """

    flag: str
    label: str
    kind: str
    choices: tuple[str, ...] = ()
    default: Any = None
    help: str = ""
    choices_from: str | None = None  # "module:fn() -> list[str]" when choices come from files
    required: bool = False  # the command has no default for it: a form must choose
    format_from: str | None = None  # "module:fn(option) -> str": how the form shows an option

    def option_label(self, option: Any) -> str:
        """How the run form shows `option` (e.g. a structured template marked as not the
        paper's protocol)."""
        return str(resolve(self.format_from)(option)) if self.format_from else str(option)

    @property
    def key(self) -> str:
        """The form key and keyword name: `--judge-template` -> `judge_template`."""
        return self.flag.lstrip("-").replace("-", "_")

    def options(self) -> tuple[str, ...]:
        """The choices, read now when they come from template files."""
        if self.choices_from:
            return tuple(resolve(self.choices_from)())
        return self.choices

    def cli_args(self, value: Any) -> list[str]:
        """The words this field adds to `python -m core run …`; a bad value is a ValueError."""
        if self.kind == "flag":
            return [self.flag] if value else []
        options = self.options()
        if value is None or value == "":
            if self.required:
                raise ValueError(f"choose a {self.label.lower()} ({', '.join(options)})")
            return []  # the command's own default applies
        if self.kind == "multi":
            chosen = [v for v in value if v in options]
            if not chosen:
                raise ValueError(
                    f"choose at least one {self.label.lower().rstrip('s')} ({', '.join(options)})"
                )
            return [self.flag, ",".join(chosen)]
        if value not in options:
            raise ValueError(f"{self.label.lower()} must be one of {', '.join(options)}")
        return [self.flag, str(value)]


@dataclass
class UploadPreview:
    """What the Import page shows of an uploaded file before importing it: its problems
    ('FILE:LINE: why', nothing is imported while there is one), a one-line summary and
    (title, DataFrame) previews."""

    ok: bool
    errors: list[str] = field(default_factory=list)
    total_errors: int = 0
    summary: str = ""
    frames: list[tuple[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Command:
    """A CLI command `words` served by `module` (`configure(parser, words)`, `main(args)`)."""

    words: tuple[str, ...]
    module: str
    help: str


@dataclass(frozen=True)
class Benchmark:
    """Everything the entry points need to know about one benchmark.

    name: the id stored in runs.benchmark / items.benchmark. label: what people read.
    variant_name / variants: what one run varies (Mis-prompt settings, ErrorBench conditions,
    BBM methods) - also runs.setting and responses.variant.
    mode: "proactive" when the model is not told to look for errors, else "passive"; a
    benchmark whose runs can be either says so in its run fields (Mis-prompt's --passive).
    import_word: the word after `import` (ErrorBench imports M2 files: `import m2`).
    import_files: file types the Import page accepts; importer: "module:fn(store, data: bytes,
    filename, name) -> int" for uploads; builtin: (item set name, file under data/samples/,
    "module:fn(store, path, name) -> int").
    task: "module:Class" of its runner Task; scorer: "module:fn(item, response, run) ->
    scores" with which `rescore` re-scores a code-scored benchmark (an LLM-judged one is
    re-judged); cli_module serves its `import`, `run` and `metrics` commands.
    page: the results page (a file under pages/) and its title; app.py's navigation lists it
    (with `page_icon`) in registry order.
    run_fields: the run form's benchmark-specific fields.
    commands: CLI commands beyond the generic ones (e.g. ErrorBench's `m2-score`).
    """

    name: str
    label: str
    description: str
    variant_name: str
    variants: tuple[str, ...]
    mode: str
    import_word: str
    import_help: str
    import_files: tuple[str, ...]
    cli_module: str
    importer: str
    builtin: tuple[str, str, str] | None
    task: str
    judged_by_model: bool
    page: str
    page_title: str
    page_icon: str = ":material/bar_chart:"  # its entry in app.py's navigation
    run_fields: tuple[RunField, ...] = ()
    commands: tuple[Command, ...] = field(default_factory=tuple)
    run_param: str = "runs"  # the results page's URL parameter selecting runs
    drill_params: tuple[tuple[str, str], ...] = ()  # URL of the item drill-down ({run})
    short: str = ""  # prefix of default run names (mp-…)
    import_label: str = ""  # the Import page's name for its files
    previewer: str | None = None  # "module:fn(data, filename) -> UploadPreview" (Import page)
    format_help: str | None = None  # "module:TEXT" Markdown on the expected file format
    grid_note: str = ""  # what a cell of the response grid shows
    gold_label: str = "Gold"  # the response grid's heading over an item's gold answer
    scorer: str | None = None  # "module:fn(item, response, run) -> Result" for `rescore`
    item_exporter: str | None = None  # "module:fn(store, item_set) -> CSV bytes" (Import page)
    variants_per_run: bool = False  # one run asks several variants (ErrorBench's conditions)
    has_controls: bool = False  # error-free control items make precision (and F1) possible
    # the papers' tables `init` loads: (store table, "module:fn() -> DataFrame" reading the CSV)
    published: tuple[tuple[str, str], ...] = ()
    published_sources: str | None = None  # "module:fn(store) -> DataFrame" (Overview)
    no_controls_note: str | None = None  # "module:TEXT" why a run without controls is recall
    sample_strata: tuple[str, ...] = ("primary_category",)  # what --limit stratifies over
    # "module:attr" of a core.services.compare.Contribution: its rows in the proactive-vs-passive view
    comparison: str | None = None
    # The judging stage and the generic result record (core/engine/results.py `Result`):
    judge: str | None = None  # "module:async fn(client, item, text, *, template, max_tokens)
    #                           -> Result": the LLM judge `rescore` re-judges with
    # an optional LLM that READS the answers a scorer parses (same signature as `judge`):
    # `rescore` with a judge endpoint runs it as a judging of kind judge (BBM, issue 29)
    extractor: str | None = None
    judge_template: str | None = None  # "module:fn(asked: str | None) -> str": stored id
    views: str | None = None  # "module:SQL": the benchmark's own views over `results` …
    migrate_sql: str | None = None  # "module:SQL": fills its records migrated from schema 3
    labels: str | None = None  # "module:{name: letter}": a multi-label judge's named labels
    # "module:ROLE" of a core.services.playground.PlaygroundRole: offers the Playground page
    playground: str | None = None
    # The judge audit (core/services/audit.py) of a benchmark with `judged_by_model` and labels:
    label_help: str | None = None  # "module:{name: text}": what a label means, for people
    # results files of other tools this benchmark reads (core/sources): (format name, module
    # with NAME, detect(path, head) and read(path)), e.g. a paper's released verdicts
    result_formats: tuple[tuple[str, str], ...] = ()
    label_metrics: str | None = None  # "module:fn(item_rows) -> DataFrame": overall F1 per
    #   (run_id, evaluator) of rows (run_id, model, setting, evaluator, is_error, categories,
    #   labels) as (run_id, source, <labels>, average, metric)
    # "module:DECLARED" of a core.declared.Declarations: what the shared layers need of it
    declared: str | None = None

    def label_letters(self) -> dict[str, str]:
        """The named labels of this benchmark's records and their short letters ({} if none)."""
        return dict(resolve(self.labels)) if self.labels else {}

    def label_help_texts(self) -> dict[str, str]:
        """What each named label means, for people labelling by hand ({} if not given)."""
        return dict(resolve(self.label_help)) if self.label_help else {}

    def cli_commands(self) -> list[Command]:
        """`import`, `run` and `metrics` for this benchmark, then its own extra commands."""
        return [
            Command(("import", self.import_word), self.cli_module, self.import_help),
            Command(
                ("run", self.name),
                self.cli_module,
                f"run {self.label} against a model"
                + (", judged by an LLM" if self.judged_by_model else ""),
            ),
            Command(("metrics", self.name), self.cli_module, f"{self.label} metrics"),
            *self.commands,
        ]


BENCHMARKS: dict[str, Benchmark] = {}

# What one run varies, per benchmark: its variants and its run form's choices alike.
MISPROMPT_SETTINGS = ("zero-shot", "one-shot", "three-shot", "cot")
ERRORBENCH_CONDITIONS = ("blind", "hinted", "anchored", "mislead_high", "mislead_low")
BBM_METHODS = ("direct_trace", "direct_step", "cot_step")
PCBENCH_VARIANTS = ("proactive", "assisted")


def register(benchmark: Benchmark) -> Benchmark:
    """Add (or replace, by name) a benchmark; returns it so a module can keep a handle."""
    BENCHMARKS[benchmark.name] = benchmark
    return benchmark


def get(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None


register(
    Benchmark(
        name="misprompt",
        label="Mis-prompt",
        description="Mis-prompt (proactive; judged)",
        variant_name="setting",
        variants=MISPROMPT_SETTINGS,
        mode="proactive",
        import_word="misprompt",
        import_help="import Mis-prompt items (CSV, JSON, JSONL)",
        import_files=("csv", "json", "jsonl", "tsv"),
        cli_module="core.benchmarks.misprompt.cli",
        importer="core.benchmarks.misprompt.items:import_bytes",
        builtin=(
            "misprompt-sample",
            "misprompt_sample.csv",
            "core.benchmarks.misprompt.items:import_builtin",
        ),
        task="core.benchmarks.misprompt.task:MispromptTask",
        judged_by_model=True,
        judge="core.benchmarks.misprompt.record:judge",
        judge_template="core.benchmarks.misprompt.prompts:judge_template_id",
        views="core.benchmarks.misprompt.record:VIEWS",
        migrate_sql="core.benchmarks.misprompt.record:MIGRATE_SQL",
        labels="core.benchmarks.misprompt.taxonomy:LABEL_LETTERS",
        playground="core.benchmarks.misprompt.playground:ROLE",
        label_help="core.benchmarks.misprompt.taxonomy:LABEL_HELP",
        label_metrics="core.benchmarks.misprompt.audit_metrics:overall_f1",
        declared="core.benchmarks.misprompt.declared:DECLARED",
        page="pages/misprompt_results.py",
        page_title="Mis-prompt results",
        page_icon=":material/grid_on:",
        drill_params=(("view", "Runs"), ("run", "{run}")),
        short="mp",
        has_controls=True,
        no_controls_note="core.benchmarks.misprompt.task:NO_CONTROLS",
        published=(
            ("published_misprompt", "core.benchmarks.misprompt.published:read_misprompt_f1"),
            ("published_counts", "core.benchmarks.misprompt.published:read_counts"),
        ),
        published_sources="core.benchmarks.misprompt.published:sources",
        comparison="core.benchmarks.misprompt.compare:COMPARISON",
        import_label="Mis-prompt items",
        previewer="core.benchmarks.misprompt.items:preview_upload",
        item_exporter="core.benchmarks.misprompt.items:export_items_csv",
        format_help="core.benchmarks.misprompt.items:FORMAT_HELP",
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
                MISPROMPT_SETTINGS,
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
                choices_from="core.benchmarks.misprompt.prompts:judge_templates",
                help="misprompt/judge.v2 (default): the paper's C.1 definitions (accurate "
                "identification = right category AND location; guidance = how to avoid similar "
                "errors), both 'accurate' labels read alike on control questions. "
                "misprompt/judge.v1: the earlier wording. Stored with the run.",
            ),
        ),
    )
)

register(
    Benchmark(
        name="errorbench",
        label="ErrorBench",
        description="ErrorBench (anchoring)",
        variant_name="conditions",
        variants=ERRORBENCH_CONDITIONS,
        mode="passive",
        import_word="m2",
        import_help="build ErrorBench passages from an M2 file",
        import_files=("m2", "txt"),
        cli_module="core.benchmarks.errorbench.cli",
        importer="core.benchmarks.errorbench.cli:import_bytes",
        builtin=(
            "errorbench-sample",
            "errorbench_sample.m2",
            "core.benchmarks.errorbench.cli:import_builtin",
        ),
        task="core.benchmarks.errorbench.task:ErrorBenchTask",
        judged_by_model=False,
        migrate_sql="core.benchmarks.errorbench.record:MIGRATE_SQL",
        sample_strata=("gold",),  # the passage's error count N
        declared="core.benchmarks.errorbench.declared:DECLARED",
        page="pages/anchoring.py",
        page_title="Anchoring (ErrorBench)",
        page_icon=":material/anchor:",
        run_param="eb_runs",
        drill_params=(("eb_runs", "{run}"), ("eb_drill_run", "{run}")),
        short="eb",
        scorer="core.benchmarks.errorbench.task:score_stored",
        variants_per_run=True,
        import_label="ErrorBench (M2 file)",
        grid_note="Cell: reported count n̂ vs the passage's gold N, then the response. ✓ n̂ = N; "
        "✗ otherwise; – failed.",
        run_fields=(
            RunField(
                "--conditions",
                "Conditions",
                "multi",
                ERRORBENCH_CONDITIONS,
                ERRORBENCH_CONDITIONS,
                required=True,
            ),
            RunField(
                "--template",
                "Prompt template",
                "select",
                default="errorbench/quoted.v1",
                choices_from="core.benchmarks.errorbench.prompts:template_choices",
                format_from="core.engine.templates:label",
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
                "core.benchmarks.errorbench.cli",
                "score a hypothesis M2 file against a gold M2 file",
            ),
        ),
    )
)

register(
    Benchmark(
        name="bbm",
        label="BIG-Bench Mistake",
        description="BIG-Bench Mistake (mistake finding)",
        variant_name="method",
        variants=BBM_METHODS,
        mode="passive",
        import_word="bbm",
        import_help="import BIG-Bench Mistake traces (JSONL)",
        import_files=("jsonl", "json"),
        cli_module="core.benchmarks.bbm.cli",
        importer="core.benchmarks.bbm.items:import_bytes",
        builtin=("bbm-sample", "bbm_sample.jsonl", "core.benchmarks.bbm.items:import_builtin"),
        task="core.benchmarks.bbm.task:BbmTask",
        judged_by_model=False,
        migrate_sql="core.benchmarks.bbm.record:MIGRATE_SQL",
        declared="core.benchmarks.bbm.declared:DECLARED",
        page="pages/mistake_finding.py",
        page_title="Mistake finding (BBM)",
        page_icon=":material/search:",
        drill_params=(("runs", "{run}"), ("trace_run", "{run}")),
        short="bbm",
        scorer="core.benchmarks.bbm.task:score_stored",
        extractor="core.benchmarks.bbm.extract:extract",
        sample_strata=("primary_category", "is_error"),  # task × mistake present
        comparison="core.benchmarks.bbm.compare:COMPARISON",
        published=(("published_bbm", "core.benchmarks.bbm.published:read_bbm"),),
        published_sources="core.benchmarks.bbm.published:sources",
        import_label="BIG-Bench Mistake traces",
        grid_note="Cell: predicted first wrong step vs gold (none = no mistake), then the response. "
        "✓ exact location; ✗ wrong or unparsable; – failed.",
        run_fields=(
            RunField(
                "--method",
                "Method",
                "select",
                BBM_METHODS,
                "direct_trace",
                required=True,
            ),
            RunField(
                "--template",
                "Prompt template",
                "select",
                default="",
                choices_from="core.benchmarks.bbm.prompts:form_template_choices",
                format_from="core.benchmarks.bbm.prompts:form_template_label",
                help="must name the method (default: the method's own v1); "
                "bbm/direct_trace_structured.v1 asks for JSON bounded by a response_format schema "
                "(the first wrong step or null) so a small local model's answers can be read — NOT "
                "the paper's protocol (needs a server that honours response_format: the local "
                "SmolLM2, vLLM, OpenAI)",
            ),
        ),
    )
)

register(
    Benchmark(
        name="processbench",
        label="ProcessBench",
        description="ProcessBench (earliest wrong step in math solutions)",
        variant_name="prompt",
        variants=("critique",),
        mode="passive",
        import_word="processbench",
        import_help="import ProcessBench solutions (Parquet, JSONL or JSON from Qwen/ProcessBench)",
        import_files=("parquet", "jsonl", "json"),
        cli_module="core.benchmarks.processbench.cli",
        importer="core.benchmarks.processbench.items:import_bytes",
        builtin=(
            "processbench-sample",
            "processbench_sample.jsonl",
            "core.benchmarks.processbench.items:import_builtin",
        ),
        task="core.benchmarks.processbench.task:ProcessBenchTask",
        judged_by_model=False,
        scorer="core.benchmarks.processbench.task:score_stored",
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
                choices_from="core.benchmarks.processbench.prompts:template_choices",
                format_from="core.engine.templates:label",
                help="processbench/critique.v1: the paper's critique prompt "
                "(github.com/QwenLM/ProcessBench, code/templates/critique_template.txt); the "
                "answer is the index in the last \\boxed{}. "
                "processbench/critique_structured.v1 asks for JSON bounded by a response_format "
                "schema so a small local model's answers can be read — NOT the paper's protocol "
                "(needs a server that honours response_format: the local SmolLM2, vLLM, OpenAI)",
            ),
        ),
    )
)


register(
    Benchmark(
        name="pcbench",
        label="PCBench",
        description="PCBench (premise critique, proactive and assisted; judged)",
        variant_name="variants",
        variants=PCBENCH_VARIANTS,
        # the benchmark as is: the model is not told to check the premises; its `assisted`
        # variant is the passive side (rows of its comparison carry each variant's mode)
        mode="proactive",
        import_word="pcbench",
        import_help="import PCBench problems (dataset.jsonl of ALIENS232/PCBench; JSONL, JSON)",
        import_files=("jsonl", "json"),
        import_label="PCBench problems",
        format_help="core.benchmarks.pcbench.items:FORMAT_HELP",
        cli_module="core.benchmarks.pcbench.cli",
        importer="core.benchmarks.pcbench.items:import_bytes",
        builtin=(
            "pcbench-sample",
            "pcbench_sample.jsonl",
            "core.benchmarks.pcbench.items:import_builtin",
        ),
        task="core.benchmarks.pcbench.task:PcbenchTask",
        judged_by_model=True,
        judge="core.benchmarks.pcbench.record:judge",
        judge_template="core.benchmarks.pcbench.prompts:judge_template_id",
        views="core.benchmarks.pcbench.record:VIEWS",
        labels="core.benchmarks.pcbench.record:LABEL_LETTERS",
        label_help="core.benchmarks.pcbench.record:LABEL_HELP",
        page="pages/pcbench_results.py",
        page_title="Premise critique (PCBench)",
        page_icon=":material/report:",
        run_param="pc_runs",
        drill_params=(("pc_run", "{run}"),),
        short="pc",
        variants_per_run=True,
        sample_strata=("primary_category", "secondary_category"),  # error type × difficulty
        published=(("published_pcbench", "core.benchmarks.pcbench.published:read"),),
        result_formats=(("pcbench-verdicts", "core.benchmarks.pcbench.verdicts"),),
        published_sources="core.benchmarks.pcbench.published:sources",
        comparison="core.benchmarks.pcbench.compare:COMPARISON",
        gold_label="Flawed premise",
        grid_note="Cell: C when the judge says the response critiques the flawed premise (∅ "
        "not), then the response. ✓ critiqued; ✗ not; – failed or not judged.",
        run_fields=(
            RunField(
                "--variants",
                "Variants",
                "multi",
                PCBENCH_VARIANTS,
                PCBENCH_VARIANTS,
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
                choices_from="core.benchmarks.pcbench.prompts:judge_templates",
                help="pcbench/judge.v2: the paper's judge prompt byte for byte (evaluation/eval.py "
                "of MLGroupJLU/Premise_Critique); judge.v1: the same words without its leading "
                "and trailing newline. Stored with the run.",
            ),
        ),
    )
)
