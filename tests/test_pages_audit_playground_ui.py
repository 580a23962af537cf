"""AppTest: what a user met on the Judge audit and Playground pages (issue 20, points 9 and 10).

Judge audit: the default name follows fraction and seed, a taken name is refused (with a way to
open that audit), the audit choice lives in the URL as a stable key and reaches the browser's
selector after a draw, a conflict is not also called "Saved.", κ cells read as rounded numbers
or "—", and "Next item after saving" moves on. Playground: a weak LLM judge's warning sits on
its verdict, the Exchange selector is set to a new exchange, and a person's label is Yes / No /
not decided.
"""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.engine.endpoints import Endpoint
from core.services import audit
from core.services import playground as pg
from tests.audit_fixtures import write_labels
from tests.test_pages_playground_audit import AUDIT, PLAYGROUND, _open, fake_server

__all__ = ["fake_server"]  # the fixture, shared with the page tests it comes from


@pytest.fixture
def held_open(two_runs_store):
    with two_runs_store.session():
        yield two_runs_store


# -- Judge audit ------------------------------------------------------------------------------


def _new_audit_page(store) -> AppTest:
    """`store`: a two_runs_store."""
    audit.create_audit(store, "older", ["run-a"], fraction=0.5, seed=1)
    at = _open(AUDIT, annotator="ann")
    at.selectbox(key="w_audit").set_value(audit.NEW_AUDIT_KEY).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_new_audit_is_a_stable_key_in_the_url(two_runs_store):
    at = _new_audit_page(two_runs_store)
    assert at.query_params["audit"] in (audit.NEW_AUDIT_KEY, [audit.NEW_AUDIT_KEY])
    assert all("➕" not in str(v) for v in at.query_params.values())
    assert "New audit" in [h.value for h in at.subheader]
    # The label still reads "New audit" for a person.
    assert any("New audit" in o for o in at.selectbox(key="w_audit").options)
    # A link with the key opens the form.
    again = _open(AUDIT, audit=audit.NEW_AUDIT_KEY)
    assert again.button(key="au_draw") is not None


def test_default_audit_name_follows_fraction_and_seed(two_runs_store):
    at = _new_audit_page(two_runs_store)
    at.number_input(key="au_seed").set_value(7).run()
    at.slider(key="au_fraction").set_value(0.29).run()
    name = at.text_input(key="au_name").value
    assert name is not None and "-s7-" in name and name.endswith("-29pct"), name
    at.number_input(key="au_seed").set_value(8).run()
    assert "-s8-" in (at.text_input(key="au_name").value or "")
    # A name the person typed is theirs: it no longer follows.
    at.text_input(key="au_name").input("my-audit").run()
    at.number_input(key="au_seed").set_value(9).run()
    assert at.text_input(key="au_name").value == "my-audit"


def test_drawing_under_a_taken_name_is_refused_with_a_way_to_open_it(two_runs_store, held_open):
    store = two_runs_store
    at = _new_audit_page(store)
    before = audit.audit_queue(store, "older")
    at.text_input(key="au_name").input("older").run()
    warned = " ".join(w.value for w in at.warning)
    assert "already exists" in warned and "older" in warned
    assert at.button(key="au_draw").disabled
    assert audit.audit_queue(store, "older").equals(before)  # (drawn meanwhile: AuditExists)
    at.button(key="au_open_existing").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.query_params["audit"] in ("older", ["older"])
    assert at.selectbox(key="w_audit").value == "older"


def test_create_audit_can_refuse_a_taken_name(two_runs_store):
    store = two_runs_store
    audit.create_audit(store, "pilot", ["run-a"], fraction=0.5, seed=1)
    with pytest.raises(audit.AuditExists) as caught:
        audit.create_audit(store, "pilot", ["run-b"], fraction=0.2, seed=4, exist_ok=False)
    assert caught.value.info.name == "pilot" and caught.value.info.seed == 1
    assert "already exists" in str(caught.value)
    with pytest.raises(audit.AuditError, match="reserved"):
        audit.create_audit(store, audit.NEW_AUDIT_KEY, ["run-a"])


