"""Playground: one erroneous prompt, proactive vs passive side by side, streamed, then judged.

Thin page: items, saved exchanges and the exchange itself (streaming both modes concurrently,
judging, saving, human labels) come from core.services.playground, for the benchmark the
registry offers a playground for (?pg_benchmark= picks one when several do). The page wires
widgets, the two streaming placeholders, the judging timer and the labels.
Results appear right under the Send button; the exchange shown is ?exchange= in the URL. With a
weak judge endpoint the person judges by default. Items, answers and rationales are untrusted
text: shown with st.text / st.code, never as Markdown.
"""

from __future__ import annotations

import os
import time
from typing import Any, cast

import pandas as pd
import streamlit as st

from core import registry
from core.engine.endpoints import Endpoint, EndpointError, is_weak, load_endpoints, local_endpoint
from core.engine.results import Result
from core.registry import Benchmark
from core.services import playground as pg
from pages.ui.access import allowed, labeller_name, record, refused_text, require
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    clear_cache,
    get_store,
    guard_writes,
    md_escape,
    source_caption,
    table,
    uncached,
    url_radio,
    url_select,
    url_selectbox,
)

MODE_TITLES = {
    "proactive": "Proactive — the prompt as is",
    "passive": "Passive — with the error-handling instruction",
}
SOURCES = ("Example from the loaded items", "Type my own")


def _secrets_to_env(endpoints: dict[str, Endpoint]) -> None:
    """API keys may live in .streamlit/secrets.toml under the variable's name (never shown)."""
    names = {e.api_key_env for e in endpoints.values() if e.api_key_env}
    if not names:
        return
    try:
        secrets = dict(st.secrets)
    except Exception:  # no secrets file: nothing to copy
        return
    for name in names:
        if not os.environ.get(name) and isinstance(secrets.get(name), str):
            os.environ[name] = secrets[name]


def _endpoints() -> dict[str, Endpoint]:
    try:
        endpoints = load_endpoints()
    except EndpointError as exc:
        st.error(md_escape(f"The endpoints file could not be read: {exc}"))
        st.markdown(pg.configure_help())
        endpoints = {"local": local_endpoint()}
    _secrets_to_env(endpoints)
    return endpoints


JUDGING_TITLES = {
    "human": "Me — I label both answers (ground truth shown)",
    "llm": "The LLM judge, now",
    "later": "The LLM judge, later",
}


def _plain(text: str | None, empty: str = "—") -> None:
    """Untrusted text (items, answers, rationales) as plain text, never Markdown."""
    st.text(text if text not in (None, "") else empty)


def _answer_text(text: str) -> None:
    """An answer, collapsed when long or repetitive (full text in an expander)."""
    if not text:
        st.caption("(empty answer)")
        return
    shown = pg.collapse_text(text)
    st.text(shown.preview)
    if shown.hidden:
        with st.expander(f"Full answer ({len(text):,} characters)"):
            st.text(text)


def _badges(ex: pg.Exchange, result: Result | None) -> None:
    if result is None:
        st.caption("No LLM verdict.")
        return
    if not result.ok:
        st.warning("The judge gave no usable verdict.")
        _plain(result.error, "unknown error")
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
            _plain(why)
    with st.expander("Raw judge output"):
        st.code(result.raw or "", wrap_lines=True, language=None)


def _show_problems(problems: list[pg.EndpointProblem]) -> None:
    for problem in problems:
        st.error(md_escape(problem.title))
        st.markdown("**How to configure an endpoint**\n\n" + (problem.help or pg.configure_help()))


def _ground_truth(item: dict[str, Any]) -> None:
    st.markdown("##### Prompt and ground truth")
    _plain(item.get("prompt"))
    if item.get("is_error", True):
        category = " › ".join(
            c for c in (item.get("primary_category"), item.get("secondary_category")) if c
        )
        if category:
            st.caption(category)
        st.markdown("**What is wrong**")
        _plain(item.get("explanation"))
    else:
        st.caption("Error-free control question: the right answer notices nothing wrong.")
    st.markdown("**Ground truth**")
    _plain(item.get("gold"))


