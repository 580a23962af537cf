"""Playground core: both modes streamed concurrently, judged, saved as a playground run, reopened;
unreachable endpoints give an EndpointProblem instead of an exception. Real HTTP (fake server)."""

from __future__ import annotations

import json
import socket
from typing import Any, cast

import duckdb
import pytest

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.engine.endpoints import Endpoint
from core.engine.results import Result
from core.services import playground as pg
from tests.fake_openai import FakeOpenAI, from_script
from tests.playground_fixtures import PASSIVE_MARK, PASSIVE_REPLY, PROACTIVE_REPLY, SCRIPT

ITEM = pg.custom_item(
    "Wich composser wrote the Eroica?",
    gold="Which composer ... Beethoven",
    primary_category="Language Errors",
    secondary_category="Spelling Errors",
)


@pytest.fixture
def server():
    fake = from_script(SCRIPT)
    fake.latency = 0.2
    fake.record = True
    with fake:
        yield fake


def _result(ex: pg.Exchange, mode: str) -> Result:
    """The judge's record of one side, which an exchange judged `now` has."""
    result = ex.sides[mode].result
    assert result is not None, f"{mode}: no result"
    return result


def _labels(ex: pg.Exchange, mode: str) -> dict[str, Any]:
    labels = _result(ex, mode).labels
    assert labels is not None, f"{mode}: not judged"
    return labels


def _rationales(ex: pg.Exchange, mode: str) -> dict[str, str]:
    metadata = _result(ex, mode).metadata
    assert metadata is not None, f"{mode}: not judged"
    return metadata["rationales"]


def _load(store, run_id: str) -> pg.Exchange:
    back = pg.load_exchange(store, run_id)
    assert back is not None, run_id
    return back


def _ep(url: str, name: str = "fake", **kw) -> Endpoint:
    return Endpoint(name, (url,), "fake-model", **kw)


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there any more


def test_messages_proactive_is_prompt_alone_passive_adds_instruction():
    sides = pg.build_sides(ITEM, "zero-shot")
    assert sides["proactive"].messages == [{"role": "user", "content": ITEM["prompt"]}]
    passive = sides["passive"].messages[-1]["content"]
    assert PASSIVE_MARK in passive and passive.rstrip().endswith(ITEM["prompt"])


def test_exchange_streams_both_concurrently_judges_and_saves(store, server):
    pieces: dict[str, list[str]] = {"proactive": [], "passive": []}
    phases: list[str] = []
    ex = pg.run_exchange(
        ITEM,
        "zero-shot",
        _ep(server.url),
        _ep(server.url, "fake-judge"),
        temperature=0.3,
        max_tokens=123,
        store=store,
        on_token={m: pieces[m].append for m in pg.MODES},
        on_phase=phases.append,
    )
    assert ex.problems == [] and phases == ["answering", "judging"]
    assert ex.sides["proactive"].response == PROACTIVE_REPLY
    assert ex.sides["passive"].response == PASSIVE_REPLY
    for mode in pg.MODES:  # streamed word by word, the pieces add up to the answer
        assert len(pieces[mode]) > 5
        assert "".join(pieces[mode]) == ex.sides[mode].response
    chat = [r for r in server.chat_requests if not r["body"].get("response_format")]
    judge = [r for r in server.chat_requests if r["body"].get("response_format")]
    assert len(chat) == 2 and len(judge) == 2
    assert all(r["body"]["stream"] for r in chat)
    assert {r["body"]["temperature"] for r in chat} == {0.3}
    assert {r["body"]["max_tokens"] for r in chat} == {123}
    # Concurrent: the second model request arrived before the first could have been answered.
    assert abs(chat[0]["time"] - chat[1]["time"]) < server.latency
    assert abs(judge[0]["time"] - judge[1]["time"]) < server.latency
    assert all(_labels(ex, "passive")[l] is True for l in JUDGE_LABELS)
    assert all(_labels(ex, "proactive")[l] is False for l in JUDGE_LABELS)
    assert "points out" in _rationales(ex, "passive")["detection"]

    run_id = pg.save_exchange(store, ex)
    run = store.df("SELECT * FROM runs WHERE run_id = ?", [run_id]).iloc[0]
    assert run["kind"] == "playground" and run["benchmark"] == "misprompt"
    assert run["setting"] == "zero-shot" and run["status"] == "done"
    assert run["model"] == "fake-model" and run["judge_endpoint"] == "fake-judge"
    params = json.loads(run["params"])
    assert params["temperature"] == 0.3 and params["item"]["prompt"] == ITEM["prompt"]
    responses = store.df(
        "SELECT variant, status, response FROM responses WHERE run_id = ? ORDER BY variant",
        [run_id],
    )
    assert responses.to_dict("records") == [
        {"variant": "passive", "status": "ok", "response": PASSIVE_REPLY},
        {"variant": "proactive", "status": "ok", "response": PROACTIVE_REPLY},
    ]
    verdicts = store.df(
        "SELECT * FROM misprompt_verdicts WHERE run_id = ? ORDER BY variant", [run_id]
    )
    assert verdicts["status"].tolist() == ["ok", "ok"]
    assert verdicts["detection"].tolist() == [True, False]
    calls = store.df("SELECT variant, role FROM calls WHERE run_id = ?", [run_id])
    assert sorted(map(tuple, calls.values.tolist())) == [
        ("passive", "judge"),
        ("passive", "model"),
        ("proactive", "judge"),
        ("proactive", "model"),
    ]

    listed = pg.list_exchanges(store)
    assert listed["run_id"].tolist() == [run_id]
    assert listed.iloc[0]["prompt"] == ITEM["prompt"]
    assert bool(listed.iloc[0]["passive_detection"]) and not bool(
        listed.iloc[0]["proactive_detection"]
    )

    back = pg.load_exchange(store, run_id)
    assert back is not None and back.saved and back.item["prompt"] == ITEM["prompt"]
    for mode in pg.MODES:
        assert back.sides[mode].response == ex.sides[mode].response
        assert back.sides[mode].messages == ex.sides[mode].messages
        assert back.sides[mode].result == ex.sides[mode].result  # the record as judged
        badges = pg.verdict_badges(back, back.sides[mode].result)
        assert [label for label, _, _ in badges] == list(JUDGE_LABELS)
        for label, value, why in badges:
            assert value == _labels(ex, mode)[label]
            assert why == _rationales(ex, mode)[label]
    assert pg.load_exchange(store, "nope") is None
    # A one-item demo never enters the Mis-prompt F1 tables of real runs.
    from core.benchmarks.misprompt import metrics as mm

    assert mm.judge_patterns(store).empty


