"""Judge audit: draw a seeded sample of verdicts, label it by hand, see how far the judge agrees.

Thin page over core.services.audit (sampling, label storage, statistics, CSV) — SPEC §1 "Human
evaluation". Works for any LLM-judged benchmark with named labels: the labels, their letters and
help texts are the audited benchmark's (its registry entry, through `audit.LabelSet`).
Selections that define a view (audit, runs, annotator) live in the URL.
Label-dependent numbers are read uncached: another session may have just saved labels.
The tabs are components under pages/ui/ (audit_draw, audit_label, audit_results, audit_csv).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.services import audit
from pages.ui.access import allowed, is_annotator, labeller_name, require
from pages.ui.audit_csv import csv_tab
from pages.ui.audit_draw import new_audit
from pages.ui.audit_label import label_tab
from pages.ui.audit_results import results_tab
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    md_escape,
    url_selectbox,
)

NEW = audit.NEW_AUDIT_KEY  # ?audit=new: a stable key in the URL, shown as NEW_LABEL
NEW_LABEL = "➕ New audit"


def url_text(label: str, key: str, **kwargs: Any) -> str:
    """A text input whose value lives in the URL (?key=value)."""
    wanted = st.query_params.get(key, "")
    value = st.text_input(label, value=wanted, key=f"w_{key}", **kwargs).strip()
    if value and st.query_params.get(key) != value:
        st.query_params[key] = value
    elif not value and key in st.query_params:
        del st.query_params[key]
    return value


# -- page ---------------------------------------------------------------------------------------

st.title("Judge audit")
st.caption(
    "Can the judge's verdicts be trusted before quoting an F1? Draw a seeded sample of "
    "verdicts (stratified by run and category, 10% by default as in the paper), label "
    "it blind (the judge's verdict hidden until you save), and compare: Cohen's κ and confusion matrices per label, Fleiss' κ "
    "between annotators, and the F1 table from human labels beside the judge's."
)

audits = cached(audit.list_audits)
names = list(audits["audit"])
may_draw = allowed("draw_audit")
if not may_draw and not [n for n in names if n != NEW]:
    st.info("No audit to label yet: an admin draws one on this page.")
    st.stop()
top = st.columns([2, 2])
with top[0]:
    choice = url_selectbox(
        "Audit",
        [n for n in names if n != NEW] + ([NEW] if may_draw else []),
        key="audit",
        default=names[0] if names else NEW,
        format_func=lambda a: NEW_LABEL if a == NEW else a,
    )
with top[1]:
    signed_in = labeller_name()  # under login: labels go under the identity, never a typed name
    if signed_in is not None:
        annotator = signed_in
        st.caption(md_escape(f"Labelling as {signed_in}"))
    else:
        annotator = url_text("Annotator (your name)", key="annotator", placeholder="e.g. ada")

if choice == NEW or choice is None:
    require("draw_audit")
    st.subheader("New audit")
    new_audit()

info = cached(audit.get_audit, choice)
queue = cached(audit.audit_queue, choice)
if queue.empty:
    st.warning(md_escape(f"Audit {choice!r} has no items."))
    st.stop()
label_set = cached(audit.label_set_of_audit, choice)
blind = is_annotator()
if info is not None and not blind:  # describe() names the runs (and so the models)
    st.caption(md_escape(f"Audit {choice}: {info.describe()}."))
if queue["weak_model"].fillna(False).astype(bool).any() and not blind:
    st.warning(WEAK_MODEL_NOTE)

# Lazy tabs (only the open one runs; its name is in the URL as ?au_view=…): saving a label
# does not recompute the results panel, and the results are fresh whenever they are opened.
# Only the tabs the role may open exist (an annotator: Label alone, whatever ?au_view= says).
shown_tabs = [
    t
    for t, action in (
        ("Label", "label"),
        ("Results", "audit_results"),
        ("Export / import", "audit_results"),
    )
    if allowed(action)
]
tabs = dict(
    zip(
        shown_tabs,
        st.tabs(shown_tabs, key="au_view", on_change="rerun", bind="query-params"),
    )
)
if "Label" in tabs and tabs["Label"].open:
    with tabs["Label"]:
        label_tab(choice, annotator, queue, label_set)
if "Results" in tabs and tabs["Results"].open:
    with tabs["Results"]:
        require("audit_results")
        results_tab(choice, annotator, info, label_set)
if "Export / import" in tabs and tabs["Export / import"].open:
    with tabs["Export / import"]:
        require("audit_results")
        csv_tab(choice)
