"""Responses: one benchmark's items × runs as a grid — verdict or parsed answer per cell,
correctness colour, filters, disagreement sort — and a drill-down of the selected item.

Data: core.services.grid (paged in SQL). Everything that defines the view, including the selected item,
lives in the URL, so a link reproduces it.

Reading: the grid and the drill-down are one `st.fragment`, fed with the page's (cached) grid
data. A row click, j / k and the Previous / Next buttons rerun only that fragment: the item
moves in the URL (`g_item`) and the grid's selection follows it, and the only query is the
new item's `grid_detail` (the grid's own query, keyed on the view, never re-runs).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pyarrow as pa
import streamlit as st

from core.registry import BENCHMARKS as REGISTRY
from core.services import failures, grid, run_choice
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    cached_figure,
    download,
    get_store,
    table,
    url_multiselect,
    url_number_input,
    url_radio,
    url_selectbox,
    url_text_input,
    warm,
)

BENCH_LABELS = {b.name: b.label for b in REGISTRY.values()}
CELL_NOTE = {b.name: b.results_page.grid_note for b in REGISTRY.values()}
ANY, ALL_CATS = "(any)", "(all)"

st.title("Responses")
st.caption(
    "Every response of the chosen runs side by side, one row per item. Select a row to "
    "read the full prompt, each run's full response and its verdict below. Long or "
    "repetitive responses are collapsed in the grid (first 300 characters, repeated "
    "lines counted); *Cells: expanded* shows them as written."
)

c1, c2 = st.columns([1, 2])
with c1:
    bench = url_radio(
        "Benchmark",
        list(grid.benchmarks()),
        key="g_bench",
        horizontal=True,
        format_func=lambda b: BENCH_LABELS.get(b, b),
    )
sets = cached(grid.grid_item_sets, bench)
label_letters = grid.grid_labels(bench)
with c2:
    item_set = url_selectbox(
        "Item set",
        list(sets["item_set"]),
        key="g_set",
        format_func=lambda s: f"{s} ({dict(zip(sets['item_set'], sets['runs'])).get(s, 0)} runs)",
    )
if not item_set:
    st.info(
        f"No {BENCH_LABELS[bench]} runs yet. Start one on the Runs page (or from a "
        "terminal); its responses appear here."
    )
    st.page_link("pages/runs.py", label="Go to Runs", icon=":material/play_arrow:")
    st.stop()

# the chosen runs' box grows with its labels (Streamlit caps it at ~4 lines and scrolled the
# fifth label out of sight)
st.html(
    "<style>.st-key-w_g_runs [data-testid='stMultiSelect'] div"
    "{max-height: none !important; overflow-y: visible !important;}</style>"
)
runs_df = cached(grid.grid_runs, bench, item_set)
run_labels = dict(zip(runs_df["run_id"], runs_df["label"]))
runs = url_multiselect(
    "Runs (columns)",
    list(runs_df["run_id"]),
    key="g_runs",
    default=cached(run_choice.default_runs, tuple(runs_df["run_id"]), 8),  # answered runs
    format_func=lambda r: run_labels.get(r, r),
)
if not runs:
    st.info("Choose at least one run.")
    st.stop()
if runs_df[runs_df["run_id"].isin(runs)]["weak_model"].any():
    st.warning(WEAK_MODEL_NOTE)
failed_reasons = cached(failures.runs_failure_frame, tuple(runs))
if len(failed_reasons):  # the stored reasons of the columns' failed cells, grouped
    with st.expander(
        f"Why {int(failed_reasons['count'].sum()):,} answers or verdicts of these runs failed",
        icon=":material/error:",
    ):
        table(failed_reasons, "failures_" + "_".join(runs)[:80])
variants: list[str] = []
if REGISTRY[bench].variants_per_run:
    all_variants = cached(grid.grid_variants, tuple(runs))
    variants = url_multiselect(
        "Conditions (one column per run × condition)",
        all_variants,
        key="g_var",
        default=all_variants,
    )

f1, f2, f3, f4, f5, f6 = st.columns([2, 2, 2, 3, 2, 2])
with f1:
    category = url_selectbox(
        "Category", [ALL_CATS, *cached(grid.grid_categories, item_set)], key="g_cat"
    )
with f2:
    label: str | None = ANY
    if label_letters:  # a multi-label judge's labels
        label = url_selectbox("Label true in any run", [ANY, *label_letters], key="g_label")
with f3:
    disagree = url_radio("Rows", ["all items", "runs disagree"], key="g_dis")
with f4:
    text = url_text_input("Search prompts and responses (case-insensitive)", key="g_q")
with f5:
    sort = url_selectbox("Sort by", list(grid.SORTS), key="g_sort")

with f6:
    cells_mode = url_radio(
        "Cells",
        ["collapsed", "expanded"],
        key="g_cells",
        help="collapsed: first 300 characters, repeated lines counted; "
        "expanded: each response as written (up to 4,000 characters), "
        "taller rows",
    )
expanded = cells_mode == "expanded"
signature = (bench, item_set, tuple(runs), tuple(variants), category, label, disagree, text, sort)
if st.session_state.get("g_signature") != signature:  # a new view starts on page 1
    if st.session_state.get("g_signature") is not None:
        st.session_state["w_g_page"] = 1
        st.query_params["g_page"] = "1"
    st.session_state["g_signature"] = signature
try:  # read before the data call; the widget itself is drawn beside the page number
    size = int(st.session_state.get("w_g_size") or st.query_params.get("g_size") or 50)
except ValueError:
    size = 50
size = size if size in grid.PAGE_SIZES else 50
try:
    wanted_page = int(st.session_state.get("w_g_page") or st.query_params.get("g_page") or 1)
except ValueError:
    wanted_page = 1
asked_page, wanted_page = wanted_page, min(max(1, wanted_page), grid.MAX_PAGE)

try:
    data = cached(
        grid.grid_page,
        bench,
        item_set,
        tuple(runs),
        None if category == ALL_CATS else category,
        None if label in (ANY, None) else label,
        disagree == "runs disagree",
        text or None,
        sort,
        wanted_page,
        size,
        tuple(variants),
        expanded,
    )
except ValueError as exc:
    st.error(str(exc))
    st.stop()

if asked_page > data.pages:  # a link past the end (or filters narrowed it): say where we are
    st.info(
        f"There is no page {asked_page:,}: this view has {data.pages:,} "
        f"page{'s' if data.pages != 1 else ''}; showing page {data.page:,}."
    )
p1, p2, p3, p4 = st.columns([1, 1, 4, 1])
with p1:
    page = url_number_input(
        "Page", key="g_page", min_value=1, max_value=data.pages, default=data.page
    )  # a fixed label keeps the widget's identity
with p2:
    url_selectbox("Rows a page", [str(s) for s in grid.PAGE_SIZES], key="g_size", default="50")
if page != data.page:  # the page widget moved (or was clamped): fetch that page
    data = cached(
        grid.grid_page,
        bench,
        item_set,
        tuple(runs),
        None if category == ALL_CATS else category,
        None if label in (ANY, None) else label,
        disagree == "runs disagree",
        text or None,
        sort,
        page,
        size,
        tuple(variants),
        expanded,
    )
first = (data.page - 1) * size + 1 if data.total else 0
with p3:
    st.caption(
        f"{data.total:,} items match; rows {first:,}–{first + len(data.rows) - 1:,} "
        f"shown (page {data.page:,} of {data.pages:,}) × {len(data.columns)} columns. "
        + CELL_NOTE[bench]
    )
with p4:
    download(data.rows, f"responses_{bench}_{item_set}_page{data.page}", "Download CSV (page)")

# -- the grid -------------------------------------------------------------------------------

COLOURS = {
    "✓": "background-color: #e3f4e1",
    "✗": "background-color: #fbe3e1",
    "–": "background-color: #f1f1f1",
}
# Pixel widths that keep ≥ 4 run columns in view at 1,440 px (the sidebar open); a cell's full
# text is one click away (the drill-down) and shows on hover.
RUN_COLUMN_PX = 130
RUNS_PER_ROW = 4  # the drill-down's run columns per row
MARK_OF: dict[object, str] = {
    True: "✓",
    False: "✗",
}  # a label's value in the drill-down's compact row
RESPONSE_PX = 320  # a response's scroll box in the drill-down (rows line up; the page stays short)
DISAGREE_HELP = (
    "≠ disagreements: how many of this item's cells differ from its most common verdict "
    "(the judge's label pattern, or right / wrong where answers are scored). 0 = every run "
    "agrees; failed cells count for neither."
)


def _colour(value: object) -> str:
    return COLOURS.get(str(value)[:1], "")


def styled_once(rows: pd.DataFrame, columns: list[str]) -> Any:
    """The page's rows with their correctness colours, as a Styler whose styles are computed
    here, once: its `_compute` and `_translate` (what Streamlit's st.dataframe calls on every
    rerun that draws it) then hand back that result instead of working again. Every j / k
    redraws the grid (its tick follows the item), and the colours cost ~30 ms of the server's
    CPU each time (pandas' per-cell map and HTML translation, issue 31, point 8); built through
    cached_figure, one Styler serves every rerun and session on this view and store version
    (read-only once built, so sessions may share it)."""
    styler = rows.style.map(_colour, subset=pd.Index(columns))
    work: Any = styler  # pandas' private methods, as Streamlit calls them (not in its stubs)
    compute, translate = work._compute, work._translate
    compute()
    translated = {(False, False): translate(False, False)}

    def translated_once(*args: Any, **kwargs: Any) -> Any:
        if kwargs or args not in translated:  # not the call Streamlit makes: do the work
            return translate(*args, **kwargs)
        return translated[args]

    work._compute = lambda: styler
    work._translate = translated_once
    return styler


shown = data.rows
styled = (
    cached_figure(
        ("grid-styler", get_store().as_of, bench, item_set, tuple(runs), tuple(variants))
        + (category, label, disagree, text, sort, data.page, size, expanded),
        lambda: styled_once(shown, data.columns),
    )
    if len(shown) and data.columns
    else shown
)
column_config = {
    "item_id": st.column_config.TextColumn("item", pinned=True, width=100),
    "category": st.column_config.TextColumn("category", width=80),
    "prompt": st.column_config.TextColumn("prompt", width=130),
    "disagreements": st.column_config.NumberColumn("≠", width=40, help=DISAGREE_HELP),
}
for col in data.columns:
    column_config[col] = st.column_config.TextColumn(col, width=RUN_COLUMN_PX)
st.caption(
    DISAGREE_HELP + " Sort by disagreements (or keep only the rows where they split) to read "
    "the items the runs differ on first."
)

# j / k move the item like the buttons (Streamlit's grid itself selects the focused row
# with Shift+Space, but loses focus on the rerun that follows), and bring the drill-down into
# view: its "Item" heading is scrolled to the top once the new item shows (issue 31, point 8).
st.html(
    """<script>
if (!window.__ehwGridKeys) {
  window.__ehwGridKeys = true;
  const itemLine = () => {
    const h = [...document.querySelectorAll("h3")].find((e) => e.innerText.trim() === "Item");
    const line = h && h.closest('[data-testid="stElementContainer"]');
    const next = line && line.nextElementSibling;
    return [h, next ? next.innerText : null];
  };
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey || (t && (t.tagName === "INPUT" ||
        t.tagName === "TEXTAREA" || t.isContentEditable))) return;
    const label = e.key === "j" ? "Next item" : e.key === "k" ? "Previous item" : null;
    if (!label) return;
    const button = [...document.querySelectorAll("button")].find(
        (b) => b.innerText.includes(label));
    if (!button || button.disabled) return;
    e.preventDefault();
    const before = itemLine()[1];
    button.click();
    const started = Date.now();
    const follow = () => {
      const [h, now] = itemLine();
      if (h && now !== null && now !== before) { h.scrollIntoView({block: "start"}); return; }
      if (Date.now() - started < 10000) setTimeout(follow, 50);
    };
    follow();
  });
}
</script>""",
    unsafe_allow_javascript=True,
)


def _step(ids: list[str], step: int) -> None:
    """Previous / Next (and j / k): the item before or after the URL's item on this page."""
    current = st.query_params.get("g_item")
    pos = ids.index(current) if current in ids else -1
    st.query_params["g_item"] = ids[pos + step] if pos >= 0 else ids[0]