def test_unreachable_model_endpoint_is_a_problem_not_an_exception(store):
    dead = _dead_url()
    ex = pg.run_exchange(
        ITEM, "zero-shot", _ep(dead, "my-vllm"), _ep(dead, "my-vllm"), store=store, max_retries=0
    )
    assert not ex.answered
    problem = ex.problems[0]
    assert problem.role == "model" and problem.endpoint == "my-vllm"
    assert dead in problem.title and "connection" in problem.error.lower()
    for where in ("data/models.toml", ".streamlit/secrets.toml", "environment"):
        assert where in problem.help
    assert all(s.status == "failed" for s in ex.sides.values())


def test_local_endpoint_help_says_how_to_start_it():
    from core.engine.endpoints import local_endpoint

    text = pg.configure_help(local_endpoint())
    assert "python -m core serve-local" in text and "EHW_LOCAL_URL" in text


def test_judge_failure_keeps_answers_and_names_the_judge(store, server):
    with FakeOpenAI(faults=[{"status": 500}] * 20) as broken:
        ex = pg.run_exchange(
            ITEM,
            "zero-shot",
            _ep(server.url),
            _ep(broken.url, "bad-judge"),
            store=store,
            max_retries=0,
        )
    assert [s.status for s in ex.sides.values()] == ["ok", "ok"]
    assert [p.role for p in ex.problems] == ["judge"]
    assert ex.problems[0].endpoint == "bad-judge" and "500" in ex.problems[0].error
    assert all(s.result is not None and s.result.status == "failed" for s in ex.sides.values())
    run_id = pg.save_exchange(store, ex)
    back = _load(store, run_id)
    assert back.problems[0].endpoint == "bad-judge"
    assert (
        store.scalar(
            "SELECT count(*) FROM misprompt_verdicts WHERE run_id = ? AND status = 'failed'",
            [run_id],
        )
        == 2
    )


def test_missing_api_key_is_reported_before_any_call(store, server, monkeypatch):
    monkeypatch.delenv("EHW_TEST_KEY_VAR", raising=False)
    ex = pg.run_exchange(
        ITEM,
        "zero-shot",
        _ep(server.url, "keyed", api_key_env="EHW_TEST_KEY_VAR"),
        _ep(server.url),
        store=store,
    )
    assert ex.problems[0].endpoint == "keyed" and "EHW_TEST_KEY_VAR" in ex.problems[0].error
    assert "EHW_TEST_KEY_VAR" in ex.problems[0].help
    assert server.chat_requests == []


