"""Judge audit: draw a seeded sample of verdicts, label it by hand, see how far the judge agrees.

Thin page over core.misprompt.audit (sampling, label storage, statistics, CSV) — SPEC §1 "Human
evaluation". Selections that define a view (audit, runs, annotator) live in the URL.
Label-dependent numbers are read uncached: another session may have just saved labels.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd
import streamlit as st

from core.misprompt import audit
from core.storage import JUDGE_LABELS, DatabaseError
from pages.ui.common import (WEAK_MODEL_NOTE, cached, clear_cache, download_csv_bytes, get_store,
                             guard_writes, md_escape, show_text, source_caption, table, uncached,
                             url_multiselect, url_selectbox)

NEW = "➕ New audit"


def url_text(label: str, key: str, **kwargs) -> str:
    """A text input whose value lives in the URL (?key=value)."""
    wanted = st.query_params.get(key, "")
    value = st.text_input(label, value=wanted, key=f"w_{key}", **kwargs).strip()
    if value and st.query_params.get(key) != value:
        st.query_params[key] = value
    elif not value and key in st.query_params:
        del st.query_params[key]
    return value


def _fmt_bool(value) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "—"
    return "✓ true" if bool(value) else "✗ false"


def _new_audit() -> None:
    runs = cached(audit.auditable_runs)
    if runs.empty:
        st.info("No judged Mis-prompt runs yet. Start one on the Runs page (or `python -m core "
                "run misprompt …`); its verdicts can then be audited here.")
        st.stop()
    ids = list(runs["run_id"])
    desc = {r.run_id: f"{r.run_id} · {r.model} · {r.setting} · {r.mode or 'proactive'} · "
                      f"{r.n_verdicts} verdicts" for r in runs.itertuples()}
    chosen = url_multiselect("Runs to sample verdicts from", ids, key="runs", default=ids,
                             format_func=lambda r: desc.get(r, r))
    c1, c2, c3 = st.columns(3)
    with c1:
        fraction = st.slider("Sample fraction", 0.01, 1.0, audit.DEFAULT_FRACTION, 0.01,
                             key="au_fraction", help="The paper re-labels 10% of responses.")
    with c2:
        seed = int(st.number_input("Seed", 0, 2**31 - 1, 0, 1, key="au_seed"))
    with c3:
        level = st.radio("Strata: model ×", ["primary", "secondary"], horizontal=True,
                         key="au_level", format_func=lambda v: f"{v} category")
    default_name = f"audit-{datetime.now(timezone.utc):%Y%m%d}-s{seed}-{int(fraction * 100)}pct"
    name = st.text_input("Audit name", value=default_name, key="au_name")
    if not chosen:
        st.info("Choose at least one run.")
        st.stop()
    pool = cached(audit.verdict_pool, tuple(chosen), level)
    sizes = audit.stratum_sizes(pool.groupby(["model", "category"]).size().to_dict(), fraction)
    preview = pool.groupby(["model", "category"]).size().rename("verdicts").reset_index()
    preview["sampled"] = [sizes[(m, c)] for m, c in zip(preview["model"], preview["category"])]
    st.caption(f"{int(preview['sampled'].sum())} of {len(pool)} judged responses will be "
               "sampled: round(fraction × stratum size), at least one per stratum. Controls "
               "(error-free questions) form their own category.")
    table(preview, "audit_strata_preview")
    if st.button("Draw sample", type="primary", key="au_draw"):
        try:
            with guard_writes():
                info = audit.create_audit(get_store(), name, chosen, fraction, seed, level)
        except audit.AuditError as exc:
            st.error(md_escape(str(exc)))
            st.stop()
        clear_cache()
        st.session_state.pop("w_audit", None)
        st.query_params["audit"] = info.name
        st.rerun()
    st.stop()


def _goto(key: str, value: int) -> None:
    st.session_state[key] = value


def _save(name: str, annotator: str, row: dict, widget_prefix: str, pos_key: str,
          n_items: int) -> None:
    """Form callback: one transaction for the item's six labels, then the next open item."""
    values = {label: bool(st.session_state[f"{widget_prefix}_{label}"]) for label in JUDGE_LABELS}
    note = st.session_state.get(f"{widget_prefix}_note", "")
    try:
        audit.save_labels(get_store(), row["run_id"], row["item_id"], row["variant"], annotator,
                          values, note=note,
                          judge_values={label: (None if pd.isna(row.get(label))
                                                else bool(row.get(label)))
                                        for label in JUDGE_LABELS})
    except DatabaseError as exc:  # a callback: shown by the page on this rerun
        st.session_state["au_write_error"] = str(exc)
        return
    nxt = audit.next_position(get_store(), name, annotator)
    st.session_state[pos_key] = (nxt if nxt is not None else min(row["position"] + 1,
                                                                 n_items - 1)) + 1
    st.session_state["au_saved"] = f"Saved item {row['position'] + 1} for {annotator}."


