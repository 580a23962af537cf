"""Playground, one exchange on screen: the ground truth beside both answers, the LLM judge's
verdicts, and a person's labels per answer (saved as human labels of the playground run).
Items, answers and rationales are untrusted text: shown with st.text / st.code, never Markdown."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from core import registry
from core.engine.endpoints import Endpoint
from core.engine.results import Result
from core.services import playground as pg
from pages.ui.access import allowed, labeller_name, record, refused_text, require
from pages.ui.common import (
    clear_cache,
    get_store,
    md_escape,
    source_caption,
    table,
    uncached,
)

MODE_TITLES = {
    "proactive": "Proactive — the prompt as is",
    "passive": "Passive — with the error-handling instruction",
}


def plain(text: str | None, empty: str = "—") -> None:
    """Untrusted text (items, answers, rationales) as plain text, never Markdown."""
    st.text(text if text not in (None, "") else empty)


def answer_text(text: str) -> None:
    """An answer, collapsed when long or repetitive (full text in an expander)."""
    if not text:
        st.caption("(empty answer)")
        return
    shown = pg.collapse_text(text)
    st.text(shown.preview)
    if shown.hidden:
        with st.expander(f"Full answer ({len(text):,} characters)"):
            st.text(text)


def badges(ex: pg.Exchange, result: Result | None) -> None:
    if result is None:
        st.caption("No LLM verdict.")
        return
    if not result.ok:
        st.warning("The judge gave no usable verdict.")
        plain(result.error, "unknown error")
        if result.raw:
            with st.expander("Raw judge output"):
                st.code(result.raw, wrap_lines=True, language=None)
        return
    badges = pg.verdict_badges(ex, result)
    weak = pg.judge_is_weak(ex)
    if weak:  # on the verdict itself, not only in the page's notice far above
        st.warning(
            md_escape(
                f"Weak judge ({ex.judge_endpoint.get('model') or ex.judge_endpoint.get('name')}): "
                "a tiny model that marks most labels true and repeats the prompt as its "
                "rationale. These labels show the mechanics, not a judgement: label the "
                "answers yourself or choose a capable judge endpoint."
            )
        )
    yes = "orange" if weak else "green"  # no confident green chips from a weak judge
    line = " ".join(
        f":{yes if value else 'gray'}-badge[{'✓' if value else '✗'} {label}]"
        for label, value, _ in badges
    )
    st.markdown(line)
    warning = pg.verdict_warning(ex, result)
    if warning:
        st.caption(md_escape(warning))
    with st.expander("Rationales"):
        for label, value, why in badges:
            st.caption(f"{label} ({'yes' if value else 'no'})")
            plain(why)
    with st.expander("Raw judge output"):
        st.code(result.raw or "", wrap_lines=True, language=None)


def show_problems(problems: list[pg.EndpointProblem]) -> None:
    for problem in problems:
        st.error(md_escape(problem.title))
        st.markdown("**How to configure an endpoint**\n\n" + (problem.help or pg.configure_help()))


def ground_truth(item: dict[str, Any]) -> None:
    st.markdown("##### Prompt and ground truth")
    plain(item.get("prompt"))
    if item.get("is_error", True):
        category = " › ".join(
            c for c in (item.get("primary_category"), item.get("secondary_category")) if c
        )
        if category:
            st.caption(category)
        st.markdown("**What is wrong**")
        plain(item.get("explanation"))
    else:
        st.caption("Error-free control question: the right answer notices nothing wrong.")
    st.markdown("**Ground truth**")
    plain(item.get("gold"))


def url_text(label: str, key: str, **kwargs: Any) -> str:
    """A text input whose value lives in the URL (?key=value)."""
    value = st.text_input(
        label, value=st.query_params.get(key, ""), key=f"w_{key}", **kwargs
    ).strip()
    if value and st.query_params.get(key) != value:
        st.query_params[key] = value
    elif not value and key in st.query_params:
        del st.query_params[key]
    return value


YES, NO = "Yes", "No"  # the audit's answers; no choice = not decided


def _person_key(run_id: str, mode: str, label: str) -> str:
    return f"pg_h_{run_id}_{mode}_{label}"


def _person_label(run_id: str, mode: str, label: str, saved: bool | None, help: str | None) -> bool:
    """One label as Yes / No with an explicit undecided state (nothing chosen, said in words);
    True once decided."""
    choice = st.segmented_control(
        label,
        [YES, NO],
        default=None if saved is None else (YES if saved else NO),
        key=_person_key(run_id, mode, label),
        help=help,
    )
    if choice is None:
        st.caption("not decided")
    return choice is not None


def _save_person(run_id: str, annotator: str, modes: list[str], names: tuple[str, ...]) -> None:
    chosen = {
        mode: {l: st.session_state.get(_person_key(run_id, mode, l)) for l in names}
        for mode in modes
    }
    if any(v not in (YES, NO) for values in chosen.values() for v in values.values()):
        st.session_state["pg_person_msg"] = ("error", "Decide every label (Yes or No) first.")
        return
    labels = {mode: {l: v == YES for l, v in values.items()} for mode, values in chosen.items()}
    if not allowed("playground"):
        st.session_state["pg_person_msg"] = ("error", refused_text("playground"))
        return
    try:
        n = pg.save_human_labels(get_store(), run_id, annotator, labels)
    except ValueError as exc:
        st.session_state["pg_person_msg"] = ("error", str(exc))
    else:
        st.session_state["pg_person_msg"] = (
            "ok",
            f"Saved {n} labels by {annotator} as human labels of {run_id}.",
        )
        record("label", run_id, f"{n} playground labels")


def _annotator_field() -> str:
    """Under login the signed-in identity (never a typed name); else the name typed (URL)."""
    signed_in = labeller_name()
    if signed_in is not None:
        st.caption(md_escape(f"Labelling as {signed_in}"))
        return signed_in
    return url_text("Your name (saved with your labels)", key="annotator", placeholder="e.g. ada")


def _judge_now(ex: pg.Exchange, judge_name: str, judge_ep: Endpoint) -> None:
    """'Judge later' → now: the LLM judges the saved answers, with a running timer."""
    if not st.button(
        f"Judge now with the LLM judge ({judge_name})",
        key="pg_judge_now",
        help="Uses the judge endpoint chosen above.",
    ):
        return
    require("playground")
    status = st.empty()

    def tick(_phase: str, elapsed: float) -> None:
        status.info(f"The judge ({judge_name}) is labelling both answers … {elapsed:.0f} s")

    judged = pg.judge_exchange(get_store(), ex.run_id, judge_ep, on_tick=tick)
    status.empty()
    if judged is not None and judged.problems:
        show_problems(judged.problems)
        return
    clear_cache()
    st.rerun()


def show_exchange(ex: pg.Exchange, judge_name: str, judge_ep: Endpoint) -> None:
    """A finished (or reopened) exchange: the ground truth beside both answers, the LLM's
    verdicts if any, and the person's labels per answer when a person judges."""
    bench = registry.get(ex.benchmark)
    names = pg.label_names(bench)
    st.caption(md_escape(" · ".join(_meta(ex))))
    show_problems(ex.problems)
    answered = [m for m in pg.MODES if ex.sides.get(m) and ex.sides[m].status == "ok"]
    top = st.columns([1, 2], vertical_alignment="bottom")
    with top[0]:
        person = st.toggle(
            "I judge this exchange myself",
            value=ex.judging == "human",
            key=f"pg_person_{ex.run_id}",
            disabled=not answered,
            help="Label both answers with the ground truth beside them; saved "
            "as human labels of this playground run.",
        )
    annotator = ""
    saved = pd.DataFrame()
    if person:
        with top[1]:
            annotator = _annotator_field()
        if annotator:
            saved = uncached(pg.human_labels, ex.run_id, annotator)
    mine = (
        {(str(r.variant), str(r.label)): bool(r.value) for r in saved.itertuples()}
        if len(saved)
        else {}
    )
    decided = 0
    cols = st.columns([1, 1.25, 1.25])
    with cols[0]:
        ground_truth(ex.item)
    for col, mode in zip(cols[1:], pg.MODES):
        with col:
            decided += _side(ex, mode, person, mine)
    if person:
        _person_save(ex, annotator, answered, names, decided)
    if answered and not ex.judged:
        _judge_now(ex, judge_name, judge_ep)
    source_caption(
        f"playground run `{ex.run_id}`" if ex.saved else "unsaved exchange",
        f"templates {ex.template_id}",
    )