def test_api_key_never_stored(store, server, monkeypatch):
    monkeypatch.setenv("EHW_TEST_KEY_VAR", "sk-secret-playground-123")
    ex = pg.run_exchange(
        ITEM,
        "one-shot",
        _ep(server.url, "keyed", api_key_env="EHW_TEST_KEY_VAR"),
        _ep(server.url),
        store=store,
    )
    assert ex.problems == []
    model_calls = [r for r in server.chat_requests if not r["body"].get("response_format")]
    assert all(
        {k.lower(): v for k, v in r["headers"].items()}["authorization"]
        == "Bearer sk-secret-playground-123"
        for r in model_calls
    )
    run_id = pg.save_exchange(store, ex)
    dump = (
        store.df("SELECT * FROM runs").to_csv()
        + store.df("SELECT * FROM responses").to_csv()
        + store.df("SELECT * FROM calls").to_csv()
        + store.df("SELECT * FROM results").to_csv()
    )
    assert "sk-secret-playground-123" not in dump
    assert "EHW_TEST_KEY_VAR" in dump  # the variable's name is kept, its value is not
    assert run_id in dump


def test_example_items_browse_loaded_set(initialised_store):
    items = pg.example_items(initialised_store)
    assert len(items) > 0
    err = items[items["is_error"]]
    assert err["primary_category"].nunique() == 4 and err["secondary_category"].nunique() == 14
    row = cast(dict[str, Any], err.iloc[0].to_dict())
    item = pg.item_from_row(row)
    assert item["prompt"] == row["prompt"] and item["gold"] == row["gold"] and item["is_error"]
    ctl = pg.item_from_row(cast(dict[str, Any], items[~items["is_error"]].iloc[0].to_dict()))
    assert ctl["primary_category"] is None and ctl["is_error"] is False
    with pytest.raises(ValueError):
        pg.custom_item("   ")


def test_both_answers_stream_interleaved(store):
    """With a paced server, tokens of both modes arrive interleaved: the streams run together."""
    import time

    fake = from_script({**SCRIPT, "token_delay": 0.03})
    events: list[tuple[str, float]] = []
    with fake:
        ex = pg.run_exchange(
            ITEM,
            "zero-shot",
            _ep(fake.url),
            _ep(fake.url),
            store=store,
            on_token={
                m: (lambda piece, m=m: events.append((m, time.monotonic()))) for m in pg.MODES
            },
        )
    assert ex.problems == []
    times = {m: [t for mode, t in events if mode == m] for m in pg.MODES}
    assert min(times["passive"]) < max(times["proactive"])
    assert min(times["proactive"]) < max(times["passive"])
    switches = sum(1 for a, b in zip(events, events[1:]) if a[0] != b[0])
    assert switches >= 4  # not one stream after the other


def test_save_exchange_is_all_or_nothing(store, server):
    ex = pg.run_exchange(ITEM, "zero-shot", _ep(server.url), _ep(server.url), store=store)
    # a result row the database refuses (written after the run and the responses): a token
    # count out of the INTEGER column's range (a missing status now reads as 'failed')
    _result(ex, "passive").prompt_tokens = 2**40
    with pytest.raises(duckdb.Error):  # the database refused the row
        pg.save_exchange(store, ex)
    for table in ("runs", "responses", "results", "calls"):
        assert store.scalar(f"SELECT count(*) FROM {table}") == 0, table
    assert not ex.saved


# -- who judges: a person, the LLM now, the LLM later (issue 12 B) ---------------------------


def test_a_weak_judge_endpoint_defaults_to_a_person_judging():
    from core.engine.endpoints import local_endpoint

    assert pg.default_judging(local_endpoint()) == "human"  # the shipped SmolLM2
    assert (
        pg.default_judging(Endpoint("x", ("http://x/v1",), "HuggingFaceTB/SmolLM2-360M")) == "human"
    )
    assert pg.default_judging(_ep("http://x/v1")) == "llm"


def test_person_judging_calls_no_judge_and_saves_human_labels(store, server):
    dead = _dead_url()  # the judge endpoint is neither checked nor called
    ex = pg.run_exchange(
        ITEM, "zero-shot", _ep(server.url), _ep(dead, "down"), store=store, judging="human"
    )
    assert ex.problems == [] and ex.answered and not ex.judged
    assert not [r for r in server.chat_requests if r["body"].get("response_format")]
    run_id = pg.save_exchange(store, ex)
    run = store.df("SELECT judge_model, judge_endpoint, params FROM runs").iloc[0]
    assert run["judge_model"] is None and json.loads(run["params"])["judging"] == "human"
    assert store.scalar("SELECT count(*) FROM misprompt_verdicts") == 0
    labels = {
        "proactive": {l: False for l in JUDGE_LABELS},
        "passive": {l: l != "guidance" for l in JUDGE_LABELS},
    }
    assert pg.save_human_labels(store, run_id, " ada ", labels, note="demo") == 12
    rows = store.df(
        "SELECT run_id, item_id, variant, annotator, label, value, judge_value "
        "FROM human_labels ORDER BY variant, label"
    )
    assert set(rows["run_id"]) == {run_id} and set(rows["annotator"]) == {"ada"}
    assert set(rows["item_id"]) == {ITEM["item_id"]}
    got = {(r.variant, r.label): r.value for r in rows.itertuples()}
    assert got == {(m, l): v for m, values in labels.items() for l, v in values.items()}
    assert rows["judge_value"].isna().all()  # nobody else judged it
    frame = pg.human_labels(store, run_id, "ada")
    assert len(frame) == 12
    # Saving again replaces (last write wins for the same person), no duplicates.
    pg.save_human_labels(store, run_id, "ada", {"passive": {l: True for l in JUDGE_LABELS}})
    assert store.scalar("SELECT count(*) FROM human_labels") == 12
    assert pg.list_exchanges(store)["judged_by"].tolist() == ["person"]
    with pytest.raises(ValueError, match="name"):
        pg.save_human_labels(store, run_id, "  ", labels)
    with pytest.raises(ValueError, match="missing label"):
        pg.save_human_labels(store, run_id, "ada", {"passive": {"detection": True}})
    with pytest.raises(ValueError, match="no playground exchange"):
        pg.save_human_labels(store, "nope", "ada", labels)


