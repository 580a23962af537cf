"""Mistake-finding page: paper-protocol runs marked, Dyck subsample flagged, Table 9 vs Table 4
consistency shown, and a warning for runs whose answers were mostly not readable. Anchoring page:
the same warning for ErrorBench (a model that ignores the format shows flat charts)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from core.cli import main as cli
from tests.fake_openai import FakeOpenAI

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAPER_DIR = "/work/shared/data/bigbench_mistake/mistake_finding_prompts"
DYCK = "/work/shared/data/bigbench_mistake/dyck_languages.jsonl"


def open_page(page: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _run(args: list[str], reply: str) -> None:
    with FakeOpenAI(responder=lambda body: reply) as server:
        assert cli(args + ["--base-url", server.url, "--model", "scripted", "--quiet"]) == 0


def test_consistency_table_and_warning(initialised_store) -> None:
    at = open_page("pages/mistake_finding.py")
    frames = [d.value for d in at.dataframe]
    t9 = next(f for f in frames if "recomputed_table_4" in f.columns)
    row = t9[
        (t9["task"] == "Logical deduction")
        & (t9["model"] == "GPT-4-Turbo")
        & (t9["method"] == "direct_trace")
    ].iloc[0]
    assert (row["published_table_4"], round(row["difference"], 2)) == (21.33, 1.06)
    warnings = " ".join(w.value for w in at.warning)
    assert "Logical deduction · GPT-4-Turbo · Direct (trace): 22.39 vs 21.33 (+1.06)" in warnings


def test_paper_protocol_run_is_marked_and_unreadable_run_warned(initialised_store) -> None:
    _run(
        [
            "run",
            "bbm",
            "--items",
            "bbm-sample",
            "--method",
            "direct_trace",
            "--prompts",
            "paper",
            "--paper-prompts-dir",
            PAPER_DIR,
            "--run-name",
            "paper-run",
        ],
        "No",
    )
    _run(
        [
            "run",
            "bbm",
            "--items",
            "bbm-sample",
            "--method",
            "direct_trace",
            "--run-name",
            "garbled",
        ],
        "I am not sure what you mean.",
    )
    at = open_page("pages/mistake_finding.py", runs="paper-run,garbled")
    box = next(m for m in at.multiselect if m.label == "Runs beside the paper")
    assert any("paper-run" in o and "[paper prompts]" in o for o in box.options)
    assert not any("garbled" in o and "[paper prompts]" in o for o in box.options)
    frames = [d.value for d in at.dataframe]
    protocols = next(f for f in frames if "protocol" in f.columns).set_index("run_id")
    assert protocols.loc["paper-run", "protocol"] == "paper"
    assert protocols.loc["paper-run", "template_id"] == "bbm-paper/direct_trace"
    assert protocols.loc["garbled", "protocol"] == "ours"
    warnings = [w.value for w in at.warning]
    assert any(
        w.startswith("Run garbled: 12 of 12 answers (100%) could not be scored") for w in warnings
    )
    assert not any(w.startswith("Run paper-run") for w in warnings)
    at = open_page("pages/mistake_finding.py", runs="paper-run", trace_run="paper-run")
    assert any(e.label == "Prompt template (bbm-paper/direct_trace)" for e in at.expander)
    assert "the paper's own 3-shot prompts" in " ".join(c.value for c in at.caption)


def test_dyck_subsample_runs_are_flagged(initialised_store) -> None:
    assert (
        cli(["import", "bbm", DYCK, "--dyck-sample", "20", "--seed", "1", "--name", "dyck20"]) == 0
    )
    _run(
        ["run", "bbm", "--items", "dyck20", "--method", "direct_trace", "--run-name", "on-sample"],
        "No",
    )
    at = open_page("pages/mistake_finding.py", runs="on-sample")
    captions = " ".join(c.value for c in at.caption)
    assert "Dyck cells of run(s) on-sample are on a subsample drawn like the paper's" in captions
    assert "every published Dyck cell uses the paper's 592-trace sample" in captions
    box = next(m for m in at.multiselect if m.label == "Runs beside the paper")
    assert any("on-sample" in o and "[Dyck subsampled]" in o for o in box.options)


def test_anchoring_warns_when_answers_are_not_read(initialised_store) -> None:
    _run(
        [
            "run",
            "errorbench",
            "--items",
            "errorbench-sample",
            "--limit",
            "2",
            "--run-name",
            "eb-flat",
        ],
        "What a lovely essay about technology.",
    )
    at = open_page("pages/anchoring.py", eb_runs="eb-flat")
    warnings = [w.value for w in at.warning]
    assert any(
        w.startswith("Run eb-flat (scripted): 10 of 10 answers (100%) could not be read")
        for w in warnings
    )


def test_run_with_an_old_template_id_still_shows_its_template(initialised_store) -> None:
    """A run stored before the one-template format (`bbm/direct_trace_v1`) finds its file."""
    from core.engine.templates import load

    _run(
        [
            "run",
            "bbm",
            "--items",
            "bbm-sample",
            "--method",
            "direct_trace",
            "--run-name",
            "old-run",
        ],
        "No",
    )
    initialised_store.execute(
        "UPDATE runs SET template_id = 'bbm/direct_trace_v1' WHERE run_id = 'old-run'"
    )
    at = open_page("pages/mistake_finding.py", runs="old-run", trace_run="old-run")
    exp = next(e for e in at.expander if e.label.startswith("Prompt template"))
    assert exp.label == "Prompt template (bbm/direct_trace_v1)"
    captions = " ".join(c.value for c in at.caption)
    assert "template bbm/direct_trace.v1 (stored as bbm/direct_trace_v1)" in captions
    codes = [c.value for c in at.code]
    assert load("bbm/direct_trace.v1").sections["user"] in codes