def _url_text(label: str, key: str, **kwargs: Any) -> str:
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
    return _url_text("Your name (saved with your labels)", key="annotator", placeholder="e.g. ada")


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
        _show_problems(judged.problems)
        return
    clear_cache()
    st.rerun()


def _show_exchange(ex: pg.Exchange, judge_name: str, judge_ep: Endpoint) -> None:
    """A finished (or reopened) exchange: the ground truth beside both answers, the LLM's
    verdicts if any, and the person's labels per answer when a person judges."""
    item = ex.item
    bench = registry.get(ex.benchmark)
    names, label_help = pg.label_names(bench), pg.role_of(bench).label_help
    judge = (
        f"judge {ex.judge_endpoint.get('name')} ({ex.judge_endpoint.get('model')})"
        if ex.judge_endpoint.get("name")
        else "no LLM judge yet"
    )
    meta = [
        f"setting {ex.setting}",
        f"model {ex.model_endpoint.get('name')} ({ex.model_endpoint.get('model')})",
        judge,
        f"temperature {ex.temperature:g}",
        f"max tokens {ex.max_tokens}",
    ]
    st.caption(md_escape(" · ".join(meta)))
    _show_problems(ex.problems)
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
    mine = {(r.variant, r.label): bool(r.value) for r in saved.itertuples()} if len(saved) else {}
    decided = 0
    cols = st.columns([1, 1.25, 1.25])
    with cols[0]:
        _ground_truth(item)
    for col, mode in zip(cols[1:], pg.MODES):
        side = ex.sides.get(mode)
        with col:
            st.markdown(f"##### {MODE_TITLES[mode]}")
            if side is None:
                st.caption("Not sent.")
                continue
            if side.status == "ok":
                with st.container(border=True):
                    _answer_text(side.response)
                st.caption(
                    f"{side.completion_tokens or 0} tokens · "
                    f"{(side.latency_ms or 0) / 1000:.2f} s"
                    + (" · from cache" if side.cached else "")
                )
            else:
                st.error("No answer.")
                _plain(side.error)
            with st.expander("Messages sent"):
                st.json(side.messages)
            if ex.judged or not person:
                st.markdown("**LLM judge's verdict**")
                _badges(ex, side.result)
            if person and side.status == "ok":
                st.markdown("**Your labels** — Yes or No for each")
                for label in names:
                    decided += _person_label(
                        ex.run_id, mode, label, mine.get((mode, label)), label_help.get(label)
                    )
    if person:
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
    if answered and not ex.judged:
        _judge_now(ex, judge_name, judge_ep)
    source_caption(
        f"playground run `{ex.run_id}`" if ex.saved else "unsaved exchange",
        f"templates {ex.template_id}",
    )


# -- page ---------------------------------------------------------------------------------------

st.title("Playground")
st.caption(
    "Does a model notice a flawed question on its own? Send one prompt **proactive** (as "
    "is) and **passive** (with an explicit instruction to check it for errors) side by "
    "side, watch both answers stream in, then judge both — yourself, with the ground "
    "truth beside the answers, or with the LLM judge (six yes/no labels)."
)

store = get_store()
endpoints = _endpoints()
names = sorted(endpoints, key=lambda n: (n != "local", n))
offered = pg.playground_benchmarks()
if not offered:
    st.info("No registered benchmark offers a playground.")
    st.stop()
bench: Benchmark = offered[0]
if len(offered) > 1:  # one select box only when there is a choice
    labels_of = {b.name: b.label for b in offered}
    chosen_bench = url_selectbox(
        "Benchmark", list(labels_of), key="pg_benchmark", format_func=labels_of.__getitem__
    )
    bench = pg.playground_benchmark(chosen_bench)
else:
    bench = pg.playground_benchmark(st.query_params.get("pg_benchmark"))
role = pg.role_of(bench)