def _picked(ids: list[str], key: str) -> None:
    """A row ticked in the grid is the item to read; a row unticked closes the drill-down."""
    rows = list(st.session_state[key]["selection"]["rows"])
    if rows and rows[0] < len(ids):
        st.query_params["g_item"] = ids[rows[0]]
    elif "g_item" in st.query_params:
        del st.query_params["g_item"]


@st.fragment
def reader(table: object, ids: list[str], height: int, row_height: int, key: str) -> None:
    """The grid and the drill-down of the URL's item. A fragment: moving the item reruns only
    this, with the grid's rows as they were passed in (no grid query), and the grid's tick is
    set to the item's row (programmatic selection through the widget's state)."""
    item_id = st.query_params.get("g_item") or None
    pos = ids.index(item_id) if item_id in ids else -1
    rows = [pos] if pos >= 0 else []
    state = st.session_state.get(key)
    if state is None or list(state["selection"]["rows"]) != rows:
        st.session_state[key] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        height=height,
        row_height=row_height,
        column_config=column_config,
        on_select=lambda: _picked(ids, key),
        selection_mode="single-row",
        key=key,
    )
    nav1, nav2, _ = st.columns([2, 2, 5])
    nav1.button("◀ Previous item", disabled=pos <= 0, key="g_prev", on_click=_step, args=(ids, -1))
    nav2.button(
        "Next item ▶",
        disabled=pos >= len(ids) - 1,
        key="g_next",
        on_click=_step,
        args=(ids, 1),
    )
    if not item_id:
        st.info(
            "Select a row (tick its box at the left, or click a cell and press Shift+Space) "
            "to see the item in full; then j / k or the buttons move to the next / previous "
            "item."
        )
        return
    drilldown(item_id)
    # j's item (and k's) into the cache while the user reads this one: a key then draws it
    # from the cache instead of waiting for its query (0.08-0.16 s at load 3; issue 31, pt 8)
    for near in (pos + 1, pos - 1):
        if 0 <= near < len(ids):
            warm(grid.grid_detail, item_set, tuple(runs), ids[near], tuple(variants))


