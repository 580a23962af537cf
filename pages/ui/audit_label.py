"""Judge audit, the Label tab: the queue's navigation, the item, and the label form.

Why nested fragments (issue 31, point 9: ~0.75 s a keypress, ~6 s an item under load): a
keypress (a label set) reruns only its label's row; Save (in the label form, `LABEL_FORM`), a
move through the queue and the toggles rerun only the item view (`ITEM_VIEW`: progress,
navigation, the item, its form) — never the page, whose audit list, audit, queue and label set
do not change when a label is saved. Save is always enabled: pressed with labels unanswered it
names them (a Save enabled only by a rerun after the last label did nothing, silently, when
S came before that rerun)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pandas as pd
import streamlit as st

from core.services import audit
from core.store import DatabaseError
from pages.ui.access import allowed, is_annotator, record, refused_text, require
from pages.ui.common import (
    cached,
    get_store,
    md_escape,
    table,
    uncached,
)

ITEM_VIEW = "au_item_view"  # fragment keys: st.rerun(ITEM_VIEW) from a callback reruns it alone
LABEL_FORM = "au_label_form"


def _fmt_bool(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "—"
    return "✓ true" if bool(value) else "✗ false"


# Keyboard: digits 1–9 answer "yes" for the labels in order, Shift+digit answers "no";
# ←/→ move through the queue; S saves (Streamlit's native `shortcut=` on buttons; keys are
# ignored while typing in the note, the name or the position field).
def _yes_key(i: int) -> str | None:
    """The shortcut of the i-th label's Yes (digits 1–9; later labels have none)."""
    return str(i + 1) if i < 9 else None


def _no_key(i: int) -> str | None:
    yes = _yes_key(i)
    return f"Shift+{yes}" if yes else None


def _goto(key: str, value: int) -> None:
    st.session_state[key] = value


def _item_state(
    name: str, annotator: str, row: dict[str, Any], names: tuple[str, ...]
) -> tuple[str, dict[str, Any]]:
    """Per item and annotator: the labels being chosen (None = unset) and the saved labels as
    read when the item was first shown (the optimistic-concurrency snapshot)."""
    key = f"au_item::{name}::{annotator}::{row['position']}"
    if key not in st.session_state:
        loaded = uncached(
            audit.item_labels, row["run_id"], row["item_id"], row["variant"], annotator
        )
        st.session_state[key] = {
            "values": {l: loaded.get(l) for l in names},
            "loaded": loaded,
        }
        st.session_state[f"{key}::note"] = loaded.get("_note", "")
    return key, st.session_state[key]


def _set_label(state_key: str, label: str, value: bool) -> None:
    """A Yes / No callback: sets the label; the interaction's default rerun redraws its row (a
    fragment) alone. Nothing else on the form depends on which labels are set — Save is always
    enabled and says what is missing — so no other rerun is needed (issue 31, point 9: the rerun
    that once enabled Save, when lost or late, left an S press doing nothing)."""
    st.session_state[state_key]["values"][label] = value


def _labels_of_this_interaction(state_key: str, names: tuple[str, ...]) -> None:
    """Apply the Yes / No presses that reached the server with this Save press: keys typed
    faster than the server answers arrive in one interaction, whose callbacks run in no promised
    order, so the save takes every label the browser shows as chosen, not only those whose
    callbacks ran before its own."""
    values = st.session_state[state_key]["values"]
    for label in names:
        if st.session_state.get(f"au_yes_{label}") is True:
            values[label] = True
        elif st.session_state.get(f"au_no_{label}") is True:
            values[label] = False


def missing_labels(values: dict[str, Any], names: tuple[str, ...]) -> list[str]:
    """The labels not yet answered, in the label set's order."""
    return [l for l in names if values.get(l) is None]


def _judge_values(row: dict[str, Any], names: tuple[str, ...]) -> dict[str, bool | None]:
    return {label: (None if pd.isna(row.get(label)) else bool(row.get(label))) for label in names}


