"""Playground: one erroneous prompt, proactive vs passive side by side, streamed, then judged.

Thin page: items and saved exchanges come from core.misprompt.playground (through the cache); the
exchange itself (streaming both modes concurrently, judging, saving) is core.misprompt.playground too.
The page only wires widgets, the two streaming placeholders and the badges.
"""

from __future__ import annotations

import os
import time

import streamlit as st

from core.misprompt import playground as pg
from core.misprompt import prompts
from core.endpoints import Endpoint, EndpointError, load_endpoints, local_endpoint
from pages.ui.common import (WEAK_MODEL_NOTE, cached, clear_cache, get_store, guard_writes,
                             md_escape,
                             show_text, source_caption, table, url_radio, url_selectbox)

MODE_TITLES = {"proactive": "Proactive — the prompt as is",
               "passive": "Passive — with the error-handling instruction"}
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


def _badges(verdict: dict | None) -> None:
    if not verdict:
        st.caption("Not judged.")
        return
    if verdict.get("status") != "ok":
        st.warning("The judge gave no usable verdict: "
                   + md_escape(verdict.get('error') or 'unknown error'))
        if verdict.get("raw"):
            with st.expander("Raw judge output"):
                show_text(verdict["raw"])
        return
    line = " ".join(
        f":{'green' if value else 'gray'}-badge[{'✓' if value else '✗'} {label}]"
        for label, value, _ in pg.verdict_badges(verdict))
    st.markdown(line)
    if verdict.get("inconsistent"):
        st.caption("⚠️ Inconsistent verdict: an 'accurate' label is true while its 'attempt' is "
                   "false (kept as the judge said it).")
    for label, value, why in pg.verdict_badges(verdict):
        st.caption(f"**{label}** ({'yes' if value else 'no'}): {md_escape(why or '—')}")
    with st.expander("Raw judge output"):
        show_text(verdict.get("raw") or "")


def _show_problems(problems: list[pg.EndpointProblem]) -> None:
    for problem in problems:
        st.error(md_escape(problem.title))
        st.markdown("**How to configure an endpoint**\n\n" + (problem.help or pg.configure_help()))


def _show_exchange(ex: pg.Exchange) -> None:
    """A finished (or reopened) exchange: both answers and both verdicts side by side."""
    item = ex.item
    show_text(item.get('prompt', ''), label="Prompt")
    meta = [f"setting {ex.setting}", f"model {ex.model_endpoint.get('name')} "
            f"({ex.model_endpoint.get('model')})", f"judge {ex.judge_endpoint.get('name')} "
            f"({ex.judge_endpoint.get('model')})", f"temperature {ex.temperature:g}",
            f"max tokens {ex.max_tokens}"]
    st.caption(md_escape(" · ".join(meta)))
    if ex.weak:
        st.warning(WEAK_MODEL_NOTE)
    _show_problems(ex.problems)
    cols = st.columns(2)
    for col, mode in zip(cols, pg.MODES):
        side = ex.sides.get(mode)
        with col:
            st.subheader(MODE_TITLES[mode])
            if side is None:
                st.caption("Not sent.")
                continue
            if side.status == "ok":
                with st.container(border=True):
                    show_text(side.response or "(empty answer)")
                st.caption(f"{side.completion_tokens or 0} tokens · "
                           f"{(side.latency_ms or 0) / 1000:.2f} s"
                           + (" · from cache" if side.cached else ""))
            else:
                st.error("No answer: " + md_escape(side.error))
            with st.expander("Messages sent"):
                st.json(side.messages)
            st.markdown("**Judge's verdict**")
            _badges(side.verdict)
    source_caption(f"playground run {ex.run_id}" if ex.saved else "unsaved exchange",
                   f"templates {ex.template_id}")


# -- page ---------------------------------------------------------------------------------------

st.title("Playground")
st.caption("Does a model notice a flawed question on its own? Send one prompt **proactive** (as "
           "is) and **passive** (with an explicit instruction to check it for errors) side by "
           "side, watch both answers stream in, then let the judge label both (SPEC §1).")

store = get_store()
endpoints = _endpoints()
names = sorted(endpoints, key=lambda n: (n != "local", n))

