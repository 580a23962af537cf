"""The engine's one template system (core/engine/templates.py): format, fill, ids, versions, aliases,
and that every benchmark's template files load through it."""

from __future__ import annotations

import pytest

from core.engine import templates
from core.engine.templates import TemplateError, fill, parse_template


def test_parse_sections_comments_and_default_user_section() -> None:
    t = parse_template(
        "# a comment\n# another\n\n=== system ===\nBe brief.\n=== user ===\n"
        "Q: {{q}}\n# kept: inside a section\n\n",
        "x/y.v2",
    )
    assert dict(t.sections) == {"system": "Be brief.", "user": "Q: {{q}}\n# kept: inside a section"}
    assert (t.benchmark, t.name, t.version) == ("x", "y", 2)
    assert parse_template("# c\nHello {{name}}", "x/z.v1").sections == {"user": "Hello {{name}}"}
    assert t.placeholders("user") == ["q"]


def test_parse_rejects_empty_and_repeated_sections() -> None:
    with pytest.raises(TemplateError, match="empty"):
        parse_template("# only comments\n", "x/e.v1")
    with pytest.raises(TemplateError, match="twice"):
        parse_template("=== user ===\na\n=== user ===\nb", "x/d.v1")


def test_fill_is_one_pass_and_unknown_placeholder_is_an_error() -> None:
    # a value holding braces (a Dyck trace) or a placeholder-looking text is not re-scanned
    assert fill("A {{x}} B {{ y }}", {"x": "{{y}} { [", "y": 2}) == "A {{y}} { [ B 2"
    assert fill("{x} {{x}}", {"x": None}) == "{x} "
    with pytest.raises(TemplateError, match=r"no value for placeholder \{\{z\}\}"):
        fill("{{z}}", {}, "t/u.v1")


def test_ids_versions_latest_and_listing() -> None:
    assert templates.split_id("bbm/direct_trace.v1") == ("bbm", "direct_trace", 1)
    assert templates.available_versions("judge", "misprompt")[0] == 1
    assert templates.latest_version("judge", "misprompt") == max(
        templates.available_versions("judge", "misprompt")
    )
    ids = templates.template_ids("bbm")
    assert {"bbm/direct_trace.v1", "bbm/direct_step.v1", "bbm/cot_step.v1"} <= set(ids)
    assert {"errorbench/quoted.v1", "errorbench/free.v1"} <= set(
        templates.template_ids("errorbench")
    )
    with pytest.raises(TemplateError, match="not a template id"):
        templates.split_id("nonsense")
    with pytest.raises(TemplateError, match="no template file"):
        templates.load("bbm/direct_trace.v99")


@pytest.mark.parametrize(
    "old,new",
    [
        ("bbm/direct_trace_v1", "bbm/direct_trace.v1"),
        ("bbm/direct_step_v1", "bbm/direct_step.v1"),
        ("bbm/cot_step_v1", "bbm/cot_step.v1"),
        ("errorbench-v1", "errorbench/quoted.v1"),
    ],
    ids=["bbm-direct_trace", "bbm-direct_step", "bbm-cot_step", "errorbench"],
)
def test_old_stored_ids_still_resolve(old: str, new: str) -> None:
    assert templates.resolve_id(old) == new
    assert templates.load(old).id == new
    found = templates.find(old + "+3shot")
    assert found is not None and found.id == new
    assert templates.resolve_id(old + "+3shot") == new + "+3shot"


def test_find_composite_and_unknown_ids() -> None:
    found = templates.find("misprompt/one-shot.v1+passive.v1")
    assert found is not None and found.id == "misprompt/one-shot.v1"
    assert templates.find("bbm-paper/direct_trace") is None
    assert templates.find(None) is None


def test_every_template_file_of_every_benchmark_loads() -> None:
    for benchmark in ("misprompt", "bbm", "errorbench"):
        ids = templates.template_ids(benchmark)
        assert ids, benchmark
        for tid in ids:
            t = templates.load(tid)
            assert t.id == tid and t.sections


def test_misprompt_module_keeps_its_public_names() -> None:
    from core.benchmarks.misprompt import prompts

    assert prompts.Template is templates.Template and prompts.TemplateError is TemplateError
    assert prompts.fill is fill and prompts.parse_template is parse_template
    assert prompts.load_template("zero-shot").id == "misprompt/zero-shot.v1"
    assert prompts.available_versions("zero-shot") == templates.available_versions(
        "zero-shot", "misprompt"
    )
    assert prompts.template_id("one-shot", passive=True) == "misprompt/one-shot.v1+passive.v1"
    assert prompts.PROMPTS_DIR == templates.PROMPTS_DIR


def test_bbm_templates_render_with_the_trace() -> None:
    from core.benchmarks.bbm.prompts import load_template, step_messages, trace_messages

    t = load_template("direct_trace")
    assert t.id == "bbm/direct_trace.v1"
    msgs = trace_messages(t, "Q?", ["a { b", "c }"])
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "Thought 1: a { b\nThought 2: c }" in msgs[1]["content"]
    assert "a number from 1 to 2" in msgs[1]["content"]
    step = step_messages(
        load_template("direct_step", "bbm/direct_step.v1"), "Q?", ["a", "b", "c"], 2
    )
    assert "Thought 2: b" in step[1]["content"] and "Thought 3" not in step[1]["content"]
    for bad in ("v1", "bbm/direct_trace.v7", "bbm/direct_step.v1"):  # one spelling, own method
        with pytest.raises(ValueError, match="valid ids: bbm/direct_trace.v1"):
            load_template("direct_trace", bad)


def test_one_spelling_is_accepted_and_old_stored_ids_are_shown_normalised() -> None:
    """Flags and forms accept a full id only (one line naming the valid ids); a stored old
    alias is shown as today's full id (read-time normalisation, no migration)."""
    ids = templates.template_ids("errorbench")
    assert templates.choose("errorbench/free.v1", ids) == "errorbench/free.v1"
    for bad in ("free.v1", "errorbench-v1", "errorbench/free.v9"):
        with pytest.raises(templates.TemplateError, match="valid ids: errorbench/") as err:
            templates.choose(bad, ids)
        assert "\n" not in str(err.value)
    assert templates.shown_id("bbm/direct_trace_v1+3shot") == "bbm/direct_trace.v1+3shot"
    assert templates.shown_id(float("nan")) is None and templates.shown_id("") is None
