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
from typing import Any

import streamlit as st

from core.engine.endpoints import Endpoint, EndpointError, is_weak, load_endpoints, local_endpoint
from core.registry import Benchmark
from core.services import playground as pg
from pages.ui.access import record, require
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    clear_cache,
    get_store,
    guard_writes,
    md_escape,
    table,
    uncached,
    url_radio,
    url_select,
    url_selectbox,
)
from pages.ui.playground_exchange import (
    MODE_TITLES,
    plain,
    show_exchange,
    show_problems,
)

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
        keys = [f"{r.item_set}/{r.item_id}" for r in sub.itertuples()]
        prompts_by_key = {k: p for k, p in zip(keys, sub["prompt"])}
        chosen = url_selectbox(
            "Example prompt", keys, key="pg_item", format_func=lambda k: prompts_by_key.get(k, k)
        )
        picked = sub.iloc[keys.index(chosen)] if chosen in keys else sub.iloc[0]
        row = {str(k): v for k, v in picked.items()}
        item = pg.item_from_row(row)
        with st.container(border=True):
            plain(item["prompt"])
            if item["is_error"]:
                st.caption(
                    md_escape(
                        f"{row['primary_category']} › {row['secondary_category']} "
                        f"· item {row['item_id']} of {row['item_set']}"
                    )
                )
                st.markdown("**What is wrong**")
                plain(item.get("explanation"))
            else:
                st.caption(md_escape(f"Error-free control question · item {row['item_id']}"))
            st.markdown("**Ground truth**")
            plain(item.get("gold"))
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
            show_problems(exchange.problems)
    elif saved.empty:
        st.caption(
            "No exchange yet: every exchange you send is saved as a playground run and shown here."
        )
    else:
        ids = list(saved["run_id"])
        if shown_id and shown_id not in ids and cached(pg.load_exchange, shown_id) is not None:
            ids.append(shown_id)  # older than the list's limit, still openable by link
        labels = {
            r.run_id: f"{r.created_at:%Y-%m-%d %H:%M:%S} · {r.model!s} · "
            f"{r.setting!s} · {str(r.prompt or '')[:60]} · judged: {r.judged_by!s}"
            for r in saved.itertuples()
        }
        if shown_id and shown_id not in ids:
            st.warning(f"Exchange {shown_id!r} was not found; showing the newest instead.")
        opened = url_selectbox(
            "Exchange", ids, key="exchange", default=ids[0], format_func=lambda r: labels.get(r, r)
        )
        ex = cached(pg.load_exchange, opened) if opened else None
        if ex is not None:
            show_exchange(ex, judge_name, judge_ep)

st.divider()
with st.expander("All saved exchanges"):
    table(saved, "playground_exchanges")
