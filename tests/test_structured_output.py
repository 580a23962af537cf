"""Structured-output templates (errorbench/structured.v1, bbm/direct_trace_structured.v1): NOT
the papers' protocol, offered so a small local model's answers can be read (issue 20, point 11).

The request carries a JSON-schema response_format (read from the scripted server's recorded
bodies); a JSON answer is scored exactly as the equivalent text answer of the text template; a
cut or invalid JSON is recorded (status, metadata), never silently scored; metrics work on such
runs; the run forms offer the ids with the "not the paper's protocol" label.
"""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from core.engine.templates import STRUCTURED_NOTE, is_structured, label
from tests.fake_openai import FakeOpenAI
from tests.item_subsets import first_items
from tests.test_errorbench_run import cli

# what the scripted model finds, per passage's first word: (wrong, correct) pairs
PAIRS = {
    "Nowadays": [("believes", "believe"), ("more easy", "easier"), ("game", "games")],
    "In": [("tree", "trees"), ("should to", "should"), ("cause a", "causes a")],
}


def _answer(user: str) -> tuple[list[tuple[str, str]], int]:
    """The scripted belief: told M, it lists min(M, what it found) and reports M; blind, it
    lists what it found and reports one more."""
    passage = user.split("Passage:\n", 1)[1]
    pairs = PAIRS.get(passage.split()[0], [("a", "an")])
    stated = re.search(r"contains exactly (\d+) error", user)
    if stated:
        m = int(stated.group(1))
        return pairs[:m], m
    return pairs, len(pairs) + 1


def text_responder(body: dict) -> str:
    pairs, total = _answer(body["messages"][-1]["content"])
    lines = [f'ERROR {k}: "{w}" -> "{c}"' for k, (w, c) in enumerate(pairs, start=1)]
    return "\n".join([*lines, f"TOTAL ERRORS FOUND: {total}"])


def json_responder(body: dict) -> str:
    assert body.get("response_format"), "a structured request without its schema"
    pairs, total = _answer(body["messages"][-1]["content"])
    return json.dumps({"errors": [{"wrong": w, "correct": c} for w, c in pairs], "total": total})


def _run(store, template: str, name: str, responder, fault_fn=None) -> list[dict]:
    with FakeOpenAI(responder=responder, fault_fn=fault_fn) as server:
        rc = cli(
            [
                "run",
                "errorbench",
                "--items",
                first_items(store, "errorbench-sample", 2),
                "--template",
                template,
                "--base-url",
                server.url,
                "--model",
                "scripted",
                "--run-name",
                name,
                "--quiet",
            ]
        )
        requests = server.chat_requests
    assert rc == 0
    return requests


def _scores(store, run_id: str) -> dict:
    return {
        (i, v): json.loads(s)
        for i, v, s in store.rows(
            "SELECT item_id, variant, scores FROM responses WHERE run_id = ?", [run_id]
        )
    }