def _label_tab(name: str, annotator: str, queue: pd.DataFrame) -> None:
    if not annotator:
        st.info("Type your name above to start labelling (it is saved with every label).")
        return
    n = len(queue)
    prog = uncached(audit.progress, name, annotator)
    st.progress(prog["done"] / max(1, n),
                text=f"{md_escape(annotator)}: {prog['done']} of {n} items fully labelled")
    pos_key = f"au_pos::{name}::{annotator}"
    if pos_key not in st.session_state:  # resume where this annotator stopped
        nxt = uncached(audit.next_position, name, annotator)
        st.session_state[pos_key] = (nxt if nxt is not None else n - 1) + 1
    if st.session_state.pop("au_saved", None):
        st.success("Saved.")
    if st.session_state.get("au_write_error"):
        st.error(st.session_state.pop("au_write_error"))
    nav = st.columns([1, 1, 1.4, 3])
    cur = int(st.session_state[pos_key])
    nav[0].button("◀ Previous", key="au_prev", disabled=cur <= 1,
                  on_click=_goto, args=(pos_key, max(1, cur - 1)))
    nav[1].button("Next ▶", key="au_next", disabled=cur >= n,
                  on_click=_goto, args=(pos_key, min(n, cur + 1)))
    nxt = uncached(audit.next_position, name, annotator)
    nav[2].button("First unlabelled", key="au_first", disabled=nxt is None,
                  on_click=_goto, args=(pos_key, (nxt or 0) + 1))
    with nav[3]:
        st.number_input("Queue position", 1, n, key=pos_key)
    pos = int(st.session_state[pos_key]) - 1
    row = queue.iloc[pos].to_dict()
    if nxt is None:
        st.success(f"{md_escape(annotator)} has labelled every item of this audit. See the "
                   "Results tab.")

    st.markdown(f"#### Item {pos + 1} of {n}")
    if row.get("weak_model"):
        st.warning(WEAK_MODEL_NOTE)
    is_error = row.get("is_error")
    category = (f"{row.get('primary_category')} › {row.get('secondary_category')}"
                if is_error is not False else "error-free control question")
    st.caption(md_escape(f"run {row['run_id']} · model {row.get('model')} · setting "
                         f"{row.get('setting')} · {row.get('mode') or 'proactive'} · item "
                         f"{row['item_id']} · {category}"))
    left, right = st.columns(2)
    with left:
        st.markdown("**Prompt**")
        show_text(row.get("prompt") or "(prompt not found)")
        if is_error is not False:
            show_text(row.get("explanation") or "—", label="What is wrong")
        show_text(row.get("gold") or "—", label="Ground truth")
    with right:
        st.markdown("**Response**")
        show_text(row.get("response") or "(empty)")
    rationales = row.get("rationales")
    if isinstance(rationales, str):
        import json

        rationales = json.loads(rationales)
    rationales = rationales or {}
    saved = uncached(audit.item_labels, row["run_id"], row["item_id"], row["variant"], annotator)
    prefix = f"au_{name}_{annotator}_{pos}"
    with st.form(key=f"au_form_{name}_{annotator}_{pos}"):
        st.markdown("**Your labels** — each starts at the judge's label (or your saved one); "
                    "flip the ones you disagree with.")
        for label in JUDGE_LABELS:
            judge_value = row.get(label)
            start = saved.get(label, bool(judge_value) if judge_value is not None else False)
            c1, c2 = st.columns([1.2, 3])
            with c1:
                st.toggle(label, value=start, key=f"{prefix}_{label}")
            with c2:
                st.caption(f"judge: **{_fmt_bool(judge_value)}** — "
                           f"{md_escape(rationales.get(label) or '—')}")
        st.text_area("Note (optional)", value=saved.get("_note", ""), key=f"{prefix}_note",
                     height=68)
        st.form_submit_button("Save labels", type="primary",
                              on_click=_save, args=(name, annotator, row, prefix, pos_key, n))
    if any(label in saved for label in JUDGE_LABELS):
        differs = [l for l in JUDGE_LABELS if l in saved and row.get(l) is not None
                   and saved[l] != bool(row.get(l))]
        st.caption("Saved. " + (f"You overrode the judge on: {', '.join(differs)}."
                                if differs else "You agreed with the judge on every label."))


