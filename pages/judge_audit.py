"""Judge audit: draw a seeded sample of verdicts, label it by hand, see how far the judge agrees.

Thin page over core.services.audit (sampling, label storage, statistics, CSV) — SPEC §1 "Human
evaluation". Works for any LLM-judged benchmark with named labels: the labels, their letters and
help texts are the audited benchmark's (its registry entry, through `audit.LabelSet`).
Selections that define a view (audit, runs, annotator) live in the URL.
Label-dependent numbers are read uncached: another session may have just saved labels.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, NoReturn, cast

import pandas as pd
import streamlit as st

from core.ppi import MIN_LABELLED
from core.registry import get as get_benchmark
from core.services import audit
from core.services import judge_trust as jt
from core.stats import MIN_N
from core.store import DatabaseError
from pages.ui.access import allowed, is_annotator, labeller_name, record, refused_text, require
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    clear_cache,
    download,
    download_csv_bytes,
    get_store,
    guard_writes,
    md_escape,
    show_text,
    source_caption,
    table,
    uncached,
    url_multiselect,
    url_select,
    url_selectbox,
)
from pages.ui.formats import readable_table

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


def _fmt_bool(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "—"
    return "✓ true" if bool(value) else "✗ false"


def _new_audit() -> NoReturn:
    runs = cached(audit.auditable_runs)
    if runs.empty:
        kinds = audit.auditable_benchmarks()
        st.info(
            f"No judged {' or '.join(get_benchmark(b).label for b in kinds)} runs yet. Start "
            f"one on the Runs page (or `python -m core run {'|'.join(kinds)} …`); its verdicts "
            "can then be audited here."
        )
        st.stop()
    kinds = list(dict.fromkeys(runs["benchmark"]))
    if len(kinds) > 1:  # one audit samples one benchmark's runs (one set of labels)
        kind = url_selectbox(
            "Benchmark",
            kinds,
            key="au_benchmark",
            format_func=lambda b: get_benchmark(b).label,
        )
        runs = runs[runs["benchmark"] == kind]
    ids = list(runs["run_id"])
    desc = {
        r["run_id"]: f"{r['run_id']} · {r['model']} · {r['setting']} · "
        f"{r['mode'] or 'proactive'} · "
        f"{r['n_verdicts']} verdicts"
        for r in runs.to_dict("records")
    }
    chosen = url_multiselect(
        "Runs to sample verdicts from",
        ids,
        key="runs",
        default=ids,
        format_func=lambda r: desc.get(r, r),
    )
    c1, c2, c3 = st.columns(3)
    with c1:
        fraction = st.slider(
            "Sample fraction",
            0.01,
            1.0,
            audit.DEFAULT_FRACTION,
            0.01,
            key="au_fraction",
            help="The paper re-labels 10% of responses.",
        )
    with c2:
        seed = int(st.number_input("Seed", 0, 2**31 - 1, 0, 1, key="au_seed"))
    with c3:
        level = st.radio(
            "Strata: run ×",
            ["primary", "secondary"],
            horizontal=True,
            key="au_level",
            format_func=lambda v: f"{v} category",
        )
    name = _audit_name(fraction, seed, level)
    taken = uncached(audit.get_audit, name) if name else None
    if taken is not None:
        st.warning(
            md_escape(
                f"An audit named {name!r} already exists: {taken.describe()}. Drawing under "
                "this name is off (it would not draw anything new): choose another name for a "
                "new sample, or open that audit."
            )
        )
        st.button(
            f"Open audit {name}",
            key="au_open_existing",
            on_click=url_select,
            args=("audit", name),
        )
    if not chosen:
        st.info("Choose at least one run.")
        st.stop()
    pool = cached(audit.verdict_pool, tuple(chosen), level)
    strata = ["run_id", "category"]
    sizes = audit.stratum_sizes(pool.groupby(strata).size().to_dict(), fraction)
    preview = pool.groupby([*strata, "model"]).size().rename("verdicts").reset_index()
    preview["sampled"] = [sizes[(r, c)] for r, c in zip(preview["run_id"], preview["category"])]
    st.caption(
        f"{int(preview['sampled'].sum())} of {len(pool)} judged responses will be "
        "sampled: round(fraction × stratum size), at least one per stratum (run × category, so "
        "every run gets its share). Controls (error-free questions) form their own "
        "category."
    )
    table(preview, "audit_strata_preview")
    per_run = preview.groupby("run_id")["sampled"].sum()
    few = per_run[per_run < MIN_N]
    if len(few):  # PPI corrects a run with people's labels on its own sampled items
        st.warning(
            md_escape(
                "Too few items per run for the judge-corrected (PPI) estimates: "
                + ", ".join(f"{r} gets {int(k)}" for r, k in few.items())
                + f'. Below {MIN_N} labelled items a run\'s PPI rows say "n too small"; '
                "raise the sample fraction (or audit fewer runs at once)."
            )
        )
    if st.button("Draw sample", type="primary", key="au_draw", disabled=taken is not None):
        require("draw_audit")
        try:
            with guard_writes():
                info = audit.create_audit(
                    get_store(), name, chosen, fraction, seed, level, exist_ok=False
                )
        except audit.AuditError as exc:  # AuditExists too: drawn meanwhile by another session
            st.error(md_escape(str(exc)))
            st.stop()
        record(
            "draw_audit", info.name, f"runs {', '.join(chosen)}; fraction {fraction}, seed {seed}"
        )
        clear_cache()
        url_select("audit", info.name)  # the URL and the browser's selector
        st.rerun()
    st.stop()


def _audit_name(fraction: float, seed: int, level: str) -> str:
    """The name field: it follows fraction, seed and strata until the person types a name."""
    default = f"audit-{datetime.now(UTC):%Y%m%d}-s{seed}-{round(fraction * 100)}pct" + (
        f"-{level}" if level != "primary" else ""
    )
    if st.session_state.get("au_name") in (None, st.session_state.get("au_name_default")):
        st.session_state["au_name"] = default
    st.session_state["au_name_default"] = default
    return str(st.text_input("Audit name", key="au_name")).strip()


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
    st.session_state[state_key]["values"][label] = value


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
    state = st.session_state[state_key]
    values = state["values"]
    if any(values[l] is None for l in names):
        return
    if not allowed("label"):  # a callback: refused here, said by the page on this rerun
        st.session_state["au_write_error"] = refused_text("label")
        return
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
        return
    st.session_state.pop(f"{state_key}::conflict", None)
    record("label", f"{row['run_id']}/{row['item_id']}/{row['variant']}", ", ".join(names))
    state["loaded"] = {**{l: bool(values[l]) for l in names}, "_note": note.strip()}
    st.session_state["au_saved"] = f"Saved item {row['position'] + 1} for {annotator}."
    st.session_state["au_full_rerun"] = True  # the label form asks the page to rerun
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


def _label_tab(name: str, annotator: str, queue: pd.DataFrame, labels: audit.LabelSet) -> None:
    require("label")
    blind = is_annotator()  # an annotator's queue: no run or model names, no verdict toggle
    if not annotator:
        st.info("Type your name above to start labelling (it is saved with every label).")
        return
    n = len(queue)
    # cached on the store's version: any save (here or elsewhere) makes them fresh
    prog = cached(audit.progress, name, annotator)
    st.progress(
        prog["done"] / max(1, n),
        text=f"{md_escape(annotator)}: {prog['done']} of {n} items fully labelled",
    )
    pos_key = f"au_pos::{name}::{annotator}"
    if pos_key not in st.session_state:  # resume where this annotator stopped
        nxt = cached(audit.next_position, name, annotator)
        st.session_state[pos_key] = (nxt if nxt is not None else n - 1) + 1
    if st.session_state.get("au_write_error"):
        st.error(st.session_state.pop("au_write_error"))
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
    nxt = cached(audit.next_position, name, annotator)
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
    pos = int(st.session_state[pos_key]) - 1
    row = cast("dict[str, Any]", queue.iloc[pos].to_dict())
    if nxt is None:
        st.success(
            f"{md_escape(annotator)} has labelled every item of this audit. See the Results tab."
        )

    st.markdown(f"#### Item {pos + 1} of {n}")
    is_error = row.get("is_error")
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

    _label_form(name, annotator, row, labels, (pos_key, n), show_judge)


@st.fragment
def _label_form(
    name: str,
    annotator: str,
    row: dict[str, Any],
    labels: audit.LabelSet,
    advance: tuple[str, int],
    show_judge: bool,
) -> None:
    """The item's Yes / No buttons, note and Save: a fragment, so a keypress (a label set)
    reruns only this — not the page's audit, queue and progress queries (issue 31, point 9).
    A save reruns the whole page (progress, position)."""
    if st.session_state.pop("au_full_rerun", False):
        st.rerun()
    names = labels.names
    pos_key, n = advance
    saved_msg = st.session_state.pop("au_saved", None)
    state_key, state = _item_state(name, annotator, row, names)
    saved = cached(audit.item_labels, row["run_id"], row["item_id"], row["variant"], annotator)
    done = all(label in saved for label in names)
    reveal = show_judge or done
    rationales = row.get("rationales")
    if isinstance(rationales, str):
        rationales = json.loads(rationales)
    rationales = rationales or {}
    values = state["values"]
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
        c0, c1, c2, c3 = st.columns([1.9, 1, 1.45, 3.6], vertical_alignment="center")
        c0.markdown(f"**{label}**", help=labels.help.get(label))
        value = values[label]
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
                st.caption(f"judge: {_fmt_bool(row.get(label))}")
                st.text(rationales.get(label) or "—")
            elif value is None:
                st.caption("unset")
    st.text_area("Note (optional)", key=f"{state_key}::note", height=68, persist_state="session")
    n_set = sum(values[l] is not None for l in names)
    st.button(
        "Save labels",
        key="au_save",
        type="primary",
        shortcut="S",
        disabled=n_set < len(names),
        on_click=_save,
        args=(annotator, row, state_key, names, None, (pos_key, n)),
    )
    if n_set < len(names):
        st.caption(f"{n_set} of {len(names)} labels set: answer all {len(names)} to save.")
    _show_conflict(annotator, row, state_key, names, (pos_key, n))
    if saved_msg:
        st.success(saved_msg)
    conflict = st.session_state.get(f"{state_key}::conflict")
    if done and not conflict:  # never "Saved." beside the conflict's "Not saved"
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


def _masked(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """κ values resting on fewer than MIN_N items blanked (n and the flag stay visible)."""
    out = frame.copy()
    if "n_too_small" in out:
        out.loc[out["n_too_small"].astype(bool), columns] = float("nan")
    return out


def _fmt_kappa(value: Any) -> str:
    """A κ or CI bound for reading: two decimals ("0.00", never "-0.00" or the bootstrap's
    0.0000000000000002), "—" when there is none (never "None" or "nan")."""
    if value is None or pd.isna(value):
        return "—"
    text = f"{float(value):.2f}"
    return "0.00" if text == "-0.00" else text


def _kappa_table(frame: pd.DataFrame, columns: list[str], name: str) -> None:
    """κ table: masked below MIN_N, shown rounded (as text, "—" when blank); the CSV keeps
    the unrounded numbers."""
    masked = _masked(frame, columns)
    shown = masked.copy()
    for col in columns:
        shown[col] = [_fmt_kappa(v) for v in masked[col]]
    if "disagreement_pct" in shown:
        shown["disagreement_pct"] = shown["disagreement_pct"].astype(float).round(1)
    st.dataframe(shown, width="stretch", hide_index=True)
    download(masked, name)


def _results_tab(
    name: str, annotator: str, info: audit.AuditInfo | None, label_set: audit.LabelSet
) -> None:
    label_names = label_set.names
    labels = uncached(audit.audit_labels, name)
    if labels.empty:
        st.info("No labels yet. Label a few items in the Label tab.")
        return
    runs = ", ".join(info.runs) if info else ""
    names = sorted(labels["annotator"].unique())
    st.caption(
        audit.KAPPA_NOTE + f" Every κ is given with its n (items) and a 95% percentile "
        f"bootstrap CI ({audit.BOOTSTRAP_DRAWS} resamples of the items, seed "
        f'{audit.BOOTSTRAP_SEED}); below n = {audit.MIN_N} it reads "n too small".'
    )
    agreement = audit.agreement_table(labels, names=label_names)
    kappa_cols = ["cohen_kappa", "ci_low", "ci_high"]

    focus = annotator if annotator in names else names[0]
    st.markdown(f"**Cohen's κ, judge vs {md_escape(focus)}**")
    mine = agreement[agreement["annotator"] == focus].set_index("label")
    cols = [c for _ in range(0, len(label_names), 3) for c in st.columns(3)]
    for col, label in zip(cols, label_names):
        with col:
            if label not in mine.index:
                st.metric(label, "—")
                st.caption("n = 0")
                continue
            r = mine.loc[[label]].iloc[0]
            est = audit.KappaEstimate(
                float(r["cohen_kappa"]), int(r["n"]), float(r["ci_low"]), float(r["ci_high"])
            )
            help_text = f"disagreement {r['disagreement_pct']:.1f}% on {est.n} items"
            if not est.reliable:
                st.metric(label, "n too small", help=help_text)
                st.caption(f"n = {est.n} (κ needs ≥ {audit.MIN_N} items)")
            else:
                st.metric(label, _fmt_kappa(est.kappa), help=help_text)
                st.caption(
                    f"n = {est.n} · 95% CI [{_fmt_kappa(est.ci_low)}, {_fmt_kappa(est.ci_high)}]"
                )
    st.plotly_chart(audit.kappa_figure(agreement, names=label_names), key="au_kappa_chart")
    source_caption(f"audit {name} (runs {runs})", "human_labels vs verdicts")
    judged_by = uncached(audit.judgings_of_audit, tuple(info.runs) if info else ())
    if len(judged_by):
        st.caption(
            md_escape(
                "Judge labels compared: "
                + "; ".join(
                    f"{r['run_id']} — judging {r['judging']} ({r['judge_model']}, {r['template_id'] or 'template ?'})"
                    for r in judged_by.to_dict("records")
                )
                + ". Each run's latest finished judging; `python -m core rescore` adds others."
            )
        )
    _kappa_table(agreement, kappa_cols, f"audit_{name}_agreement")

    st.markdown("**Confusion matrices**")
    who = st.selectbox("Annotator", names, index=names.index(focus), key="au_cm_annotator")
    st.plotly_chart(
        audit.confusion_figure(audit.confusion_matrices(labels, who, names=label_names), who),
        key="au_cm_chart",
    )
    source_caption(f"audit {name}", f"labels by {who}")

    st.markdown("**Fleiss' κ across annotators** (the judge not included)")
    if len(names) < 3:
        st.caption(
            f"Needs three or more annotators who labelled the same items; this audit has "
            f"{len(names)} ({md_escape(', '.join(names))})."
        )
    else:
        raters = st.multiselect("Annotators", names, default=names, key="au_fleiss_raters")
        if len(raters) < 3:
            st.caption("Choose at least three annotators.")
        else:
            fleiss = audit.fleiss_table(labels, raters, names=label_names)
            _kappa_table(fleiss, ["fleiss_kappa", "ci_low", "ci_high"], f"audit_{name}_fleiss")
            source_caption(f"audit {name}", "items labelled by every chosen annotator")

    if len(names) >= 2:
        st.markdown("**Cohen's κ between annotators** (each pair, on the items both labelled)")
        _kappa_table(
            audit.pairwise_kappa(labels, names=label_names), kappa_cols, f"audit_{name}_pairwise"
        )

    st.markdown(
        "**F1 from human labels beside the judge's** (like the paper's Table 12 vs Table 6)"
    )
    f1 = uncached(audit.f1_comparison, name)
    readable_table(f1, f"audit_{name}_f1", digits=1)  # 85.7 (the CSV keeps 85.714285…)
    st.caption(
        "Per run: the judge's F1 over the whole run (context), then pairs on identical "
        "items — the judge and each annotator on exactly the items that annotator "
        f"labelled (all {len(label_names)} labels), and the judge and the annotators' majority (a tie "
        "counts as false) on the items two or more of them labelled; `n` = items. F1 in "
        "percent (erroneous items give TP/FN, controls FP); without control items the value "
        "is recall."
    )
    mad = audit.mean_abs_difference(f1, names=label_names)
    if not mad.empty:
        readable_table(mad, f"audit_{name}_mean_abs_diff", digits=2)
        st.caption(
            "Mean absolute difference between the human-label and the judge F1 over the "
            f"{len(label_names)} labels, each pair on the same n items (the paper reports 5.59 points)."
        )
    source_caption(
        f"audit {name} (runs {runs})",
        f"{get_benchmark(label_set.benchmark).label} F1 (its metrics)",
    )
    _ppi_section(name, info)


def _ppi_shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The PPI table for reading: rates and F1 in percent with their interval, n's, λ; rows on
    fewer than MIN_N people's labels keep their numbers but say so."""
    return pd.DataFrame(
        {
            "label": frame["label"],
            "metric": frame["metric"].map({"rate": "rate", "f1": "F1"}),
            "judge only": [f"{v * 100:.1f}%" if pd.notna(v) else "—" for v in frame["judge_only"]],
            "people only": [f"{v * 100:.1f}%" if pd.notna(v) else "—" for v in frame["human_only"]],
            "PPI [95% CI]": [
                jt.interval_text(v, lo, hi)
                for v, lo, hi in zip(frame["ppi"], frame["ci_low"], frame["ci_high"])
            ],
            "F1 bootstrap 95% CI": [
                jt.interval_text(v, lo, hi) if pd.notna(lo) else "—"
                for v, lo, hi in zip(frame["ppi"], frame["boot_ci_low"], frame["boot_ci_high"])
            ],
            "n_human": frame["n_human"],
            "n_judge": frame["n_judge"],
            "effective n": [f"{v:.0f}" if pd.notna(v) else "—" for v in frame["n_effective"]],
            "λ": frame["lam"].round(2),
            "note": ["n too small" if small else "" for small in frame["n_too_small"]],
        }
    )