def _meta(ex: pg.Exchange) -> list[str]:
    """Setting, model, judge, temperature and max tokens of the exchange, for its caption."""
    judge = (
        f"judge {ex.judge_endpoint.get('name')} ({ex.judge_endpoint.get('model')})"
        if ex.judge_endpoint.get("name")
        else "no LLM judge yet"
    )
    return [
        f"setting {ex.setting}",
        f"model {ex.model_endpoint.get('name')} ({ex.model_endpoint.get('model')})",
        judge,
        f"temperature {ex.temperature:g}",
        f"max tokens {ex.max_tokens}",
    ]


def _side(ex: pg.Exchange, mode: str, person: bool, mine: dict[tuple[str, str], bool]) -> int:
    """One mode's answer, the messages sent, the LLM's verdict and (a person judging) the
    person's Yes / No per label; returns how many of those labels are decided."""
    side = ex.sides.get(mode)
    st.markdown(f"##### {MODE_TITLES[mode]}")
    if side is None:
        st.caption("Not sent.")
        return 0
    if side.status == "ok":
        with st.container(border=True):
            answer_text(side.response)
        st.caption(
            f"{side.completion_tokens or 0} tokens · "
            f"{(side.latency_ms or 0) / 1000:.2f} s" + (" · from cache" if side.cached else "")
        )
    else:
        st.error("No answer.")
        plain(side.error)
    with st.expander("Messages sent"):
        st.json(side.messages)
    if ex.judged or not person:
        st.markdown("**LLM judge's verdict**")
        badges(ex, side.result)
    if not (person and side.status == "ok"):
        return 0
    bench = registry.get(ex.benchmark)
    label_help = pg.role_of(bench).label_help
    st.markdown("**Your labels** — Yes or No for each")
    return sum(
        _person_label(ex.run_id, mode, label, mine.get((mode, label)), label_help.get(label))
        for label in pg.label_names(bench)
    )


def _person_save(
    ex: pg.Exchange, annotator: str, answered: list[str], names: tuple[str, ...], decided: int
) -> None:
    """Save my labels (once every label of every answer is decided), its message, and the
    human labels saved for this exchange so far."""
    total = len(names) * len(answered)
    st.button(
        "Save my labels",
        type="primary",
        key="pg_save_labels",
        disabled=not annotator or not answered or decided < total,
        on_click=_save_person,
        args=(ex.run_id, annotator, answered, names),
    )
    if decided < total:
        st.caption(f"{decided} of {total} labels decided: decide all {total} to save.")
    if not annotator:
        st.caption("Type your name to save your labels.")
    msg = st.session_state.pop("pg_person_msg", None)
    if msg:
        (st.success if msg[0] == "ok" else st.error)(msg[1])
    everyone = uncached(pg.human_labels, ex.run_id)
    if not everyone.empty:
        st.markdown("**Human labels of this exchange**")
        wide = everyone.pivot_table(
            index=["annotator", "variant"], columns="label", values="value", aggfunc="first"
        ).reset_index()
        wide.columns.name = None
        table(
            wide[["annotator", "variant", *[l for l in names if l in wide]]],
            f"labels_{ex.run_id}",
        )