def _results_tab(name: str, annotator: str, info: audit.AuditInfo | None) -> None:
    labels = uncached(audit.audit_labels, name)
    if labels.empty:
        st.info("No labels yet. Label a few items in the Label tab.")
        return
    runs = ", ".join(info.runs) if info else ""
    names = sorted(labels["annotator"].unique())
    st.caption(audit.KAPPA_NOTE)
    agreement = audit.agreement_table(labels)

    focus = annotator if annotator in names else names[0]
    st.markdown(f"**Cohen's κ, judge vs {md_escape(focus)}**")
    mine = agreement[agreement["annotator"] == focus].set_index("label")
    cols = st.columns(3) + st.columns(3)
    for col, label in zip(cols, JUDGE_LABELS):
        if label in mine.index:
            r = mine.loc[label]
            kappa = "—" if pd.isna(r["cohen_kappa"]) else f"{r['cohen_kappa']:.2f}"
            col.metric(label, kappa, help=f"n = {int(r['n'])}, disagreement "
                                          f"{r['disagreement_pct']:.1f}%")
        else:
            col.metric(label, "—")
    st.plotly_chart(audit.kappa_figure(agreement), key="au_kappa_chart")
    source_caption(f"audit {name} (runs {runs})", "human_labels vs verdicts")
    table(agreement, f"audit_{name}_agreement")

    st.markdown("**Confusion matrices**")
    who = st.selectbox("Annotator", names, index=names.index(focus), key="au_cm_annotator")
    st.plotly_chart(audit.confusion_figure(audit.confusion_matrices(labels, who), who),
                    key="au_cm_chart")
    source_caption(f"audit {name}", f"labels by {who}")

    st.markdown("**Fleiss' κ across annotators** (the judge not included)")
    if len(names) < 3:
        st.caption(f"Needs three or more annotators who labelled the same items; this audit has "
                   f"{len(names)} ({md_escape(', '.join(names))}).")
    else:
        raters = st.multiselect("Annotators", names, default=names, key="au_fleiss_raters")
        if len(raters) < 3:
            st.caption("Choose at least three annotators.")
        else:
            fleiss = audit.fleiss_table(labels, raters)
            table(fleiss, f"audit_{name}_fleiss")
            source_caption(f"audit {name}", "items labelled by every chosen annotator")

    if len(names) >= 2:
        st.markdown("**Cohen's κ between annotators** (each pair, on the items both labelled)")
        table(audit.pairwise_kappa(labels), f"audit_{name}_pairwise")

    st.markdown("**F1 from human labels beside the judge's** (like the paper's Table 12 vs "
                "Table 6)")
    f1 = uncached(audit.f1_comparison, name)
    table(f1, f"audit_{name}_f1")
    st.caption("Per run: the judge's F1 over the whole run and over the audited items, and F1 "
               "from each annotator's labels (and their majority; a tie counts as false) on the "
               "same items. F1 in percent, SPEC §1; without control items the value is recall.")
    mad = audit.mean_abs_difference(f1)
    if not mad.empty:
        table(mad, f"audit_{name}_mean_abs_diff")
        st.caption("Mean absolute difference between human-label and judge F1 over the six "
                   "labels, on the audited items (the paper reports 5.59 points).")
    source_caption(f"audit {name} (runs {runs})", "core.misprompt.metrics F1")