def drilldown(item_id: str) -> None:
    """The item in full, then one column per run (RUNS_PER_ROW to a row): verdict or answer,
    the labels as one compact row, the full response as plain text in a scroll box."""
    detail = cached(grid.grid_detail, item_set, tuple(runs), item_id, tuple(variants))
    if detail is None:
        st.warning(f"Item {item_id!r} is not in item set {item_set!r}.")
        return
    st.subheader("Item")
    st.text(
        f"{detail['item_id']} · "
        + (
            " / ".join(
                str(c)
                for c in (detail.get("primary_category"), detail.get("secondary_category"))
                if c
            )
            or "control (no error)"
        )
    )
    a, b = st.columns(2)
    with a:
        st.markdown("**Prompt**")
        st.text(detail.get("prompt") or "")
    with b:
        if detail.get("explanation"):
            st.markdown("**What is wrong**")
            st.text(detail["explanation"])
        if detail.get("gold"):
            st.markdown(f"**{REGISTRY[bench].results_page.gold_label}**")
            st.text(detail["gold"])

    st.subheader("Responses")
    cells = detail["cells"]
    per_row = max(1, min(RUNS_PER_ROW, len(cells)))
    for start in range(0, len(cells), per_row):
        for column, cell in zip(
            st.columns(per_row, border=True), cells[start : start + per_row], strict=False
        ):
            with column:
                response_cell(cell)