source = url_radio("Prompt", SOURCES, key="pg_src", horizontal=True)
item: dict | None = None
if source == SOURCES[0]:
    items = cached(pg.example_items)
    if items.empty:
        st.info("No Mis-prompt items are loaded. Run `python -m core init` (loads the shipped "
                "sample) or import a file on the Import page — or type your own prompt.")
    else:
        c1, c2 = st.columns(2)
        with c1:
            primaries = sorted(items["primary_category"].unique(),
                               key=lambda c: (c == "(control)", c))  # controls last
            primary = url_selectbox("Primary category", primaries, key="pg_primary")
        sub = items[items["primary_category"] == primary]
        with c2:
            secondary = url_selectbox("Secondary category",
                                      sorted(sub["secondary_category"].unique()),
                                      key="pg_secondary")
        sub = sub[sub["secondary_category"] == secondary]
        keys = [f"{r.item_set}/{r.item_id}" for r in sub.itertuples()]
        prompts_by_key = {k: p for k, p in zip(keys, sub["prompt"])}
        chosen = url_selectbox("Example prompt", keys, key="pg_item",
                               format_func=lambda k: prompts_by_key.get(k, k))
        row = sub.iloc[keys.index(chosen)].to_dict() if chosen in keys else sub.iloc[0].to_dict()
        item = pg.item_from_row(row)
        with st.container(border=True):
            show_text(item["prompt"])
            if item["is_error"]:
                st.caption(md_escape(f"{row['primary_category']} › {row['secondary_category']} · "
                                     f"item {row['item_id']} of {row['item_set']}"))
                show_text(item.get("explanation") or "—", label="What is wrong:")
            else:
                st.caption(md_escape(f"Error-free control question · item {row['item_id']}"))
            show_text(item.get("gold") or "—", label="Ground truth:")
else:
    typed = st.text_area("Your prompt", key="pg_prompt", height=100,
                         placeholder="e.g. Wich composser wrote the Eroica?")
    gold = st.text_area("Ground truth (optional: helps the judge)", key="pg_gold", height=80)
    control = st.checkbox("This prompt contains no error (a control question)", key="pg_control")
    if typed.strip():
        item = pg.custom_item(typed, gold=gold, is_error=not control)

c1, c2, c3, c4, c5 = st.columns([2, 2, 1.4, 1.2, 1.2])
with c1:
    model_name = url_selectbox("Model endpoint", names, key="pg_model", default="local")
with c2:
    judge_name = url_selectbox("Judge endpoint", names, key="pg_judge", default="local")
with c3:
    setting = url_selectbox("Setting", list(prompts.SETTINGS), key="pg_setting",
                            default="zero-shot")
with c4:
    temperature = st.slider("Temperature", 0.0, 1.5, 0.0, 0.1, key="pg_temperature")
with c5:
    max_tokens = st.number_input("Max tokens", 16, 4096, pg.DEFAULT_MAX_TOKENS, 16,
                                 key="pg_max_tokens")
judge_template = url_selectbox(
    "Judge template", prompts.judge_templates(), key="pg_judge_template",
    default=prompts.DEFAULT_JUDGE_TEMPLATE,
    help="judge.v2 (default): the paper's C.1 definitions (accurate identification = right "
         "category AND location; guidance = how to avoid similar errors), both 'accurate' labels "
         "read alike on control questions. judge.v1: the earlier wording (see the README).")
model_ep, judge_ep = endpoints[model_name], endpoints[judge_name]
if model_ep.weak or judge_ep.weak:
    st.warning(WEAK_MODEL_NOTE)
use_cache = st.checkbox("Answer identical requests from the cache", value=False, key="pg_cache",
                        help="Off: every send reaches the model (what you want for a live demo).")

send = st.button("Send proactive and passive", type="primary", disabled=item is None,
                 key="pg_send")
if send and item is not None:
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
                boxes[mode].code(texts[mode] + " ▌", language=None, wrap_lines=True)
        return write

    def on_phase(phase: str) -> None:
        status.info("Streaming both answers …" if phase == "answering" else
                    "Both answers are in; the judge is labelling them …")

    exchange = pg.run_exchange(item, setting, model_ep, judge_ep, temperature=float(temperature),
                               max_tokens=int(max_tokens),
                               on_token={m: on_token(m) for m in pg.MODES}, on_phase=on_phase,
                               store=store, use_cache=use_cache,
                               judge_template=judge_template)
    for mode in pg.MODES:
        boxes[mode].code(texts[mode] or "", language=None, wrap_lines=True)
    status.empty()
    if exchange.answered:
        with guard_writes():
            pg.save_exchange(store, exchange)
        clear_cache()
        st.session_state["pg_last"] = exchange.run_id
        st.session_state.pop("w_exchange", None)  # open the new one, not the previous choice
        st.query_params["exchange"] = exchange.run_id
        st.rerun()
    else:
        _show_problems(exchange.problems)

st.divider()
st.subheader("Exchanges")
saved = cached(pg.list_exchanges)
if saved.empty:
    st.caption("None yet: every exchange you send is saved here as a playground run.")
else:
    ids = list(saved["run_id"])
    labels = {r.run_id: f"{r.created_at:%Y-%m-%d %H:%M:%S} · {r.model} · {r.setting} · "
                        f"{(r.prompt or '')[:60]}" for r in saved.itertuples()}
    wanted = st.query_params.get("exchange") or st.session_state.get("pg_last")
    opened = url_selectbox("Open an exchange", ids, key="exchange",
                           default=wanted if wanted in ids else ids[0],
                           format_func=lambda r: labels.get(r, r))
    ex = cached(pg.load_exchange, opened) if opened else None
    if ex is not None:
        _show_exchange(ex)
    with st.expander("All saved exchanges"):
        table(saved, "playground_exchanges")