def _ppi_section(name: str, info: audit.AuditInfo | None) -> None:
    """Judge-only vs prediction-powered estimates per run, with the judging's self-agreement
    (rescore --repeat) and the same-family flag (issue 18, point 4)."""
    st.markdown("**Judge-corrected estimates** (prediction-powered inference, PPI++)")
    runs = info.runs if info else []
    if not runs:
        st.caption("This audit has no runs.")
        return
    run_id = st.selectbox("Run", runs, key="au_ppi_run") if len(runs) > 1 else runs[0]
    try:
        frame = uncached(jt.run_ppi, run_id, name)
        changes = uncached(jt.verdict_changes, run_id)
        flags = uncached(jt.family_flags, (run_id,))
    except audit.AuditError as exc:
        st.warning(md_escape(str(exc)))
        return
    flag = flags.iloc[0]
    if flag["same_family"]:
        st.warning(
            md_escape(
                f"Same model family: {flag['model']} is judged by {flag['judge_model']} (both "
                f"{flag['same_family']}). A judge may favour its own family's answers; the "
                "people's labels below are the check."
            )
        )
    if len(frame) and bool(frame["few_labels"].any()):
        st.warning(
            f"Fewer than {MIN_LABELLED} people's labels "
            f"({int(frame['n_human'].min())} on some rows): the PPI intervals are rough; the "
            "F1 bootstrap interval is the one to read, and more labels would narrow both."
        )
    st.dataframe(_ppi_shown(frame), width="stretch", hide_index=True)
    download(frame, f"audit_{name}_ppi_{run_id}")
    st.caption(
        "Judge only: the judging's number over all n_judge responses. People only: the "
        "annotators' majority on the n_human responses they labelled. PPI: the judge's number "
        "corrected by the people's labels (Angelopoulos et al. 2023; λ tuned as in PPI++: 0 = "
        "people alone, 1 = plain PPI), with its 95% interval; F1's by the delta method on the "
        "TP and FP rates; F1 bootstrap: percentiles of the whole estimator redrawn (labelled and "
        "unlabelled responses resampled apart, λ re-tuned each draw). Effective n: how many "
        "people's labels alone would give an interval "
        f'this narrow. Below n = {MIN_N} people\'s labels a row says "n too small". '
        "`python -m core audit ppi` prints the same table."
    )
    st.markdown("**The judge judged again** (share of verdicts that change)")
    if changes.empty:
        st.caption(md_escape(f"{run_id}: {jt.NOT_MEASURED}."))
    else:
        table(changes, f"audit_{name}_rejudged_{run_id}")
        st.caption(
            "Per label: the share of responses whose verdict is not the same in every one "
            "of the k judgings (the judging and its `@rK` repeats), with n and a Wilson 95% "
            "interval."
        )
    source_caption(
        f"audit {name}, run {run_id}, judging {flag['judging']}", "human_labels vs results"
    )