def _metrics(capsys, run_id: str) -> list[dict]:
    capsys.readouterr()
    assert cli(["metrics", "errorbench", "--source", run_id, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_template_ids_are_labelled_not_the_papers_protocol():
    assert is_structured("errorbench/structured.v1")
    assert is_structured("bbm/direct_trace_structured.v1")
    assert not is_structured("errorbench/quoted.v1") and not is_structured(None)
    assert STRUCTURED_NOTE in label("errorbench/structured.v1")
    assert "not the paper's protocol" in STRUCTURED_NOTE
    assert label("bbm/direct_trace.v1") == "bbm/direct_trace.v1"


def test_errorbench_json_answers_score_as_the_equivalent_text(initialised_store, capsys):
    store = initialised_store
    text_requests = _run(store, "errorbench/quoted.v1", "eb-text", text_responder)
    json_requests = _run(store, "errorbench/structured.v1", "eb-json", json_responder)
    assert not any(r["body"].get("response_format") for r in text_requests)
    # every structured request carries the bounded schema
    assert len(json_requests) == 10
    for r in json_requests:
        fmt = r["body"]["response_format"]
        assert fmt["type"] == "json_schema"
        schema = fmt["json_schema"]["schema"]
        errors = schema["properties"]["errors"]
        assert errors["maxItems"] >= 1
        assert errors["items"]["properties"]["wrong"]["maxLength"] >= 1
        assert errors["items"]["properties"]["correct"]["maxLength"] >= 1
        assert schema["properties"]["total"]["type"] == "integer"
        assert set(schema["required"]) == {"errors", "total"}
    # the same scores, response by response (beyond the template id and how it was read)
    text, structured = _scores(store, "eb-text"), _scores(store, "eb-json")
    assert text.keys() == structured.keys() and len(text) == 10
    for key, s in structured.items():
        assert s.pop("json") == "ok" and s.pop("read_as") == "json"
        assert s.pop("template_id") == "errorbench/structured.v1"
        t = dict(text[key])
        t.pop("template_id")
        assert s == t
    # the results records too, and the metrics the page and CLI compute from the stored text
    recs = {
        run: store.rows(
            "SELECT item_id, variant, status, answer, correct, score FROM results "
            "WHERE run_id = ? ORDER BY ALL",
            [run],
        )
        for run in ("eb-text", "eb-json")
    }
    assert recs["eb-text"] == recs["eb-json"]
    assert {r[2] for r in recs["eb-json"]} == {"ok"}
    a, b = _metrics(capsys, "eb-text"), _metrics(capsys, "eb-json")
    drop = ("run_id", "model", "judging")  # the judging names each run's template
    assert [{k: v for k, v in r.items() if k not in drop} for r in a] == [
        {k: v for k, v in r.items() if k not in drop} for r in b
    ]
    assert all(r.get("unreadable", 0) == 0 and r["passages"] == 2 for r in b)


def _cut_or_invalid(body: dict):
    """blind on the first passage: JSON cut at max_tokens; hinted on it: not JSON, but a text
    answer the text parser reads."""
    user = body["messages"][-1]["content"]
    if user.split("Passage:\n", 1)[1].startswith("Nowadays"):
        if user.startswith("Proofread"):
            return {"content": '{"errors": [{"wrong": "believes", "corr', "finish_reason": "length"}
        if "contains errors" in user:
            return {"content": 'ERROR 1: "believes" -> "believe"\nTOTAL ERRORS FOUND: 1'}
    return None


def test_errorbench_unreadable_json_is_recorded_not_scored(initialised_store, capsys):
    store = initialised_store
    _run(store, "errorbench/structured.v1", "eb-cut", json_responder, _cut_or_invalid)
    rows = {
        (v, i): (status, answer, json.loads(meta))
        for i, v, status, answer, meta in store.rows(
            "SELECT item_id, variant, status, answer, metadata FROM results WHERE run_id = 'eb-cut'"
        )
    }
    first = sorted({i for _, i in rows})[0]
    status, answer, meta = rows[("blind", first)]
    assert status == "truncated" and answer == "?"
    assert meta["reported"] is None and meta["json"] == "invalid" and meta["json_error"]
    assert meta["finish_reason"] == "length"
    status, answer, meta = rows[("hinted", first)]
    assert status == "ok" and meta["json"] == "invalid" and meta["read_as"] == "text"
    assert meta["reported"] == 1 and "read as text" in answer
    # metrics: the cut answer is counted apart, not scored as n̂ = 0
    by_condition = {r["condition"]: r for r in _metrics(capsys, "eb-cut")}
    assert by_condition["blind"]["unreadable"] == 1 and by_condition["blind"]["passages"] == 1
    assert by_condition["hinted"]["unreadable"] == 0 and by_condition["hinted"]["passages"] == 2
    # rescore reads the stored answers again the same way
    assert cli(["rescore", "--source", "eb-cut", "--as", "again", "--quiet"]) == 0
    again = dict(
        store.rows(
            "SELECT variant || item_id, status FROM results WHERE run_id = 'eb-cut' "
            "AND judging = 'again'"
        )
    )
    assert again[f"blind{first}"] == "truncated" and again[f"hinted{first}"] == "ok"


# -- BIG-Bench Mistake ------------------------------------------------------------------------


def _bbm_run(store, template: str, name: str, responder, fault_fn=None) -> list[dict]:
    with FakeOpenAI(responder=responder, fault_fn=fault_fn) as server:
        rc = cli(
            [
                "run",
                "bbm",
                "--items",
                "bbm-sample",
                "--method",
                "direct_trace",
                "--template",
                template,
                "--base-url",
                server.url,
                "--model",
                "scripted",
                "--run-name",
                name,
                "--quiet",
            ]
        )
        requests = server.chat_requests
    assert rc == 0
    return requests


def _thoughts(text: str) -> int:
    """N of the "(N Thoughts)" a BBM prompt announces."""
    found = re.search(r"\((\d+) Thoughts\)", text)
    assert found is not None, text
    return int(found.group(1))


def _belief(body: dict) -> int | None:
    user = body["messages"][-1]["content"]
    n = _thoughts(user)
    question = user.split("Question:\n", 1)[1].split("\n\nStep-by-step answer", 1)[0]
    return (len(question) % (n + 1)) or None  # a deterministic step 1..n or None per trace


def bbm_text(body: dict) -> str:
    step = _belief(body)
    return "No" if step is None else str(step)


def bbm_json(body: dict) -> str:
    assert body.get("response_format")
    return json.dumps({"first_wrong_step": _belief(body)})


def test_bbm_json_answers_score_as_the_equivalent_text(initialised_store):
    store = initialised_store
    text_requests = _bbm_run(store, "bbm/direct_trace.v1", "bbm-text", bbm_text)
    json_requests = _bbm_run(store, "bbm/direct_trace_structured.v1", "bbm-json", bbm_json)
    assert not any(r["body"].get("response_format") for r in text_requests)
    for r in json_requests:
        schema = r["body"]["response_format"]["json_schema"]["schema"]
        step = schema["properties"]["first_wrong_step"]
        assert "null" in step["type"] and "integer" in step["type"]
        n = _thoughts(r["body"]["messages"][-1]["content"])
        assert step["maximum"] == n
    query = "SELECT item_id, status, answer, correct FROM results WHERE run_id = ? ORDER BY item_id"
    text, structured = store.rows(query, ["bbm-text"]), store.rows(query, ["bbm-json"])
    assert text == structured and len(text) == 12
    metas = [
        json.loads(m)
        for (m,) in store.rows("SELECT metadata FROM results WHERE run_id = 'bbm-json'")
    ]
    assert {m["json"] for m in metas} == {"ok"} and {m["parse_rule"] for m in metas} == {"json"}
    from core.benchmarks.bbm.queries import run_metrics

    a, b = run_metrics(store, "bbm-text"), run_metrics(store, "bbm-json")
    assert a.drop(columns=["run_id", "source"], errors="ignore").equals(
        b.drop(columns=["run_id", "source"], errors="ignore")
    )


def test_bbm_unreadable_json_is_recorded(initialised_store):
    store = initialised_store
    lengths: dict[str, int] = {}

    def fault(body: dict):
        user = body["messages"][-1]["content"]
        n = len(lengths)
        lengths.setdefault(user, n)
        if lengths[user] == 0:
            return {"content": '{"first_wrong_st', "finish_reason": "length"}
        if lengths[user] == 1:
            return {"content": "Thought 2 contains an error."}  # not JSON: the text fallback
        return None

    _bbm_run(store, "bbm/direct_trace_structured.v1", "bbm-cut", bbm_json, fault)
    rows = [
        (status, json.loads(meta))
        for status, meta in store.rows(
            "SELECT status, metadata FROM results WHERE run_id = 'bbm-cut'"
        )
    ]
    cut = [m for s, m in rows if s == "truncated"]
    assert len(cut) == 1 and cut[0]["json"] == "invalid" and cut[0]["predicted_step"] is None
    fallback = [m for s, m in rows if m.get("json") == "invalid" and s != "truncated"]
    assert len(fallback) == 1 and fallback[0]["predicted_step"] == 2
    assert fallback[0]["parse_rule"] != "json" and fallback[0]["json_error"]
    assert sum(m.get("json") == "ok" for _, m in rows) == 10


# -- run forms --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "key", "template"),
    [
        ("pages/anchoring.py", "eb_start_template", "errorbench/structured.v1"),
        ("pages/mistake_finding.py", "bbm_start_template", "bbm/direct_trace_structured.v1"),
    ],
)
def test_run_forms_offer_structured_templates_labelled(initialised_store, page, key, template):
    from pathlib import Path

    at = AppTest.from_file(
        str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=60
    )
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    box = at.selectbox(key=key)
    shown = [o for o in box.options if template in o]
    assert shown == [f"{template} ({STRUCTURED_NOTE})"]
    assert "NOT the paper's protocol" in box.help


def test_anchoring_page_charts_a_structured_run(initialised_store):
    """The page reads a structured run's answers as JSON (not as unparsed text: no warning) and
    shows its template with the label."""
    from tests.test_errorbench_page import _open

    _run(initialised_store, "errorbench/structured.v1", "eb-page", json_responder)
    at = _open({"eb_runs": "eb-page"})
    assert not any("could not be read" in w.value for w in at.warning)
    box = at.multiselect[0]
    assert any(STRUCTURED_NOTE in o for o in box.options)