def test_after_a_draw_the_browser_selector_is_told_the_new_audit(two_runs_store, held_open):
    """The selector in the browser keeps its own value unless the page sets it: after a draw
    the page must send the new audit (set_value), or the next click sends "New audit" back."""
    at = _new_audit_page(two_runs_store)
    at.text_input(key="au_name").input("fresh").run()
    at.button(key="au_draw").click().run()
    assert not at.exception, [e.value for e in at.exception]
    box = at.selectbox(key="w_audit")
    assert box.value == "fresh"
    assert box.proto.set_value and box.proto.raw_value == "fresh"


def test_conflict_is_not_also_called_saved(two_runs_store, held_open):
    store = two_runs_store
    audit.create_audit(store, "clash", ["run-a", "run-b"], fraction=0.1, seed=5)
    tab1 = _open(AUDIT, audit="clash", annotator="ann")
    tab2 = _open(AUDIT, audit="clash", annotator="ann")
    for label in JUDGE_LABELS:
        tab1.button(key=f"au_yes_{label}").click().run()
    tab1.button(key="au_save").click().run()
    for label in JUDGE_LABELS:
        tab2.button(key=f"au_no_{label}").click().run()
    tab2.button(key="au_save").click().run()
    assert any("Not saved" in w.value for w in tab2.warning)
    assert not any(c.value.startswith("Saved.") for c in tab2.caption)
    tab2.button(key="au_keep_theirs").click().run()
    assert any(c.value.startswith("Saved.") for c in tab2.caption)


_KAPPA_CELL = re.compile(r"^(—|-?\d\.\d\d)$")


def test_kappa_tables_show_rounded_values_and_a_dash(two_runs_store, held_open):
    store = two_runs_store
    audit.create_audit(store, "res", ["run-a", "run-b"], fraction=0.25, seed=3)
    queue = audit.audit_queue(store, "res")
    saves = [
        (row, name, {l: bool(getattr(row, l)) != (k % 4 == 0) for l in JUDGE_LABELS})
        for name in ("ann1", "ann2")
        for k, row in enumerate(queue.itertuples())
    ]
    # A third annotator with a handful of items: κ "n too small" (masked) in its rows.
    saves += [
        (row, "ann3", {l: bool(getattr(row, l)) for l in JUDGE_LABELS})
        for row in queue.head(3).itertuples()
    ]
    write_labels(store, saves)  # what one save_labels call per item and annotator writes
    at = _open(AUDIT, audit="res", annotator="ann1", au_view="Results")
    assert not at.exception, [e.value for e in at.exception]
    frames = [d.value for d in at.dataframe]
    kappa_frames = [f for f in frames if "ci_low" in f.columns]
    assert len(kappa_frames) >= 2  # judge vs each annotator, annotator pairs
    dashes = 0
    for frame in kappa_frames:
        for col in [c for c in frame.columns if "kappa" in c or c.startswith("ci_")]:
            for cell in frame[col]:
                assert isinstance(cell, str) and _KAPPA_CELL.match(cell), (col, cell)
                dashes += cell == "—"
    assert dashes > 0  # the small-n rows read "—", not None
    assert "None" not in " ".join(m.value for m in at.metric)