def _save(
    annotator: str,
    row: dict[str, Any],
    state_key: str,
    names: tuple[str, ...],
    force: dict[str, Any] | None = None,
    advance: tuple[str, int] | None = None,
) -> None:
    """Button callback: one transaction for all the item's labels, refused (and turned into a
    question) when this annotator's saved labels changed since the item was shown. The queue
    position stays where it is (the judge's verdict is revealed there) unless "Next item after
    saving" is on: `advance` = (position key, queue length)."""
    _labels_of_this_interaction(state_key, names)
    state = st.session_state[state_key]
    values = state["values"]
    missing = missing_labels(values, names)
    if missing:  # never a silent no-op: said on the form (this interaction's rerun)
        st.session_state[f"{state_key}::missing"] = missing
        return
    st.session_state.pop(f"{state_key}::missing", None)
    if not allowed("label"):  # a callback: refused here, said by the page on this rerun
        st.session_state["au_write_error"] = refused_text("label")
        st.rerun(ITEM_VIEW)
    note = st.session_state.get(f"{state_key}::note", "")
    expected = force if force is not None else state["loaded"]
    try:
        audit.save_labels(
            get_store(),
            row["run_id"],
            row["item_id"],
            row["variant"],
            annotator,
            {l: bool(values[l]) for l in names},
            note=note,
            judge_values=_judge_values(row, names),
            expected=expected,
        )
    except audit.LabelConflict as conflict:
        st.session_state[f"{state_key}::conflict"] = {
            "theirs": conflict.theirs,
            "mine": conflict.mine,
        }
        return
    except DatabaseError as exc:  # a callback: shown by the page on this rerun
        st.session_state["au_write_error"] = str(exc)
        st.rerun(ITEM_VIEW)
    st.session_state.pop(f"{state_key}::conflict", None)
    record("label", f"{row['run_id']}/{row['item_id']}/{row['variant']}", ", ".join(names))
    state["loaded"] = {**{l: bool(values[l]) for l in names}, "_note": note.strip()}
    st.session_state["au_saved"] = f"Saved item {row['position'] + 1} for {annotator}."
    if advance and st.session_state.get("au_advance"):
        pos_key, n = advance
        st.session_state[pos_key] = min(n, int(row["position"]) + 2)  # 1-based: the next item
        judged = _judge_values(row, names)
        differs = [l for l in names if judged[l] is not None and judged[l] != bool(values[l])]
        st.session_state["au_saved"] += (  # the reveal, which moving on leaves behind
            f" You differed from the judge on: {', '.join(differs)}."
            if differs
            else " You agreed with the judge on every label."
        )
    st.rerun(ITEM_VIEW)  # progress, position and the reveal: the item view, not the page


def _keep_theirs(state_key: str, names: tuple[str, ...]) -> None:
    conflict = st.session_state.pop(f"{state_key}::conflict")
    theirs = conflict["theirs"]
    st.session_state[state_key] = {
        "values": {l: theirs.get(l) for l in names},
        "loaded": theirs,
    }
    st.session_state[f"{state_key}::note"] = theirs.get("_note", "")


def _show_conflict(
    annotator: str,
    row: dict[str, Any],
    state_key: str,
    names: tuple[str, ...],
    advance: tuple[str, int],
) -> None:
    conflict = st.session_state.get(f"{state_key}::conflict")
    if not conflict:
        return
    theirs, mine = conflict["theirs"], conflict["mine"]
    st.warning(
        f"Not saved: {annotator}'s labels for this item were changed elsewhere (another "
        "tab or session) since it was shown. Compare, then choose."
    )
    rows = [
        {
            "label": l,
            "yours (not saved)": _fmt_bool(mine.get(l)),
            "saved now": _fmt_bool(theirs.get(l)),
        }
        for l in names
    ]
    rows.append(
        {
            "label": "note",
            "yours (not saved)": mine.get("_note") or "—",
            "saved now": theirs.get("_note") or "—",
        }
    )
    table(pd.DataFrame(rows), f"audit_conflict_{row['position']}")
    c1, c2 = st.columns(2)
    c1.button(
        "Overwrite with mine",
        key="au_overwrite",
        type="primary",
        on_click=_save,
        args=(annotator, row, state_key, names, theirs, advance),
    )
    c2.button("Keep theirs", key="au_keep_theirs", on_click=_keep_theirs, args=(state_key, names))


def label_tab(name: str, annotator: str, queue: pd.DataFrame, labels: audit.LabelSet) -> None:
    require("label")
    if not annotator:
        st.info("Type your name above to start labelling (it is saved with every label).")
        return
    item_view(name, annotator, queue, labels)


