"""An LLM-judged example benchmark, added exactly the way docs/adding-a-benchmark.md says:
one package (here under tests/, a shipped one lives under core/benchmarks/) and one
`register(Benchmark(...))` call (here `install()`, a shipped one's is in core/registry.py).

The benchmark: each item is a question, most with a planted error (a false premise), some
without (controls). The model answers; an LLM judge says whether the answer `noticed` the
error and whether it `fixed` it (two named labels). Used by tests/test_judged_example.py,
which drives every entry point (CLI, pages) with it through the registry alone.
"""

from __future__ import annotations

from core.registry import Benchmark, RunField, register

NAME = "judged"
PACKAGE = __name__
VARIANTS = ("plain",)

BENCHMARK = Benchmark(
    name=NAME,
    label="Judged example",
    description="Judged example (planted errors; judged)",
    variant_name="variant",
    variants=VARIANTS,
    mode="proactive",
    import_word=NAME,
    import_help="import judged-example questions (JSONL)",
    import_files=("jsonl",),
    import_label="Judged example questions",
    cli_module=f"{PACKAGE}.cli",
    importer=f"{PACKAGE}.items:import_bytes",
    builtin=None,
    task=f"{PACKAGE}.task:JudgedTask",
    judged_by_model=True,
    judge=f"{PACKAGE}.record:judge",
    judge_template=f"{PACKAGE}.prompts:judge_template_id",
    labels=f"{PACKAGE}.record:LABEL_LETTERS",
    views=f"{PACKAGE}.record:VIEWS",
    # Streamlit serves (and links to) page files under pages/ only, so a test benchmark shows its
    # runs on the Overview; its own results page, results_page.py, is run by AppTest as a file.
    # A shipped benchmark names its file under pages/ here.
    page="pages/overview.py",
    page_title="Judged example results",
    short="jx",
    has_controls=True,
    gold_label="Planted error",
    grid_note="Cell: the judge labels that are true — N noticed, F fixed (∅ none) — then the "
    "response. ✓ noticed on an item with an error, not noticed on a control; ✗ wrong.",
    run_fields=(
        RunField("--variant", "Variant", "select", VARIANTS, "plain"),
        RunField(
            "--judge-template",
            "Judge template",
            "select",
            default="judged/judge.v1",
            choices_from=f"{PACKAGE}.prompts:judge_templates",
        ),
    ),
)


def install() -> Benchmark:
    """Register the benchmark (what a shipped benchmark's entry in core/registry.py does)."""
    return register(BENCHMARK)