def _csv_tab(name: str) -> None:
    st.markdown("**Export** one row per (response, annotator, label): run_id, item_id, variant, "
                "annotator, label, value, judge_value, note, created_at.")
    download_csv_bytes(uncached(audit.export_labels_csv, name), f"labels_{name}",
                       "Download labels CSV", key="au_export")
    st.markdown("**Import** labels in the same format (e.g. from a colleague's database). Every "
                "row is checked first; any error (with its line) means nothing is written. A row "
                "replaces a saved label unless the saved one is newer.")
    upload = st.file_uploader("Labels CSV", type=["csv"], key="au_upload")
    if upload is not None and st.button("Import labels", key="au_import"):
        try:
            with guard_writes():
                result = audit.import_labels_csv(get_store(), upload.getvalue())
        except audit.AuditError as exc:
            st.error(md_escape(str(exc).split("\n")[0]))
            show_text("\n".join(str(exc).split("\n")[1:]) or str(exc))
        else:
            clear_cache()
            st.success(f"Imported {result.written} of {result.rows} labels"
                       + (f"; {result.skipped_older} kept because the saved label is newer."
                          if result.skipped_older else "."))


# -- page ---------------------------------------------------------------------------------------

st.title("Judge audit")
st.caption("Can the judge's verdicts be trusted before quoting an F1? Draw a seeded sample of "
           "verdicts (stratified by model and category, 10% by default as in the paper), label "
           "it by hand, and compare: Cohen's κ and confusion matrices per label, Fleiss' κ "
           "between annotators, and the F1 table from human labels beside the judge's (SPEC §1).")

audits = cached(audit.list_audits)
names = list(audits["audit"])
top = st.columns([2, 2])
with top[0]:
    choice = url_selectbox("Audit", names + [NEW], key="audit",
                           default=names[0] if names else NEW)
with top[1]:
    annotator = url_text("Annotator (your name)", key="annotator",
                         placeholder="e.g. ada")

if choice == NEW or choice is None:
    st.subheader("New audit")
    _new_audit()

info = cached(audit.get_audit, choice)
queue = cached(audit.audit_queue, choice)
if queue.empty:
    st.warning(md_escape(f"Audit {choice!r} has no items."))
    st.stop()
if info is not None:
    fraction = "" if pd.isna(info.fraction) else f"{info.fraction:.0%} "
    st.caption(md_escape(f"Audit {choice}: {info.n_sampled} verdicts ({fraction}of "
                         f"{info.n_pool}, seed {info.seed}, strata model × {info.level} "
                         f"category) from runs {', '.join(info.runs)}."))
if queue["weak_model"].fillna(False).astype(bool).any():
    st.warning(WEAK_MODEL_NOTE)

# Lazy tabs (only the open one runs; its name is in the URL as ?au_view=…): saving a label
# does not recompute the results panel, and the results are fresh whenever they are opened.
label_tab, results_tab, csv_tab = st.tabs(["Label", "Results", "Export / import"],
                                          key="au_view", on_change="rerun",
                                          bind="query-params")
if label_tab.open:
    with label_tab:
        _label_tab(choice, annotator, queue)
if results_tab.open:
    with results_tab:
        _results_tab(choice, annotator, info)
if csv_tab.open:
    with csv_tab:
        _csv_tab(choice)