@st.fragment(key=ITEM_VIEW)
def item_view(name: str, annotator: str, queue: pd.DataFrame, labels: audit.LabelSet) -> None:
    """Progress, navigation and the item at the annotator's queue position, with its form. A
    fragment: a save or a move reruns this, with the queue the page last read (it holds no
    people's labels, so a save leaves it as it was)."""
    # A fragment's rerun is outside the page's store session (app.py): its reads share one here
    with contextlib.ExitStack() as stack:
        with contextlib.suppress(DatabaseError):  # each read then says so itself (cached)
            stack.enter_context(get_store().session())
        _item_view(name, annotator, queue, labels)


def _item_view(name: str, annotator: str, queue: pd.DataFrame, labels: audit.LabelSet) -> None:
    blind = is_annotator()  # an annotator's queue: no run or model names, no verdict toggle
    n = len(queue)
    # cached on the store's version: any save (here or elsewhere) makes it fresh; progress and
    # where to resume in one read (a save reruns this view)
    prog = cached(audit.queue_progress, name, annotator, len(labels.names))
    st.progress(
        prog["done"] / max(1, n),
        text=f"{md_escape(annotator)}: {prog['done']} of {n} items fully labelled",
    )
    pos_key = f"au_pos::{name}::{annotator}"
    nxt = prog["next"]
    if pos_key not in st.session_state:  # resume where this annotator stopped
        st.session_state[pos_key] = (nxt if nxt is not None else n - 1) + 1
    if st.session_state.get("au_write_error"):
        st.error(st.session_state.pop("au_write_error"))
    show_judge = _navigation(pos_key, n, nxt, blind)
    pos = int(st.session_state[pos_key]) - 1
    row = {str(k): v for k, v in queue.iloc[pos].items()}
    if nxt is None:
        st.success(
            f"{md_escape(annotator)} has labelled every item of this audit. See the Results tab."
        )
    _show_item(row, pos, n, blind)
    _label_form(name, annotator, row, labels, (pos_key, n), show_judge)


def _navigation(pos_key: str, n: int, nxt: int | None, blind: bool) -> bool:
    """Previous / Next / First unlabelled, the position, and the two toggles; returns whether
    the judge's verdict is to be shown before saving (never in an annotator's blind queue)."""
    nav = st.columns([1, 1, 1.4, 2, 2, 2])
    cur = int(st.session_state[pos_key])
    nav[0].button(
        "◀ Previous",
        key="au_prev",
        disabled=cur <= 1,
        shortcut="Left",
        on_click=_goto,
        args=(pos_key, max(1, cur - 1)),
    )
    nav[1].button(
        "Next ▶",
        key="au_next",
        disabled=cur >= n,
        shortcut="Right",
        on_click=_goto,
        args=(pos_key, min(n, cur + 1)),
    )
    nav[2].button(
        "First unlabelled",
        key="au_first",
        disabled=nxt is None,
        on_click=_goto,
        args=(pos_key, (nxt or 0) + 1),
    )
    with nav[3]:
        st.number_input("Queue position", 1, n, key=pos_key, persist_state="session")
    show_judge = False
    with nav[4]:
        if not blind:
            show_judge = st.toggle(
                "Show judge verdict",
                key="au_judge",
                bind="query-params",
                persist_state="session",
                help="Off (default): blind labelling — the judge's labels and "
                "rationales appear only once you have saved the item.",
            )
    with nav[5]:
        st.toggle(
            "Next item after saving",
            key="au_advance",
            bind="query-params",
            persist_state="session",
            help="Off (default): the saved item stays in view with the judge's verdict "
            "revealed beside yours. On: saving moves to the next item (the save is "
            "confirmed there).",
        )
    return bool(show_judge)


def _show_item(row: dict[str, Any], pos: int, n: int, blind: bool) -> None:
    """The item as text: prompt, what is wrong, ground truth, the response (and, outside a
    blind queue, its run, model and setting)."""
    st.markdown(f"#### Item {pos + 1} of {n}")
    raw = row.get("is_error")  # a queue row's value is numpy's bool (never `is False`)
    is_error = None if raw is None or pd.isna(raw) else bool(raw)
    category = (
        f"{row.get('primary_category')} › {row.get('secondary_category')}"
        if is_error is not False
        else "error-free control question"
    )
    st.caption(
        md_escape(
            f"item {row['item_id']} · {category}"
            if blind
            else f"run {row['run_id']} · model {row.get('model')} · setting "
            f"{row.get('setting')} · {row.get('mode') or 'proactive'} · item "
            f"{row['item_id']} · {category}"
        )
    )
    left, right = st.columns(2)
    with left:
        st.markdown("**Prompt**")
        with st.container(border=True):
            st.text(row.get("prompt") or "(prompt not found)")
        if is_error is not False:
            st.markdown("**What is wrong**")
            st.text(row.get("explanation") or "—")
        st.markdown("**Ground truth**")
        st.text(row.get("gold") or "—")
    with right:
        st.markdown("**Response**")
        with st.container(border=True):
            st.text(row.get("response") or "(empty)")


