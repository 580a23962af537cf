"""AppTest of the Anchoring page: empty database (offers a run) and with a scripted run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.fake_openai import FakeOpenAI
from tests.item_subsets import first_items
from tests.test_errorbench_run import cli, responder

ROOT = Path(__file__).resolve().parent.parent
PAGE = "pages/anchoring.py"
WEAK = "Weak model"


def _open(params: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page(PAGE)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _values(array) -> list:
    """Plotly 7 sends numeric arrays as {"dtype", "bdata"} (base64): decode them."""
    if isinstance(array, dict) and "bdata" in array:
        import base64

        import numpy as np

        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [i.value for i in at.info]
    parts += [c.value for c in at.caption] + [w.value for w in at.warning]
    return "\n".join(str(p) for p in parts)


def test_without_runs_the_page_says_so_and_offers_a_local_run(initialised_store):
    at = _open()
    assert any("No ErrorBench run in this database yet" in i.value for i in at.info)
    labels = [b.label for b in at.button]
    assert "Start run" in labels  # the form's submit button
    assert any(e.label.startswith("Start a run") for e in at.expander)
    # the published headline is shown even without runs
    head = at.dataframe[0].value
    assert "0.79" in head["paper"].tolist() and "0.21" in head["paper"].tolist()


@pytest.fixture
def run_db(initialised_store):
    with FakeOpenAI(responder=responder) as server:
        assert (
            cli(
                [
                    "run",
                    "errorbench",
                    "--items",
                    first_items(initialised_store, "errorbench-sample", 2),
                    "--base-url",
                    server.url,
                    "--model",
                    "scripted",
                    "--run-name",
                    "eb-page",
                    "--quiet",
                ]
            )
            == 0
        )
    return initialised_store


def test_with_a_run_charts_name_their_source(run_db):
    at = _open()
    charts = at.get("plotly_chart")
    specs = [json.loads(c.proto.spec) for c in charts]
    titles = [s["layout"]["title"]["text"] for s in specs]
    assert any(t.startswith("Count bias") for t in titles)
    assert any(t.startswith("Count-F1 vs overlap F0.5") for t in titles)
    assert any(t.startswith("Span precision and recall") for t in titles)
    assert any(t.startswith("Paired bootstrap") for t in titles)
    box = next(s for s in specs if s["layout"]["title"]["text"].startswith("Count bias"))
    # CB values per passage: anchored 0, 0 for the scripted model
    assert box["data"][0]["name"] == "scripted"
    bars = next(s for s in specs if s["layout"]["title"]["text"].startswith("Count-F1 vs"))
    count_trace = next(t for t in bars["data"] if t["name"] == "Count-F1")
    assert max(_values(count_trace["y"])) == pytest.approx(1.0)  # anchored
    gap = next(t for t in bars["data"] if t["name"].startswith("ΔF"))
    # anchored: Count-F1 1 − overlap F0.5 6/7 (see test_errorbench_run) = +0.14
    assert "+0.14" in gap["text"]
    captions = [c.value for c in at.caption]
    assert sum("Source: run eb-page" in c for c in captions) >= 5
    # every table has a download button
    assert len(at.get("download_button")) >= 2


def test_drill_down_marks_lines_located_or_not(run_db):
    at = _open({"eb_drill_run": "eb-page", "eb_drill_cond": "mislead_high", "eb_passage": "p0001"})
    html_blocks = [m.value for m in at.markdown if "eb-sentence" in m.value]
    assert len(html_blocks) >= 2
    gold_html, hyp_html = html_blocks[0], html_blocks[1]
    assert gold_html.count("class='eb-gold'") == 4
    assert "data-span='3:3:4'" in hyp_html and "immedietly" in hyp_html
    frames = [d.value for d in at.dataframe]
    lines = next(f for f in frames if "ERROR" in f.columns)
    assert lines["located"].tolist().count("❌ not located") == 1
    assert lines["located"].tolist().count("✅ located") == 5
    assert "reported n̂ = **6**" in _text(at)


def test_conditions_filter_lives_in_the_url(run_db):
    at = _open({"eb_conds": "blind,anchored", "eb_span": "strict"})
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    bars = next(s for s in specs if s["layout"]["title"]["text"].startswith("Count-F1 vs strict"))
    conditions = set(bars["data"][0]["x"][1])
    assert conditions == {"Blind", "Anchored"}
    assert at.query_params["eb_span"] == ["strict"] or at.query_params["eb_span"] == "strict"


def test_start_a_local_run_from_the_empty_page(initialised_store, monkeypatch):
    """The offered run really starts (`python -m core run errorbench` in the background), its
    progress shows, and the results appear once it is done."""
    import time

    from core.services.jobs import run_progress

    with FakeOpenAI(responder=responder) as server:
        monkeypatch.setenv("EHW_LOCAL_URL", server.url)
        at = _open()
        at.number_input[0].set_value(2)
        submit = next(b for b in at.button if b.label == "Start run")
        submit.click()
        at.run()
        assert not at.exception, at.exception
        started = [s.value for s in at.success]
        assert started and started[0].startswith("Started run eb-smollm2-135m-")
        run_id = started[0].split()[2]
        deadline = time.time() + 60
        while time.time() < deadline:
            progress = run_progress(initialised_store, run_id)
            if progress and progress["status"] in ("done", "failed"):
                break
            time.sleep(0.5)
        assert progress["status"] == "done" and progress["done"] == 10
        assert len(server.chat_requests) == 10
    at.run()
    bars = [p for p in at.get("progress")]
    assert bars and "10 / 10" in bars[0].proto.text
    next(b for b in at.button if b.label == "Show results").click()
    at.run()
    assert not at.exception
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any(t.startswith("Count bias") for t in titles)
    assert any(WEAK in w.value for w in at.warning)


def test_run_form_offers_the_template_variants(initialised_store, monkeypatch):
    """The form's template choice reaches the run: the free-description template's id is stored
    and its system prompt is what the model receives."""
    import time

    from core.engine.templates import load
    from core.services.jobs import run_progress

    with FakeOpenAI(responder=responder) as server:
        monkeypatch.setenv("EHW_LOCAL_URL", server.url)
        at = _open()
        box = next(s for s in at.selectbox if s.label == "Prompt template")
        assert box.options[0].startswith("errorbench/quoted.v1")
        assert any(o.startswith("errorbench/free.v1") for o in box.options)
        box.set_value("errorbench/free.v1")
        at.number_input[0].set_value(1)
        next(b for b in at.button if b.label == "Start run").click()
        at.run()
        assert not at.exception, at.exception
        run_id = [s.value for s in at.success][0].split()[2]
        deadline = time.time() + 60
        while time.time() < deadline:
            progress = run_progress(initialised_store, run_id)
            if progress and progress["status"] in ("done", "failed"):
                break
            time.sleep(0.5)
        assert progress["status"] == "done"
        systems = {r["body"]["messages"][0]["content"] for r in server.chat_requests}
    assert systems == {load("errorbench/free.v1").sections["system"]}
    assert (
        initialised_store.scalar("SELECT template_id FROM runs WHERE run_id = ?", [run_id])
        == "errorbench/free.v1"
    )


def test_metrics_table_shows_n_intervals_and_greys_small_rows(run_db):
    at = _open()
    frames = [d.value for d in at.dataframe]
    metrics = next(f for f in frames if "overlap_f05_ci_low" in f.columns)
    assert set(metrics["n"]) == {2}  # two passages per condition
    assert (metrics["overlap_f05_ci_low"] <= metrics["overlap_f05"] + 1e-12).all()
    # every row rests on 2 < MIN_N passages: greyed, and the caption says so
    assert "Grey rows (5) rest on fewer than 10 passages" in _text(at)