def test_judge_later_then_judge_the_saved_exchange_with_a_timer(store, server):
    ex = pg.run_exchange(
        ITEM,
        "zero-shot",
        _ep(server.url),
        _ep(server.url, "fake-judge"),
        store=store,
        judging="later",
    )
    assert not ex.judged
    run_id = pg.save_exchange(store, ex)
    assert pg.list_exchanges(store)["judged_by"].tolist() == ["not yet"]
    assert _load(store, run_id).judging == "later"
    ticks: list[tuple[str, float]] = []
    judged = pg.judge_exchange(
        store,
        run_id,
        _ep(server.url, "fake-judge"),
        on_tick=lambda phase, s: ticks.append((phase, s)),
    )
    assert judged is not None and judged.problems == []
    # The fake judge waits 0.2 s per call: the timer ticked at the start and at the end.
    assert len(ticks) >= 2 and {p for p, _ in ticks} == {"judging"}
    assert ticks[0][1] < ticks[-1][1] and ticks[-1][1] >= server.latency
    back = _load(store, run_id)
    assert back.judged and back.judging == "llm"
    assert all(_labels(back, "passive")[l] is True for l in JUDGE_LABELS)
    assert all(_labels(back, "proactive")[l] is False for l in JUDGE_LABELS)
    run = store.df("SELECT judge_endpoint FROM runs WHERE run_id = ?", [run_id]).iloc[0]
    assert run["judge_endpoint"] == "fake-judge"
    assert (
        store.scalar("SELECT count(*) FROM calls WHERE run_id = ? AND role = 'judge'", [run_id])
        == 2
    )


def test_judging_later_against_a_dead_judge_writes_nothing(store, server):
    ex = pg.run_exchange(ITEM, "zero-shot", _ep(server.url), None, store=store, judging="later")
    run_id = pg.save_exchange(store, ex)
    judged = pg.judge_exchange(store, run_id, _ep(_dead_url(), "gone"), max_retries=0)
    assert judged is not None and judged.problems and judged.problems[0].endpoint == "gone"
    assert store.scalar("SELECT count(*) FROM misprompt_verdicts") == 0


def test_llm_judging_ticks_a_timer(store, server):
    ticks: list[float] = []
    ex = pg.run_exchange(
        ITEM,
        "zero-shot",
        _ep(server.url),
        _ep(server.url),
        store=store,
        on_tick=lambda phase, s: ticks.append(s),
    )
    assert ex.judged and len(ticks) >= 2 and ticks == sorted(ticks)


# -- long or repetitive answers ---------------------------------------------------------------


def test_collapse_folds_a_repeated_line_and_keeps_short_text():
    short = pg.collapse_text("A short answer.\nTwo lines.")
    assert short == pg.Collapsed("A short answer.\nTwo lines.", hidden=False)
    text = "Intro line.\n" + "\n".join(["I am a helpful assistant."] * 30) + "\nEnd."
    c = pg.collapse_text(text)
    assert c.preview == "Intro line.\nI am a helpful assistant.\n[line repeated ×30]\nEnd."
    assert c.hidden and c.repeats == (("I am a helpful assistant.", 30),)
    spaced = "\n\n".join(["Same."] * 4)  # blank lines between the repeats
    assert pg.collapse_text(spaced).preview == "Same.\n[line repeated ×4]"


def test_collapse_cuts_long_text_at_a_word_and_says_how_much_is_hidden():
    words = " ".join(f"word{i}" for i in range(400))
    c = pg.collapse_text(words, limit=600)
    assert c.hidden and len(c.preview) < 700
    head, _, tail = c.preview.partition(" … [")
    assert words.startswith(head) and head.endswith(tuple("0123456789"))  # whole words
    assert tail == f"{len(words) - 600:,} more characters]"
