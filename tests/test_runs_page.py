"""The Runs page (AppTest): runs listed with progress, a run watched, a run started and followed."""

from __future__ import annotations

import json
import time

from streamlit.testing.v1 import AppTest

from core.engine.endpoints import Endpoint
from core.engine.runner import RunSpec, execute_run
from core.services import jobs
from tests.echo_task import EchoTask, create_item_set
from tests.fake_openai import FakeOpenAI, FakeProcess

ROOT = jobs.PROJECT_ROOT


def open_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/runs.py")
    at.run()
    assert not at.exception, at.exception
    return at


def add_bbm_like_run(store, url: str, run_id: str = "bbm-fake-run", n: int = 5) -> None:
    """A finished run through the real runner (EchoTask posing as a bbm method)."""
    create_item_set(store, "bbm-fake", "bbm", [f"trace {i}" for i in range(n)])
    spec = RunSpec(
        run_id=run_id,
        benchmark="bbm",
        item_set="bbm-fake",
        setting="direct_trace",
        endpoint=Endpoint("fake", (url,), "fake-model", weak=True),
    )
    execute_run(
        store,
        spec,
        EchoTask(benchmark="bbm", variant="direct_trace", needs_judge=False),
        progress=False,
    )


def test_lists_runs_with_progress_and_watches_one(store):
    with FakeOpenAI() as server:
        add_bbm_like_run(store, server.url)
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, model, setting) "
        "VALUES ('mp-half', 'misprompt', 'cancelled', 4, 'm', 'cot')"
    )
    at = open_page()
    frame = at.dataframe[0].value
    assert set(frame["run_id"]) == {"bbm-fake-run", "mp-half"}
    row = frame[frame["run_id"] == "bbm-fake-run"].iloc[0]
    assert (row["done"], row["planned"], row["progress"]) == (5, 5, 1.0)
    assert "weak" in row["model"]
    half = frame[frame["run_id"] == "mp-half"].iloc[0]
    assert (half["done"], half["progress"]) == (0, 0.0) and "cancelled" in half["status"]

    run_box = at.selectbox(key="w_run")
    run_box.select("bbm-fake-run").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["done"] == "5 / 5" and metrics["status"] == "done"
    assert any("Weak model" in w.value for w in at.warning)
    assert at.query_params["run"] == ["bbm-fake-run"] or at.query_params["run"] == "bbm-fake-run"

    # benchmark filter (URL-synced)
    at.multiselect(key="w_bench").set_value(["misprompt"]).run()
    assert list(at.dataframe[0].value["run_id"]) == ["mp-half"]


def test_form_builds_the_command_for_each_benchmark(initialised_store):
    at = open_page()
    at.radio(key="start_bench").set_value("bbm").run()
    at.selectbox(key="start_method").set_value("cot_step").run()
    command = at.code[-1].value
    assert command.startswith("python -m core run bbm --items ")
    assert "--endpoint local" in command and "--method cot_step" in command
    at.radio(key="start_bench").set_value("errorbench").run()
    at.multiselect(key="start_conditions").set_value(["blind", "anchored"]).run()
    assert "--conditions blind,anchored" in at.code[-1].value
    at.radio(key="start_bench").set_value("misprompt").run()
    at.selectbox(key="start_setting").set_value("three-shot").run()
    at.checkbox(key="start_passive").check().run()
    at.number_input(key="start_limit").set_value(3).run()
    command = at.code[-1].value
    assert "--setting three-shot --passive" in command and "--limit 3" in command
    assert not at.exception


def test_start_a_run_from_the_page_and_see_it_finish(initialised_store):
    store = initialised_store
    with FakeProcess({"latency": 0.01}) as server:
        at = open_page()
        at.radio(key="start_bench").set_value("misprompt").run()
        at.selectbox(key="start_endpoint").set_value("Custom base URL…").run()
        at.text_input(key="start_base_url").input(server.url).run()
        at.text_input(key="start_model").input("fake-model").run()
        at.number_input(key="start_limit").set_value(3).run()
        at.text_input(key="start_run_name").input("from-the-page").run()
        assert "--base-url " + server.url in at.code[-1].value
        at.button(key="start_button").click().run()
        assert not at.exception, at.exception
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            progress = jobs.run_progress(store, "from-the-page")
            if progress and progress["status"] != "running":
                break
            time.sleep(0.3)
        assert progress["status"] == "done", jobs.read_log(store.path, "from-the-page")
    at.run()
    frame = at.dataframe[0].value
    row = frame[frame["run_id"] == "from-the-page"].iloc[0]
    assert (row["done"], row["planned"]) == (3, 3)
    assert at.selectbox(key="w_run").value == "from-the-page"
    params = json.loads(store.scalar("SELECT params FROM runs WHERE run_id = 'from-the-page'"))
    assert params["endpoint"]["base_urls"] == [server.url]


def test_a_broken_endpoints_file_is_one_plain_error_on_the_start_forms(
    initialised_store, tmp_path, monkeypatch
):
    """The Runs page's start form and the results pages' start panels say the endpoints file is
    broken once each, the file's text shown as text (no Markdown), and still offer `local`."""
    folder = tmp_path / "**bold** [link](http:)"  # the message names the file: Markdown in it
    folder.mkdir()
    broken = folder / "models.toml"
    broken.write_text('[endpoints.x]\nbase_url = "unclosed\n', "utf-8")
    monkeypatch.setenv("EHW_MODELS_FILE", str(broken))
    for page in ("pages/runs.py", "pages/mistake_finding.py"):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.switch_page(page)
        at.run()
        assert not at.exception, at.exception
        errors = [e.value for e in at.error if "endpoints file has a problem" in e.value]
        assert len(errors) == 1, (page, errors)
        assert "\\*\\*bold\\*\\*" in errors[0] and "\\[link\\]" in errors[0], errors[0]


def test_a_sharded_run_shows_its_shards(store):
    """`run --shard K/N`: the watched run lists its shards (done/planned, host, status)."""

    create_item_set(store, "bbm-fake", "bbm", [f"trace {i}" for i in range(6)])
    with FakeOpenAI() as server:
        spec = RunSpec(
            run_id="sharded",
            benchmark="bbm",
            item_set="bbm-fake",
            setting="direct_trace",
            endpoint=Endpoint("fake", (server.url,), "fake-model"),
            shard=(1, 2),
        )
        task = EchoTask(benchmark="bbm", variant="direct_trace", needs_judge=False)
        execute_run(store, spec, task, progress=False)
    at = open_page()
    at.selectbox(key="w_run").select("sharded").run()
    assert not at.exception, at.exception
    assert any("Shards" in m.value for m in at.markdown)
    shards = [d.value for d in at.dataframe if "shard" in d.value.columns][0]
    assert list(shards["shard"]) == ["1/2"] and list(shards["status"]) == ["done"]
    assert list(shards["done"]) == ["3/3 (100%)"]