source = url_radio("Prompt", SOURCES, key="pg_src", horizontal=True)
item: dict[str, Any] | None = None
if source == SOURCES[0]:
    items = cached(pg.example_items, bench.name)
    if items.empty:
        st.info(
            f"No {bench.label} items are loaded. Run `python -m core init` (loads the shipped "
            "sample) or import a file on the Import page — or type your own prompt."
        )
    else:
        c1, c2 = st.columns(2)
        with c1:
            primaries = sorted(
                items["primary_category"].unique(), key=lambda c: (c == "(control)", c)
            )  # controls last
            primary = url_selectbox("Primary category", primaries, key="pg_primary")
        sub = items[items["primary_category"] == primary]
        with c2:
            secondary = url_selectbox(
                "Secondary category", sorted(sub["secondary_category"].unique()), key="pg_secondary"
            )
        sub = sub[sub["secondary_category"] == secondary]
        keys = [f"{r['item_set']}/{r['item_id']}" for r in sub.to_dict("records")]
        prompts_by_key = {k: p for k, p in zip(keys, sub["prompt"])}
        chosen = url_selectbox(
            "Example prompt", keys, key="pg_item", format_func=lambda k: prompts_by_key.get(k, k)
        )
        row = sub.iloc[keys.index(chosen) if chosen in keys else 0].to_dict()
        item = pg.item_from_row(cast("dict[str, Any]", row))
        with st.container(border=True):
            _plain(item["prompt"])
            if item["is_error"]:
                st.caption(
                    md_escape(
                        f"{row['primary_category']} › {row['secondary_category']} "
                        f"· item {row['item_id']} of {row['item_set']}"
                    )
                )
                st.markdown("**What is wrong**")
                _plain(item.get("explanation"))
            else:
                st.caption(md_escape(f"Error-free control question · item {row['item_id']}"))
            st.markdown("**Ground truth**")
            _plain(item.get("gold"))
else:
    typed = st.text_area(
        "Your prompt",
        key="pg_prompt",
        height=100,
        placeholder="e.g. Wich composser wrote the Eroica?",
    )
    gold = st.text_area(
        "Ground truth (optional: shown beside the answers, helps the judge)",
        key="pg_gold",
        height=80,
    )
    control = st.checkbox("This prompt contains no error (a control question)", key="pg_control")
    if typed.strip():
        item = pg.custom_item(typed, gold=gold, is_error=not control)

c1, c2, c3, c4, c5 = st.columns([2, 2, 1.4, 1.2, 1.2])
with c1:
    model_name = url_selectbox("Model endpoint", names, key="pg_model", default="local") or "local"
with c2:
    judge_name = url_selectbox("Judge endpoint", names, key="pg_judge", default="local") or "local"
with c3:
    setting = url_selectbox(
        role.setting_label, list(role.settings), key="pg_setting", default=role.default_setting
    )
with c4:
    temperature = st.slider("Temperature", 0.0, 1.5, 0.0, 0.1, key="pg_temperature")
with c5:
    max_tokens = st.number_input(
        "Max tokens", 16, 4096, pg.DEFAULT_MAX_TOKENS, 16, key="pg_max_tokens"
    )
judge_template = url_selectbox(
    "Judge template",
    role.judge_templates(),
    key="pg_judge_template",
    default=role.default_judge_template,
    help=role.judge_template_help or None,
)
model_ep, judge_ep = endpoints[model_name], endpoints[judge_name]
if st.session_state.get("pg_judge_seen") not in (None, judge_name):
    # Another judge endpoint: who judges goes back to its default (a person for a weak judge).
    st.session_state.pop("w_pg_judging", None)
    st.query_params.pop("pg_judging", None)
st.session_state["pg_judge_seen"] = judge_name
judging = url_radio(
    "Who judges the answers",
    list(pg.JUDGINGS),
    key="pg_judging",
    default=pg.default_judging(judge_ep),
    horizontal=True,
    format_func=lambda j: JUDGING_TITLES[j],
    help="A weak judge (the shipped SmolLM2) marks every label true and repeats "
    "the prompt as its rationale, so by default you judge when the judge "
    "endpoint is weak. 'Later' saves the exchange unjudged; judge it from "
    "the exchange below.",
)
use_cache = st.checkbox(
    "Answer identical requests from the cache",
    value=False,
    key="pg_cache",
    help="Off: every send reaches the model (what you want for a live demo).",
)