def label_table(
    names: list[str], letters: list[str], values: list[Any], rationales: list[str]
) -> pa.Table:
    """A run's labels as an Arrow table for st.dataframe: j / k draw eight of them, and a pandas
    frame costs ~3 ms each to build and convert (a quarter of a key's server CPU; issue 31,
    point 8); an Arrow table is sent as it is. Values that are not all booleans go as text,
    as Streamlit shows a mixed column."""
    try:
        value = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        value = pa.array([None if v is None else str(v) for v in values], pa.string())
    return pa.table(
        {
            "label": pa.array(names, pa.string()),
            "letter": pa.array(letters, pa.string()),
            "value": value,
            "rationale": pa.array(rationales, pa.string()),
        }
    )


def response_cell(cell: dict[str, Any]) -> None:
    """One run's answer to the item, compact enough for RUNS_PER_ROW side by side."""
    mark = grid.MARK[None if cell.get("correct") is None else bool(cell["correct"])]
    col = str(cell["col"])
    if int(cell.get("epochs") or 1) > 1:  # a run asked K times: one cell per answer
        col += f" · epoch {cell.get('epoch')}/{cell.get('epochs')}"
    st.text(f"{mark} {col} · {cell.get('model') or ''} — {cell.get('answer') or ''}")
    values: dict[str, Any] = cell["labels"] if isinstance(cell.get("labels"), dict) else {}
    metadata: dict[str, Any] = cell["metadata"] if isinstance(cell.get("metadata"), dict) else {}
    if label_letters:  # every label as one row: letter ✓ true, ✗ false, ? not judged
        st.text(
            "  ".join(
                f"{letter}{MARK_OF.get(values.get(name), '?')}"
                for name, letter in label_letters.items()
            )
        )
    elif cell.get("explanation"):
        st.text(cell["explanation"])
    if cell.get("response_status") not in (None, "ok"):  # the stored reason, as text
        st.text(f"answer failed: {cell.get('error') or '(no reason stored)'}")
    if cell.get("result_status") == "failed":
        st.text(f"judge failed: {cell.get('judge_error') or '(no reason stored)'}")
    with st.container(height=RESPONSE_PX, border=False):
        st.text(cell.get("response") or cell.get("error") or "(no response)")
    if label_letters:
        rationales = metadata.get("rationales") or {}
        with st.expander("Labels and rationales"):
            labels = label_table(
                list(label_letters),
                list(label_letters.values()),
                [values.get(lb) for lb in label_letters],
                [str(rationales.get(lb) or "") for lb in label_letters],
            )
            st.dataframe(labels, hide_index=True, width="stretch")
    if cell.get("judge_raw"):
        with st.expander("Raw judge output"):
            st.code(str(cell["judge_raw"]), language=None)
    elif metadata:
        with st.expander("Scores (parsed answer)"):
            st.code(json.dumps(metadata, indent=1, ensure_ascii=False), language=None)


row_height = 160 if expanded else 35
reader(
    styled,
    list(shown["item_id"]),
    min(38 + row_height * len(shown), 720),
    row_height,
    f"grid_{abs(hash(signature)) % 10**8}_{data.page}_{size}",
)