@st.fragment(key=LABEL_FORM)
def _label_form(
    name: str,
    annotator: str,
    row: dict[str, Any],
    labels: audit.LabelSet,
    advance: tuple[str, int],
    show_judge: bool,
) -> None:
    """The item's Yes / No buttons, note and Save: a fragment inside the item view, so a
    keypress (a label set) reruns only this. A save reruns the item view (`_save`)."""
    names = labels.names
    pos_key, n = advance
    saved_msg = st.session_state.pop("au_saved", None)
    state_key, state = _item_state(name, annotator, row, names)
    saved = cached(audit.item_labels, row["run_id"], row["item_id"], row["variant"], annotator)
    done = all(label in saved for label in names)
    reveal = show_judge or done
    last = min(len(names), 9)
    st.markdown(
        f"**Your labels** — yes or no for each (keys 1–{last} = yes, Shift+1–{last} = no). "
        + (
            "The judge's verdict is shown."
            if reveal
            else "The judge's verdict stays hidden until you save this item."
        )
    )
    for i, label in enumerate(names):
        _label_row(i, label, labels.help.get(label), state_key, reveal, row)
    st.text_area("Note (optional)", key=f"{state_key}::note", height=68, persist_state="session")
    st.button(  # always enabled: a disabled Save waited for a rerun that could be lost
        "Save labels",
        key="au_save",
        type="primary",
        shortcut="S",
        on_click=_save,
        args=(annotator, row, state_key, names, None, (pos_key, n)),
    )
    missing = st.session_state.pop(f"{state_key}::missing", None)
    if missing:
        st.warning(
            md_escape(
                f"Not saved: answer {', '.join(missing)} first "
                f"({len(names) - len(missing)} of {len(names)} labels set)."
            )
        )
    _show_conflict(annotator, row, state_key, names, (pos_key, n))
    if saved_msg:
        st.success(saved_msg)
    conflict = st.session_state.get(f"{state_key}::conflict")
    if done and not conflict:  # never "Saved." beside the conflict's "Not saved"
        _saved_note(row, saved, names)


@st.fragment
def _label_row(
    i: int,
    label: str,
    help_text: str | None,
    state_key: str,
    reveal: bool,
    row: dict[str, Any],
) -> None:
    """One label: its name, Yes / No (keys i+1 and Shift+i+1; the chosen one primary), and the
    judge's value and rationale once revealed. A fragment of its own: a keypress redraws this
    row (8 elements), not the form's six rows, note and save (issue 31, point 9)."""
    value = st.session_state[state_key]["values"][label]  # the state, not the last form's args
    c0, c1, c2, c3 = st.columns([1.9, 1, 1.45, 3.6], vertical_alignment="center")
    c0.markdown(f"**{label}**", help=help_text)
    c1.button(
        "Yes",
        key=f"au_yes_{label}",
        shortcut=_yes_key(i),
        type="primary" if value is True else "secondary",
        width="stretch",
        on_click=_set_label,
        args=(state_key, label, True),
    )
    c2.button(
        "No",
        key=f"au_no_{label}",
        shortcut=_no_key(i),
        type="primary" if value is False else "secondary",
        width="stretch",
        on_click=_set_label,
        args=(state_key, label, False),
    )
    with c3:
        if reveal:
            rationales = row.get("rationales")
            if isinstance(rationales, str):
                rationales = json.loads(rationales)
            st.caption(f"judge: {_fmt_bool(row.get(label))}")
            st.text((rationales or {}).get(label) or "—")
        elif value is None:
            st.caption("unset")


def _saved_note(row: dict[str, Any], saved: dict[str, Any], names: tuple[str, ...]) -> None:
    """After a save: where the person's labels differ from the judge's."""
    differs = [
        l
        for l in names
        if row.get(l) is not None and not pd.isna(row.get(l)) and saved[l] != bool(row.get(l))
    ]
    st.caption(
        "Saved. "
        + (
            f"You differ from the judge on: {', '.join(differs)}."
            if differs
            else "You agreed with the judge on every label."
        )
    )