def test_next_item_after_saving_is_an_option(two_runs_store, held_open):
    store = two_runs_store
    audit.create_audit(store, "adv", ["run-a", "run-b"], fraction=0.1, seed=5)
    at = _open(AUDIT, audit="adv", annotator="ann")
    assert at.toggle(key="au_advance").value is False  # off: the reveal stays in view
    at.toggle(key="au_advance").set_value(True).run()
    for label in JUDGE_LABELS:
        at.button(key=f"au_yes_{label}").click().run()
    at.button(key="au_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input(key="au_pos::adv::ann").value == 2
    assert any("Saved item 1 for ann" in s.value for s in at.success)
    assert any("Item 2 of" in m.value for m in at.markdown)


# -- Playground -------------------------------------------------------------------------------


def _column_of(at: AppTest, needle: str):
    """The innermost column whose markdown contains `needle`."""
    found = None
    for col in at.columns:
        if any(needle in m.value for m in col.markdown):
            found = col  # later columns in the walk are nested deeper
    return found


def test_weak_llm_judge_warning_sits_on_each_verdict(initialised_store, fake_server):
    # The local endpoint (weak) judges, by the user's choice.
    at = _open(PLAYGROUND, pg_src="Type my own", pg_judging="llm")
    at.text_area(key="pg_prompt").input("Wich composser wrote the Eroica?").run()
    at.button(key="pg_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    badges = [m for m in at.markdown if "-badge[" in m.value]
    assert len(badges) == 2
    assert not any(":green-badge[" in b.value for b in badges)  # no confident green chips
    for mode_title in ("Proactive", "Passive"):
        col = _column_of(at, mode_title)
        assert col is not None
        assert any("-badge[" in m.value for m in col.markdown)
        assert any("Weak judge" in w.value for w in col.warning), mode_title


def test_capable_llm_judge_keeps_green_chips_without_the_warning(initialised_store, fake_server):
    at = _open(PLAYGROUND, pg_src="Type my own", pg_judge="fake-judge")
    at.text_area(key="pg_prompt").input("Wich composser wrote the Eroica?").run()
    at.button(key="pg_send").click().run()
    assert any(":green-badge[" in m.value for m in at.markdown)
    assert not any("Weak judge" in w.value for w in at.warning)


def test_sending_selects_the_new_exchange(initialised_store, fake_server):
    ep = Endpoint("fake", (fake_server.url,), "m")
    ex = pg.run_exchange(pg.custom_item("First question?"), "zero-shot", ep, None, judging="later")
    first = pg.save_exchange(initialised_store, ex)
    at = _open(PLAYGROUND, pg_src="Type my own", pg_judging="later")
    assert at.selectbox(key="w_exchange").value == first
    at.text_area(key="pg_prompt").input("Second question?").run()
    at.button(key="pg_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    new = initialised_store.scalar(
        "SELECT run_id FROM runs WHERE kind = 'playground' AND run_id <> ?", [first]
    )
    box = at.selectbox(key="w_exchange")
    assert box.value == new and at.query_params["exchange"] in (new, [new])
    assert box.proto.set_value and box.proto.raw_value == box.proto.options[box.proto.default]
    assert "Second question?" in [t.value for t in at.text]


def test_person_labels_are_yes_no_or_not_decided(initialised_store, fake_server):
    at = _open(PLAYGROUND, pg_primary="Factual Errors", annotator="ada")
    at.button(key="pg_send").click().run()
    assert not at.exception, [e.value for e in at.exception]
    run_id = initialised_store.scalar("SELECT run_id FROM runs WHERE kind = 'playground'")
    key = lambda mode, label: f"pg_h_{run_id}_{mode}_{label}"  # noqa: E731
    control = at.segmented_control(key=key("passive", "detection"))
    assert list(control.options) == ["Yes", "No"] and control.value is None  # not decided
    assert any("not decided" in c.value for c in at.caption)
    save = lambda: at.button(key="pg_save_labels")  # noqa: E731
    assert save().disabled  # nothing decided yet
    for mode in ("proactive", "passive"):
        for label in JUDGE_LABELS:
            at.segmented_control(key=key(mode, label)).set_value(
                "Yes" if mode == "passive" and label != "guidance" else "No"
            )
    at.segmented_control(key=key("proactive", "detection")).set_value(None)  # undecided again
    at.run()
    assert save().disabled
    assert any("11 of 12 labels decided" in c.value for c in at.caption)
    at.segmented_control(key=key("proactive", "detection")).set_value("No").run()
    assert not save().disabled
    save().click().run()
    assert any("Saved 12 labels by ada" in s.value for s in at.success)
    rows = initialised_store.df("SELECT variant, label, value FROM human_labels")
    got = {(r.variant, r.label): r.value for r in rows.itertuples()}
    assert got[("passive", "detection")] is True and got[("passive", "guidance")] is False
    assert got[("proactive", "detection")] is False
    again = _open(PLAYGROUND, exchange=run_id, annotator="ada")
    assert again.segmented_control(key=key("passive", "detection")).value == "Yes"
    assert again.segmented_control(key=key("passive", "guidance")).value == "No"


def test_save_is_always_enabled_and_names_the_labels_still_missing(two_runs_store, held_open):
    """Issue 31, point 9: Save never silently does nothing. It is never disabled (a disabled
    Save waited for a rerun that, lost or late, left S doing nothing); pressed with labels
    unanswered, it says which and saves nothing; then, all set, it saves."""
    store = two_runs_store
    audit.create_audit(store, "miss", ["run-a", "run-b"], fraction=0.1, seed=5)
    at = _open(AUDIT, audit="miss", annotator="ann")
    assert at.button(key="au_save").disabled is False
    for label in JUDGE_LABELS[:-2]:
        at.button(key=f"au_yes_{label}").click().run()
    at.button(key=f"au_no_{JUDGE_LABELS[-2]}").click().run()
    assert at.button(key="au_save").disabled is False
    at.button(key="au_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    warned = " ".join(w.value for w in at.warning)
    assert "Not saved" in warned and JUDGE_LABELS[-1] in warned.replace("\\_", "_"), warned
    assert not any(l in warned.replace("\\_", "_") for l in JUDGE_LABELS[:-1]), warned
    assert store.scalar("SELECT count(*) FROM human_labels WHERE annotator = 'ann'") == 0
    at.button(key=f"au_yes_{JUDGE_LABELS[-1]}").click().run()
    assert not any("Not saved" in w.value for w in at.warning)  # said once, not left behind
    at.button(key="au_save").click().run()
    assert any(c.value.startswith("Saved.") for c in at.caption)
    assert store.scalar("SELECT count(*) FROM human_labels WHERE annotator = 'ann'") == len(
        JUDGE_LABELS
    )


def test_save_takes_the_label_pressed_in_the_same_interaction(two_runs_store, held_open):
    """Keys typed faster than the server answers reach it as one interaction, whose callbacks
    run in no promised order: Save and the sixth label's Yes together save all six."""
    store = two_runs_store
    audit.create_audit(store, "burst", ["run-a", "run-b"], fraction=0.1, seed=5)
    at = _open(AUDIT, audit="burst", annotator="ann")
    for label in JUDGE_LABELS[:-1]:
        at.button(key=f"au_yes_{label}").click().run()
    at.button(key="au_save").click()
    at.button(key=f"au_no_{JUDGE_LABELS[-1]}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Not saved" in w.value for w in at.warning)
    saved = store.df("SELECT label, value FROM human_labels WHERE annotator = 'ann'")
    assert dict(zip(saved["label"], saved["value"])) == {
        **{l: True for l in JUDGE_LABELS[:-1]},
        JUDGE_LABELS[-1]: False,
    }


def test_a_control_item_reads_as_one_not_as_nan_categories(two_runs_store, held_open):
    """A queue row's is_error is numpy's False (not `False`): the control item read as an
    erroneous one, "nan › nan" and "What is wrong: nan" (issue 31, point 6)."""
    store = two_runs_store
    audit.create_audit(store, "ctl", ["run-a", "run-b"], fraction=0.5, seed=1)
    queue = audit.audit_queue(store, "ctl")
    position = int(queue.index[~queue["is_error"].astype(bool)][0]) + 1
    at = _open(AUDIT, audit="ctl", annotator="ann")
    at.number_input(key="au_pos::ctl::ann").set_value(position).run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    assert "error-free control question" in captions and "nan" not in captions, captions
    assert not any("What is wrong" in m.value for m in at.markdown)
