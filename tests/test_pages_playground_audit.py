"""AppTest: the Playground and Judge audit pages, against a real scripted HTTP server and DB."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import audit
from core.services import playground as pg
from tests.audit_fixtures import write_labels
from tests.conftest import ROOT
from tests.fake_openai import from_script
from tests.playground_fixtures import PASSIVE_REPLY, PROACTIVE_REPLY, SCRIPT

APP = str(ROOT / "app.py")
PLAYGROUND = "pages/playground.py"
AUDIT = "pages/judge_audit.py"


def _open(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += (
        [e.value for e in at.error] + [w.value for w in at.warning] + [i.value for i in at.info]
    )
    parts += [c.value for c in at.code] + [t.value for t in at.text]  # untrusted text: show_text
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
    judge_models = {
        r["body"]["model"] for r in fake_server.chat_requests if r["body"].get("response_format")
    }
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
    assert "**Ground truth**" in text and "**What is wrong**" in text
    secondaries = at.selectbox(key="w_pg_secondary").options
    assert set(secondaries) == {"Circumstance Error", "Entity Error", "Relation Error"}
    at.button(key="pg_send").click().run()
    assert not at.exception
    row = initialised_store.df("SELECT params FROM runs WHERE kind = 'playground'")
    item = json.loads(row["params"][0])["item"]
    assert item["primary_category"] == "Factual Errors" and item["gold"]


def test_playground_unreachable_endpoint_says_which_and_how(
    initialised_store, monkeypatch, tmp_path
):
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


def _weak_notices(at: AppTest) -> int:
    return sum("Weak model" in w.value for w in at.warning)


def test_playground_person_judges_beside_the_ground_truth(initialised_store, fake_server):
    at = _open(PLAYGROUND, pg_primary="Factual Errors")
    assert at.radio(key="w_pg_judging").value == "human"  # the local judge is weak
    assert _weak_notices(at) == 1
    at.button(key="pg_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [r for r in fake_server.chat_requests if r["body"].get("response_format")]
    run_id = initialised_store.scalar("SELECT run_id FROM runs WHERE kind = 'playground'")
    item = json.loads(initialised_store.scalar("SELECT params FROM runs"))["item"]
    texts = [t.value for t in at.text]
    assert PROACTIVE_REPLY in texts and PASSIVE_REPLY in texts
    assert item["gold"] in texts and item["explanation"] in texts  # beside the answers
    assert _weak_notices(at) == 1  # exactly one notice, exchange shown or not
    assert at.toggle(key=f"pg_person_{run_id}").value is True
    assert at.button(key="pg_save_labels").disabled  # no name yet
    at.text_input(key="w_annotator").input("ada").run()
    for label in JUDGE_LABELS:
        at.segmented_control(key=f"pg_h_{run_id}_passive_{label}").set_value(
            "Yes" if label != "guidance" else "No"
        )
        at.segmented_control(key=f"pg_h_{run_id}_proactive_{label}").set_value("No")
    at.run()
    at.button(key="pg_save_labels").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Saved 12 labels by ada" in s.value for s in at.success)
    rows = initialised_store.df("SELECT run_id, variant, annotator, label, value FROM human_labels")
    assert len(rows) == 12 and set(rows["run_id"]) == {run_id} and set(rows["annotator"]) == {"ada"}
    got = {(r.variant, r.label): r.value for r in rows.itertuples()}
    assert got[("passive", "detection")] is True and got[("passive", "guidance")] is False
    assert not any(v for (m, _), v in got.items() if m == "proactive")
    assert initialised_store.scalar("SELECT count(*) FROM misprompt_verdicts") == 0
    # Reopened by link in a fresh session: the ground truth and ada's labels are back.
    again = _open(PLAYGROUND, exchange=run_id, annotator="ada")
    assert again.selectbox(key="w_exchange").value == run_id
    assert item["gold"] in [t.value for t in again.text]
    assert again.segmented_control(key=f"pg_h_{run_id}_passive_detection").value == "Yes"
    assert again.segmented_control(key=f"pg_h_{run_id}_passive_guidance").value == "No"


def test_playground_judge_later_then_now(initialised_store, fake_server):
    at = _open(PLAYGROUND, pg_src="Type my own", pg_judge="fake-judge", pg_judging="later")
    assert at.radio(key="w_pg_judging").value == "later"
    at.text_area(key="pg_prompt").input("Wich composser wrote the Eroica?").run()
    at.button(key="pg_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert initialised_store.scalar("SELECT count(*) FROM misprompt_verdicts") == 0
    assert not [m for m in at.markdown if "-badge[" in m.value]
    at.button(key="pg_judge_now").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert (
        initialised_store.scalar("SELECT count(*) FROM misprompt_verdicts WHERE status = 'ok'") == 2
    )
    badges = [m.value for m in at.markdown if "-badge[" in m.value]
    assert len(badges) == 2 and all(f":green-badge[✓ {l}]" in badges[1] for l in JUDGE_LABELS)
    assert "judge-x" in _texts(at)


def test_playground_who_judges_follows_the_judge_endpoint(initialised_store, fake_server):
    at = _open(PLAYGROUND, pg_judge="fake-judge")
    assert at.radio(key="w_pg_judging").value == "llm"  # a capable judge: the LLM judges
    assert _weak_notices(at) == 1  # the model is still the local SmolLM2
    at.selectbox(key="w_pg_judge").set_value("local").run()
    assert at.radio(key="w_pg_judging").value == "human"  # a weak judge: the person judges
    at.radio(key="w_pg_judging").set_value("llm").run()  # the user may still choose the LLM
    assert at.radio(key="w_pg_judging").value == "llm"
    assert _weak_notices(at) == 1


def test_playground_exchange_in_the_url_drives_the_picker(initialised_store, fake_server):
    from core.engine.endpoints import Endpoint

    ep = Endpoint("fake", (fake_server.url,), "m")
    ids = []
    for prompt in ("First question?", "Second question?"):
        ex = pg.run_exchange(pg.custom_item(prompt), "zero-shot", ep, None, judging="later")
        ids.append(pg.save_exchange(initialised_store, ex))
    at = _open(PLAYGROUND, exchange=ids[0])  # the older one, not the newest
    assert at.selectbox(key="w_exchange").value == ids[0]
    assert "First question?" in [t.value for t in at.text]
    at.selectbox(key="w_exchange").set_value(ids[1]).run()
    assert at.query_params["exchange"] in (ids[1], [ids[1]])
    assert "Second question?" in [t.value for t in at.text]


def test_playground_collapses_a_repetitive_answer(initialised_store, monkeypatch, tmp_path):
    line = "I am a helpful assistant and I will help you."
    server = from_script({"reply": "\n".join([line] * 30), "rules": []}).start()
    try:
        models = tmp_path / "models.toml"
        models.write_text("")
        monkeypatch.setenv("EHW_MODELS_FILE", str(models))
        monkeypatch.setenv("EHW_LOCAL_URL", server.url)
        at = _open(PLAYGROUND, pg_src="Type my own")
        at.text_area(key="pg_prompt").input("Wich composser wrote the Eroica?").run()
        at.button(key="pg_send").click().run()
        assert not at.exception, [e.value for e in at.exception]
    finally:
        server.stop()
    previews = [t.value for t in at.text if t.value.startswith(line)]
    assert f"{line}\n[line repeated ×30]" in previews
    full = "\n".join([line] * 30)
    assert full in [t.value for t in at.text]  # the whole answer, inside the expander
    assert any(e.label.startswith("Full answer (") for e in at.expander)


# -- Judge audit ------------------------------------------------------------------------------


def _metric_values(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.fixture
def held_open(two_runs_store):
    """The audit page's many short reads and writes (hundreds in the longer tests below) share
    one open of the file (core.store.Store.session)."""
    with two_runs_store.session():
        yield two_runs_store


def test_audit_page_without_runs_explains(store):
    from core import registry

    at = _open(AUDIT)
    # names every judged benchmark the audit serves (the registry's LLM-judged ones)
    labels = [registry.get(b).label for b in audit.auditable_benchmarks()]
    notes = [i.value for i in at.info if i.value.startswith("No judged ")]
    assert notes and all(label in notes[0] for label in labels), [i.value for i in at.info]


def test_audit_draw_label_resume_and_results(two_runs_store, held_open):
    store = two_runs_store
    at = _open(AUDIT, annotator="ann")
    assert at.selectbox(key="w_audit").value == audit.NEW_AUDIT_KEY
    assert sorted(at.multiselect(key="w_runs").value) == ["run-a", "run-b"]
    at.text_input(key="au_name").input("pilot").run()
    at.button(key="au_draw").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["audit"] in ("pilot", ["pilot"])
    queue = audit.audit_queue(store, "pilot")
    assert len(queue) == 10
    # Item 1 is shown blind: no label set, the judge's verdict hidden (Save is always enabled:
    # pressed too early it says what is missing, issue 31 point 9).
    first = queue.iloc[0]
    state = at.session_state["au_item::pilot::ann::0"]
    assert state["values"] == {l: None for l in JUDGE_LABELS}
    assert not at.button(key="au_save").disabled
    assert not any(c.value.startswith("judge:") for c in at.caption)
    assert "because detection" not in "\n".join(t.value for t in at.text)
    # Five labels agree with the judge, detection is the opposite: still not savable at five.
    for label in JUDGE_LABELS[1:]:
        at.button(key=f"au_{'yes' if first[label] else 'no'}_{label}").click().run()
    at.button(key="au_save").click().run()
    assert any("Not saved: answer detection first" in w.value for w in at.warning)
    assert store.scalar("SELECT count(*) FROM human_labels") == 0
    at.button(key=f"au_{'no' if first['detection'] else 'yes'}_detection").click().run()
    at.text_area(key="au_item::pilot::ann::0::note").input("judge missed it").run()
    assert not at.button(key="au_save").disabled
    at.button(key="au_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    saved = store.df("SELECT label, value, judge_value, note, annotator FROM human_labels")
    assert len(saved) == 6 and set(saved["annotator"]) == {"ann"}
    got = dict(zip(saved["label"], saved["value"]))
    assert got["detection"] == (not bool(first["detection"]))
    assert all(got[l] == bool(first[l]) for l in JUDGE_LABELS if l != "detection")
    assert set(saved["note"]) == {"judge missed it"}
    assert at.number_input(key="au_pos::pilot::ann").value == 1  # saving keeps the position
    # Now that it is saved, the judge's verdict and rationales are revealed.
    assert sum(c.value.startswith("judge:") for c in at.caption) == 6
    assert "because detection" in "\n".join(t.value for t in at.text)
    assert any("differ from the judge on: detection" in c.value for c in at.caption)
    assert not at.metric  # the results tab is lazy: nothing computed while labelling
    # Results: one labelled item → every κ tile says "n too small", with its n.
    at.session_state["au_view"] = "Results"
    at.run()
    metrics = _metric_values(at)
    assert set(JUDGE_LABELS) <= set(metrics)
    assert metrics["guidance"] == "n too small"
    assert any("n = 1 (κ needs ≥ 10 items)" in c.value for c in at.caption)
    # A fresh session (another browser tab) resumes at the first unlabelled item.
    again = _open(AUDIT, audit="pilot", annotator="ann")
    assert again.number_input(key="au_pos::pilot::ann").value == 2
    other = _open(AUDIT, audit="pilot", annotator="bob")
    assert other.number_input(key="au_pos::pilot::bob").value == 1


def _label_item(at: AppTest, values: dict) -> None:
    for label, value in values.items():
        at.button(key=f"au_{'yes' if value else 'no'}_{label}").click().run()


def test_audit_show_judge_switch_lives_in_the_url(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "peek", ["run-a", "run-b"], fraction=0.1, seed=2)
    blind = _open(AUDIT, audit="peek", annotator="ann")
    assert blind.toggle(key="au_judge").value is False
    assert not any(c.value.startswith("judge:") for c in blind.caption)
    peek = _open(AUDIT, audit="peek", annotator="ann", au_judge="true")
    assert peek.toggle(key="au_judge").value is True
    assert sum(c.value.startswith("judge:") for c in peek.caption) == 6
    blind.toggle(key="au_judge").set_value(True).run()
    assert sum(c.value.startswith("judge:") for c in blind.caption) == 6
    # (A bound widget writes the URL from the browser: checked in the real-browser test.)


def test_same_annotator_in_two_sessions_is_asked_not_overwritten(two_runs_store, held_open):
    store = two_runs_store
    audit.create_audit(store, "clash", ["run-a", "run-b"], fraction=0.1, seed=5)
    tab1 = _open(AUDIT, audit="clash", annotator="ann")
    tab2 = _open(AUDIT, audit="clash", annotator="ann")  # both show item 1, unlabelled
    _label_item(tab1, {l: True for l in JUDGE_LABELS})
    tab1.button(key="au_save").click().run()
    _label_item(tab2, {l: False for l in JUDGE_LABELS})
    tab2.button(key="au_save").click().run()
    assert not tab2.exception, [e.value for e in tab2.exception]
    assert any("changed elsewhere" in w.value for w in tab2.warning)
    values = lambda: dict(store.rows("SELECT label, value FROM human_labels"))  # noqa: E731
    assert values() == {l: True for l in JUDGE_LABELS}  # tab 1's save stands
    shown = [d.value for d in tab2.dataframe][-1]
    assert list(shown.columns) == ["label", "yours (not saved)", "saved now"]
    assert list(shown.set_index("label").loc["guidance"]) == ["✗ false", "✓ true"]
    # Keep theirs: tab 2 now shows tab 1's labels, no write.
    tab2.button(key="au_keep_theirs").click().run()
    assert tab2.session_state["au_item::clash::ann::0"]["values"] == {l: True for l in JUDGE_LABELS}
    assert not any("changed elsewhere" in w.value for w in tab2.warning)
    # Tab 1 (its snapshot is its own save) flips guidance and saves: no conflict.
    _label_item(tab1, {"guidance": False})
    tab1.button(key="au_save").click().run()
    assert values()["guidance"] is False
    # Tab 2 still thinks guidance is true: conflict again; this time overwrite with mine.
    _label_item(tab2, {"detection": False})
    tab2.button(key="au_save").click().run()
    assert any("changed elsewhere" in w.value for w in tab2.warning)
    tab2.button(key="au_overwrite").click().run()
    assert values() == {**{l: True for l in JUDGE_LABELS}, "detection": False}
    assert not any("changed elsewhere" in w.value for w in tab2.warning)


def test_audit_results_panel_numbers(two_runs_store, held_open):
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    store = two_runs_store
    audit.create_audit(store, "res", ["run-a", "run-b"], fraction=0.25, seed=3)
    queue = audit.audit_queue(store, "res")
    rng = np.random.default_rng(0)
    mine = {}
    saves = []
    for name, flip in [("ann1", 0.2), ("ann2", 0.3), ("ann3", 0.1)]:
        for row in queue.itertuples():
            values = {l: bool(getattr(row, l)) != (rng.random() < flip) for l in JUDGE_LABELS}
            saves.append((row, name, values))
            if name == "ann1":
                mine[row.item_id, row.run_id] = (row, values)
    write_labels(store, saves)  # what one save_labels call per item and annotator writes
    at = _open(AUDIT, audit="res", annotator="ann1", au_view="Results")
    metrics = _metric_values(at)
    for label in JUDGE_LABELS:
        judge = [bool(getattr(r, label)) for r, _ in mine.values()]
        human = [v[label] for _, v in mine.values()]
        assert metrics[label] == f"{cohen_kappa_score(judge, human):.2f}"
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    kappa = charts[0]
    assert {t["name"] for t in kappa["data"]} == {"ann1", "ann2", "ann3"}
    heat = charts[1]
    assert len(heat["data"]) == 6
    total = sum(sum(map(sum, t["z"])) for t in heat["data"])
    assert total == 6 * len(queue)
    texts = _texts(at)
    assert "Fleiss" in texts and "Needs three or more" not in texts
    assert "Cohen's κ between annotators" in texts
    assert "Table 12" in texts
    # the F1 table reads rounded (85.7, not 85.7143); its CSV keeps the full value (issue 31)
    f1 = next(
        d.value for d in at.dataframe if "metric" in d.value.columns and "source" in d.value.columns
    )
    numbers = f1.select_dtypes("number").drop(columns=["n"], errors="ignore").to_numpy().ravel()
    numbers = numbers[~np.isnan(numbers.astype(float))]
    assert len(numbers) and all(round(float(v), 1) == float(v) for v in numbers)


def test_two_apptest_sessions_label_concurrently(two_runs_store, held_open):
    """Two app sessions labelling the same audit, their saves interleaved item by item.

    AppTest instances share Streamlit's process-global widget registry, so they cannot run in
    parallel threads; truly simultaneous saves are covered by the two-browser test and the
    thread/process tests in test_audit_concurrency.py.
    """
    store = two_runs_store
    audit.create_audit(store, "duo", ["run-a", "run-b"], fraction=0.1, seed=5)
    errors: list[str] = []
    sessions = {name: _open(AUDIT, audit="duo", annotator=name) for name in ("ann-a", "ann-b")}
    flips = {"ann-a": "guidance", "ann-b": "detection"}
    queue = audit.audit_queue(store, "duo")
    # The first three items of the queue: what is tested is the interleaving of the saves,
    # which three items show as well as all of them (the last item: the one-session tests).
    n = 3
    for pos in range(n):
        row = queue.iloc[pos]
        for name, at in sessions.items():
            _label_item(at, {l: bool(row[l]) != (l == flips[name]) for l in JUDGE_LABELS})
            at.button(key="au_save").click().run()
            assert at.number_input(key="au_pos::duo::" + name).value == pos + 1
            at.button(key="au_next").click().run()
            if at.exception:
                errors.append(str([e.value for e in at.exception]))
    assert not errors, errors
    assert len(queue) > n
    counts = store.df(
        "SELECT annotator, count(*) AS n, count(DISTINCT item_id || run_id) AS items "
        "FROM human_labels GROUP BY annotator ORDER BY annotator"
    )
    assert counts.to_dict("records") == [
        {"annotator": "ann-a", "n": 6 * n, "items": n},
        {"annotator": "ann-b", "n": 6 * n, "items": n},
    ]
    flipped = store.df(
        "SELECT annotator, label, count(*) AS n FROM human_labels "
        "WHERE value <> judge_value GROUP BY ALL ORDER BY ALL"
    )
    assert flipped.to_dict("records") == [
        {"annotator": "ann-a", "label": "guidance", "n": n},
        {"annotator": "ann-b", "label": "detection", "n": n},
    ]
    assert audit.next_position(store, "duo", "ann-a") == n  # 0-based: the fourth item
    assert audit.next_position(store, "duo", "ann-b") == n


def test_audit_csv_import_on_page(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "io", ["run-a"], fraction=0.5, seed=1)
    row = audit.audit_queue(store, "io").iloc[0]
    header = "run_id,item_id,variant,annotator,label,value,note\n"
    bad = (
        header
        + f"{row.run_id},{row.item_id},{row.variant},zoe,guidance,true,ok\n"
        + f"{row.run_id},{row.item_id},{row.variant},zoe,detektion,true,\n"
    )
    at = _open(AUDIT, audit="io", annotator="zoe", au_view="Export / import")
    assert any(b.proto.label == "Download labels CSV" for b in at.download_button)
    at.file_uploader[0].set_value(("labels.csv", bad.encode(), "text/csv")).run()
    at.button(key="au_import").click().run()
    assert not at.exception
    assert any("nothing written" in e.value for e in at.error)
    assert any("line 3: label 'detektion'" in c.value for c in at.code)
    assert store.scalar("SELECT count(*) FROM human_labels") == 0
    good = header + "".join(
        f"{row.run_id},{row.item_id},{row.variant},zoe,{l},false,\n" for l in JUDGE_LABELS
    )
    at.file_uploader[0].set_value(("labels.csv", good.encode(), "text/csv")).run()
    at.button(key="au_import").click().run()
    assert any("Imported 6 of 6 labels" in s.value for s in at.success)
    assert store.scalar("SELECT count(*) FROM human_labels WHERE annotator = 'zoe'") == 6


def test_playground_api_key_from_streamlit_secrets(
    initialised_store, fake_server, monkeypatch, tmp_path
):
    """A key named by api_key_env may live in .streamlit/secrets.toml; it reaches the server
    and nothing else (page, database)."""
    models = tmp_path / "keyed.toml"
    models.write_text(
        f'[endpoints.keyed]\nbase_url = "{fake_server.url}"\nmodel = "m"\n'
        'api_key_env = "EHW_PG_SECRET_KEY"\n'
    )
    monkeypatch.setenv("EHW_MODELS_FILE", str(models))
    monkeypatch.setenv("EHW_PG_SECRET_KEY", "placeholder")  # registers the restore…
    monkeypatch.delenv("EHW_PG_SECRET_KEY")  # …then starts unset
    at = AppTest.from_file(APP, default_timeout=120)
    at.secrets["EHW_PG_SECRET_KEY"] = "sk-from-secrets-42"
    at.switch_page(PLAYGROUND)
    at.query_params["pg_model"] = "keyed"
    at.run()
    at.radio(key="w_pg_src").set_value("Type my own").run()
    at.text_area(key="pg_prompt").input("Wich composser wrote the Eroica?").run()
    at.button(key="pg_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    model_calls = [r for r in fake_server.chat_requests if r["body"]["model"] == "m"]
    assert len(model_calls) == 2
    assert all(
        {k.lower(): v for k, v in r["headers"].items()}["authorization"]
        == "Bearer sk-from-secrets-42"
        for r in model_calls
    )
    assert "sk-from-secrets-42" not in _texts(at)
    dump = "".join(
        initialised_store.df(f"SELECT * FROM {t}").to_csv()
        for t in ("runs", "responses", "results", "calls")
    )
    assert "sk-from-secrets-42" not in dump and "EHW_PG_SECRET_KEY" in dump


def test_playground_holds_no_attachment_while_it_waits_on_the_model(initialised_store, fake_server):
    """The playground waits on a model mid-rerun: the file stays free meanwhile (other pages
    hold one attachment per rerun; a CLI run writing now would otherwise wait for the model)."""
    from core.store import files

    held: list[list] = []
    answer = fake_server.responder

    def responder(body: dict) -> str:
        held.append(files.attached_paths())
        return answer(body)

    fake_server.responder = responder
    at = _open(PLAYGROUND)
    at.button(key="pg_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(held) >= 2 and all(paths == [] for paths in held), held


def test_new_audit_warns_when_ppi_will_have_too_few_items(two_runs_store):
    """10% of two runs' 50 verdicts each: 5 labelled items a run, below MIN_N for PPI."""
    at = _open(AUDIT, annotator="ann")
    warned = " ".join(w.value for w in at.warning)
    assert "n too small" in warned and "run-a gets 5" in warned and "run-b gets 5" in warned
    at.slider(key="au_fraction").set_value(0.3).run()
    assert not any("n too small" in w.value for w in at.warning)


def test_new_audit_never_picks_a_failed_run_by_default_and_can_hide_it(two_runs_store):
    """Issue 31, point 2: a failed run is listed (marked) but not chosen unless asked for, as on
    Compare and ProcessBench (core.services.run_choice); "hide failed and empty runs" drops it."""
    two_runs_store.execute("UPDATE runs SET status = 'failed' WHERE run_id = 'run-b'")
    at = _open(AUDIT, annotator="ann")
    runs = at.multiselect(key="w_runs")
    assert runs.options == [o for o in runs.options if o.startswith(("run-a", "run-b"))]
    assert len(runs.options) == 2 and any("failed" in o for o in runs.options)
    assert runs.value == ["run-a"]
    assert at.query_params["runs"] in ("run-a", ["run-a"])
    runs.set_value(["run-a", "run-b"]).run()  # still choosable by hand
    assert at.multiselect(key="w_runs").value == ["run-a", "run-b"]
    at.radio(key="w_au_runs_show").set_value("hide failed and empty runs").run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.multiselect(key="w_runs").options) == 1
    assert at.multiselect(key="w_runs").value == ["run-a"]
