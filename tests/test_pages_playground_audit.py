"""AppTest: the Playground and Judge audit pages, against a real scripted HTTP server and DB."""

from __future__ import annotations

import json
import threading

import pytest
from streamlit.testing.v1 import AppTest

from core import audit
from core.storage import JUDGE_LABELS
from tests.audit_fixtures import two_runs
from tests.conftest import ROOT
from tests.fake_openai import from_script
from tests.playground_fixtures import PASSIVE_REPLY, PROACTIVE_REPLY, SCRIPT

APP = str(ROOT / "app.py")
PLAYGROUND = "pages/playground.py"
AUDIT = "pages/judge_audit.py"


def _open(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [w.value for w in at.warning] + [i.value for i in at.info]
    return "\n".join(parts)


@pytest.fixture
def fake_server(monkeypatch, tmp_path):
    server = from_script({**SCRIPT, "record": True}).start()
    models = tmp_path / "models.toml"
    models.write_text(f'[endpoints.fake-judge]\nbase_url = "{server.url}"\nmodel = "judge-x"\n')
    monkeypatch.setenv("EHW_MODELS_FILE", str(models))
    monkeypatch.setenv("EHW_LOCAL_URL", server.url)
    try:
        yield server
    finally:
        server.stop()


# -- Playground -------------------------------------------------------------------------------

def test_playground_typed_prompt_streams_judges_saves_and_reopens(initialised_store, fake_server):
    at = _open(PLAYGROUND)
    assert any("Weak model" in w.value for w in at.warning)  # local model is the default
    at.radio(key="w_pg_src").set_value("Type my own").run()
    at.text_area(key="pg_prompt").input("Wich composser wrote the Eroica?").run()
    at.selectbox(key="w_pg_judge").set_value("fake-judge").run()
    at.button(key="pg_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    text = _texts(at)
    assert PROACTIVE_REPLY in text and PASSIVE_REPLY in text
    # Six badges per side: all true for the passive answer, all false for the proactive one.
    badges = [m.value for m in at.markdown if "-badge[" in m.value]
    assert len(badges) == 2
    assert all(f":gray-badge[✗ {l}]" in badges[0] for l in JUDGE_LABELS)
    assert all(f":green-badge[✓ {l}]" in badges[1] for l in JUDGE_LABELS)
    assert "points out the error" in text  # rationales shown
    run_id = initialised_store.scalar("SELECT run_id FROM runs WHERE kind = 'playground'")
    assert run_id and at.query_params["exchange"] in (run_id, [run_id])
    judge_models = {r["body"]["model"] for r in fake_server.chat_requests
                    if r["body"].get("response_format")}
    assert judge_models == {"judge-x"}
    # Reopen from a fresh session by URL.
    again = _open(PLAYGROUND, exchange=run_id)
    again_text = _texts(again)
    assert PROACTIVE_REPLY in again_text and PASSIVE_REPLY in again_text
    assert len([m for m in again.markdown if "-badge[" in m.value]) == 2


def test_playground_example_prompt_shows_ground_truth(initialised_store, fake_server):
    at = _open(PLAYGROUND, pg_primary="Factual Errors")
    assert at.selectbox(key="w_pg_primary").value == "Factual Errors"
    text = _texts(at)
    assert "Ground truth:" in text and "What is wrong:" in text
    secondaries = at.selectbox(key="w_pg_secondary").options
    assert set(secondaries) == {"Circumstance Error", "Entity Error", "Relation Error"}
    at.button(key="pg_send").click().run()
    assert not at.exception
    row = initialised_store.df("SELECT params FROM runs WHERE kind = 'playground'")
    item = json.loads(row["params"][0])["item"]
    assert item["primary_category"] == "Factual Errors" and item["gold"]


def test_playground_unreachable_endpoint_says_which_and_how(initialised_store, monkeypatch,
                                                             tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    monkeypatch.setenv("EHW_LOCAL_URL", dead)
    models = tmp_path / "models.toml"
    models.write_text("")
    monkeypatch.setenv("EHW_MODELS_FILE", str(models))
    at = _open(PLAYGROUND)
    at.radio(key="w_pg_src").set_value("Type my own").run()
    at.text_area(key="pg_prompt").input("Is the moon made of cheese?").run()
    at.button(key="pg_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    errors = " ".join(e.value for e in at.error)
    assert "model endpoint 'local'" in errors and dead in errors
    help_text = _texts(at)
    for where in ("data/models.toml", ".streamlit/secrets.toml", "python -m core serve-local"):
        assert where in help_text
    assert initialised_store.scalar("SELECT count(*) FROM runs WHERE kind = 'playground'") == 0