def _csv_tab(name: str) -> None:
    st.markdown(
        "**Export** one row per (response, annotator, label): run_id, item_id, variant, "
        "annotator, label, value, judge_value, note, created_at."
    )
    download_csv_bytes(
        uncached(audit.export_labels_csv, name),
        f"labels_{name}",
        "Download labels CSV",
        key="au_export",
    )
    st.markdown(
        "**Import** labels in the same format (e.g. from a colleague's database). Every "
        "row is checked first; any error (with its line) means nothing is written. A row "
        "replaces a saved label unless the saved one is newer."
    )
    if not allowed("import_labels"):
        st.caption(refused_text("import_labels"))
        return
    upload = st.file_uploader("Labels CSV", type=["csv"], key="au_upload")
    if upload is not None and st.button("Import labels", key="au_import"):
        require("import_labels")
        try:
            with guard_writes():
                result = audit.import_labels_csv(get_store(), upload.getvalue())
        except audit.AuditError as exc:
            st.error(md_escape(str(exc).split("\n")[0]))
            show_text("\n".join(str(exc).split("\n")[1:]) or str(exc))
        else:
            record("import_labels", name, f"{result.written} of {result.rows} labels")
            clear_cache()
            st.success(
                f"Imported {result.written} of {result.rows} labels"
                + (
                    f"; {result.skipped_older} kept because the saved label is newer."
                    if result.skipped_older
                    else "."
                )
            )


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
    _new_audit()

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
        _label_tab(choice, annotator, queue, label_set)
if "Results" in tabs and tabs["Results"].open:
    with tabs["Results"]:
        require("audit_results")
        _results_tab(choice, annotator, info, label_set)
if "Export / import" in tabs and tabs["Export / import"].open:
    with tabs["Export / import"]:
        require("audit_results")
        _csv_tab(choice)