saved = uncached(pg.list_exchanges, bench.name)
shown_id = st.query_params.get("exchange")
shown_weak = (
    bool(shown_id in set(saved["run_id"]) and saved.set_index("run_id").loc[shown_id, "weak_model"])
    if shown_id
    else False
)
if is_weak(model_ep) or (judging == "llm" and is_weak(judge_ep)) or shown_weak:
    st.warning(WEAK_MODEL_NOTE)  # the page's one weak-model notice

send = st.button("Send proactive and passive", type="primary", disabled=item is None, key="pg_send")
result = st.container()  # right under the send button: the live exchange, then the saved one
with result:
    if send and item is not None:
        require("playground")
        status = st.empty()
        status.info("Sending both prompts …")
        cols = st.columns(2)
        boxes, texts, last = {}, {m: "" for m in pg.MODES}, {m: 0.0 for m in pg.MODES}
        for col, mode in zip(cols, pg.MODES):
            with col:
                st.subheader(MODE_TITLES[mode])
                boxes[mode] = st.empty()

        def on_token(mode: str):
            def write(piece: str) -> None:
                texts[mode] += piece
                now = time.monotonic()
                if now - last[mode] > 0.05:  # repaint at most 20×/s per column
                    last[mode] = now
                    boxes[mode].text(pg.collapse_text(texts[mode]).preview + " ▌")

            return write

        def on_phase(phase: str) -> None:
            status.info(
                "Streaming both answers …"
                if phase == "answering"
                else f"Both answers are in; the judge ({judge_name}) is labelling them …"
            )

        def on_tick(_phase: str, elapsed: float) -> None:
            status.info(
                f"Both answers are in; the judge ({judge_name}) is labelling them … {elapsed:.0f} s"
            )

        exchange = pg.run_exchange(
            item,
            setting or role.default_setting,
            model_ep,
            judge_ep,
            benchmark=bench.name,
            temperature=float(temperature),
            max_tokens=int(max_tokens),
            on_token={m: on_token(m) for m in pg.MODES},
            on_phase=on_phase,
            on_tick=on_tick,
            store=store,
            use_cache=use_cache,
            judging=judging,
            judge_template=judge_template,
        )
        for mode in pg.MODES:
            boxes[mode].text(pg.collapse_text(texts[mode]).preview)
        status.empty()
        if exchange.answered:
            with guard_writes():
                pg.save_exchange(store, exchange)
            record("playground", exchange.run_id, f"model {model_name}")
            clear_cache()
            url_select("exchange", exchange.run_id)  # the URL and the browser's selector
            st.rerun()
        else:
            _show_problems(exchange.problems)
    elif saved.empty:
        st.caption(
            "No exchange yet: every exchange you send is saved as a playground run and shown here."
        )
    else:
        ids = list(saved["run_id"])
        if shown_id and shown_id not in ids and cached(pg.load_exchange, shown_id) is not None:
            ids.append(shown_id)  # older than the list's limit, still openable by link
        labels = {
            r["run_id"]: f"{r['created_at']:%Y-%m-%d %H:%M:%S} · {r['model']} · {r['setting']} · "
            f"{(r['prompt'] or '')[:60]} · judged: {r['judged_by']}"
            for r in saved.to_dict("records")
        }
        if shown_id and shown_id not in ids:
            st.warning(f"Exchange {shown_id!r} was not found; showing the newest instead.")
        opened = url_selectbox(
            "Exchange", ids, key="exchange", default=ids[0], format_func=lambda r: labels.get(r, r)
        )
        ex = cached(pg.load_exchange, opened) if opened else None
        if ex is not None:
            _show_exchange(ex, judge_name, judge_ep)

st.divider()
with st.expander("All saved exchanges"):
    table(saved, "playground_exchanges")
