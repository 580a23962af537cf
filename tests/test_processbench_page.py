"""AppTest of the ProcessBench page: listed in app.py's navigation through the registry, the
split × model heatmap of a scripted run (its table downloadable), the metrics rows, the
solution drill-down (steps, label, the critique's verdict, all shown as code blocks), filters
kept in the URL, and the missing published table said on the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.core_cli import run_core
from tests.fake_openai import FakeOpenAI
from tests.test_processbench_run import SCRIPT, expected, fault, responder

APP = str(Path(__file__).resolve().parent.parent / "app.py")
RUN = "pb-page"
MARK = "*not markdown* $x$"  # a critique with Markdown / LaTeX in it


def open_page(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page("pages/processbench_results.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def with_run(initialised_store):
    def reply(body: dict) -> str:
        text = responder(body)
        return f"{MARK} {text}" if "\\boxed{0}" in text else text

    with FakeOpenAI(responder=reply, fault_fn=fault) as server:
        done = run_core(
            "run", "processbench", "--items", "processbench-sample", "--base-url", server.url,
            "--model", "critic", "--run-name", RUN, "--quiet",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return initialised_store


def heatmap_spec(at: AppTest) -> dict:
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return next(c for c in charts if c["data"] and c["data"][0]["type"] == "heatmap")


def codes(at: AppTest) -> list[str]:
    return [c.value for c in at.code]


def test_without_runs_the_page_offers_the_sample_and_says_no_table_is_published(
    initialised_store,
) -> None:
    at = open_page()
    assert any("not shipped" in i.value for i in at.info)
    assert any(e.label == "Start a run" for e in at.expander)
    assert at.selectbox(key="pb_start_set").value == "processbench-sample"
    nav = AppTest.from_file(APP, default_timeout=90)
    nav.run()
    assert not nav.exception


def test_heatmap_metrics_and_drill_down_of_a_run(with_run) -> None:
    at = open_page(pb_runs=RUN, pb_measure="f1")
    spec = heatmap_spec(at)
    trace = spec["data"][0]
    assert trace["y"] == ["gsm8k", "math", "overall", "average"]
    assert trace["x"] == [f"critic · {RUN}"]
    exp = expected()
    # 8 solutions per split: below MIN_N, so greyed (z empty) with the value and n as text
    assert trace["z"][0][0] is None and trace["text"][0][0] == f"{exp['gsm8k'][3]:.1f} (n=8)"
    assert trace["z"][2][0] == pytest.approx(exp["overall"][3])
    frames = [d.value for d in at.dataframe]
    heat = frames[0]
    assert list(heat.columns) == ["split", "model", "source", "f1", "n"]
    assert heat.set_index("split").loc["math", "f1"] == pytest.approx(exp["math"][3])
    rows = frames[1].set_index("split")  # a column with a gap is shown as text (issue 31)
    assert float(rows["error_acc"]["overall"]) == pytest.approx(exp["overall"][1], abs=0.005)
    assert {"ci_low", "ci_high", "judging", "judging_template", "n"} <= set(rows.columns)


def test_drill_down_shows_steps_label_and_verdict_as_code_with_filters_in_the_url(
    with_run,
) -> None:
    at = open_page(pb_runs=RUN, pb_run=RUN, pb_split="gsm8k", pb_outcome="right")
    listing = at.dataframe[-1].value
    assert set(listing["split"]) == {"gsm8k"} and bool(listing["match"].all())
    right = [k for k, (_, idx, _) in SCRIPT.items() if k.startswith("gsm8k")]
    assert set(listing["item_id"]) <= set(right)
    at.selectbox(key="w_pb_item").set_value("gsm8k-1").run()
    assert at.query_params["pb_item"] in ("gsm8k-1", ["gsm8k-1"])  # shareable by link
    shown = codes(at)
    steps = next(
        json.loads(line)["steps"]
        for line in (Path(APP).parent / "data/samples/processbench_sample.jsonl")
        .read_text()
        .splitlines()
        if '"gsm8k-1"' in line
    )
    assert all(step in shown for step in steps)
    assert any(MARK in c for c in shown)  # the critique, verbatim, in a code block
    markdown = " ".join(m.value for m in at.markdown)
    assert MARK not in markdown and "paragraph 0" in markdown
    captions = " ".join(c.value for c in at.caption)
    assert "◀ label: earliest wrong paragraph" in captions
    assert "◀ the critique's answer" in captions


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("pages/overview.py", {}),
        ("pages/runs.py", {"bench": "processbench", "run": RUN}),
        ("pages/grid.py", {"g_bench": "processbench", "g_set": "processbench-sample"}),
        ("pages/compare.py", {}),
        ("pages/proactive_passive.py", {}),
    ],
)
def test_the_shared_pages_render_with_a_processbench_run(with_run, page, params) -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in {**params, **({"g_runs": RUN} if "g_bench" in params else {})}.items():
        at.query_params[key] = value
    at.switch_page(page)
    at.run()
    assert not at.exception, (page, [e.value for e in at.exception])
    if page == "pages/runs.py":
        links = {p.proto.label: p.proto.query_string for p in at.get("page_link")}
        assert links["Results — ProcessBench"] == f"pb_runs={RUN}"


def test_the_import_page_takes_an_upload_in_the_released_format(initialised_store) -> None:
    sample = (Path(APP).parent / "data/samples/processbench_sample.jsonl").read_bytes()
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/import_data.py")
    at.run()
    at.radio(key="import_kind").set_value("ProcessBench solutions").run()
    at.file_uploader(key="upload_processbench").set_value(
        ("test.jsonl", sample, "application/jsonl")
    )
    at.run()
    at.text_input(key="set_name").set_value("pb-uploaded").run()
    at.button(key="do_import").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert initialised_store.rows(
        "SELECT benchmark, n_items FROM item_sets WHERE name = 'pb-uploaded'"
    ) == [("processbench", 16)]


def test_the_average_row_shows_dashes_not_none(with_run) -> None:
    """The `average` row has no accuracies: Streamlit drew its empty cells as "None"."""
    at = open_page(pb_runs=RUN, pb_measure="error_acc")
    for frame in (d.value for d in at.dataframe[:2]):
        assert not frame.isna().to_numpy().any(), frame
    rows = at.dataframe[1].value.set_index("split")
    assert rows.loc["average", "error_acc"] == "–"
