"""Compare runs: a paired comparison of two runs of one benchmark over the items both answered
(`python -m core compare`; docs/statistics.md) — the table with its CSV, and the items that
flipped, each linked to the Responses grid showing both responses.

Data: core.services.compare_runs. Baseline and candidate live in the URL
(`?baseline=RUN&candidate=RUN`), so a link reproduces the view.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from core.services import compare_runs, run_choice
from pages.ui.common import cached, md_escape, table, url_selectbox

st.title("Compare runs")
st.caption(
    "Is the candidate run better than the baseline on the same items, or is the gap noise? "
    "Per metric and category over the items both runs answered (each run's current judging): "
    "the difference with a paired bootstrap 95% interval, McNemar's exact test on the "
    "discordant items (b: right/true only in the baseline, c: only in the candidate), "
    "Holm-adjusted p across the table, and the smallest difference this n would detect with "
    "80% power (mdd_80). Proportions 0–1. See docs/statistics.md."
)

runs = cached(compare_runs.eval_runs)
if len(runs) < 2:
    st.info("Comparing needs two runs of one benchmark. Start them on the Runs page.")
    st.page_link("pages/runs.py", label="Go to Runs", icon=":material/play_arrow:")
    st.stop()

labels = dict(zip(runs["run_id"], runs["label"]))
bench_of = dict(zip(runs["run_id"], runs["benchmark"]))
set_of = dict(zip(runs["run_id"], runs["item_set"]))
c1, c2 = st.columns(2)
with c1:
    baseline = url_selectbox(
        "Baseline",
        list(runs["run_id"]),
        key="baseline",
        default=cached(run_choice.default_run, tuple(runs["run_id"])),  # a run with answers
        format_func=lambda r: labels.get(r, r),
    )
same = [r for r in runs["run_id"] if bench_of[r] == bench_of.get(baseline) and r != baseline]
with c2:
    candidate = url_selectbox(
        "Candidate",
        same,
        key="candidate",
        default=cached(run_choice.default_run, tuple(same)),
        format_func=lambda r: labels.get(r, r),
    )
if baseline is None or candidate is None:
    st.info("The baseline's benchmark has no other run to compare it with.")
    st.stop()

view = cached(compare_runs.compare_view, baseline, candidate)
if view["error"]:
    st.error(md_escape(view["error"]))
    st.stop()

st.caption(
    md_escape(
        f"{view['pairs']} paired items · judgings: {baseline} {view['judgings'][0]}, "
        f"{candidate} {view['judgings'][1]} · bootstrap {compare_runs.DRAWS} draws, "
        f"seed {compare_runs.SEED}"
    )
)
result: pd.DataFrame = view["table"]
small = result["n"] < 10
if small.any():
    st.caption("Rows with n < 10 say little: their interval and p-value are rough.")
table(result, f"compare-{baseline}-vs-{candidate}")

st.subheader("Flipped items")
flipped: pd.DataFrame = view["flipped"]
if flipped.empty:
    st.info("No item changed between the runs.")
    st.stop()
metric = st.selectbox("Metric", ["(all)", *dict.fromkeys(flipped["metric"])], key="w_cmp_metric")
shown = flipped if metric == "(all)" else flipped[flipped["metric"] == metric]


def _grid_url(item_id: str) -> str:
    """The Responses grid with both runs as columns and this item drilled down."""
    params = {
        "g_bench": bench_of[baseline],
        "g_set": set_of[baseline] or "",
        "g_runs": f"{baseline},{candidate}",
        "g_item": item_id,
    }
    return f"./grid?{urlencode(params)}"


shown = shown.assign(responses=[_grid_url(i) for i in shown["item_id"]])
if (shown["variant"] == "").all():
    shown = shown.drop(columns="variant")
st.dataframe(
    shown,
    hide_index=True,
    width="stretch",
    column_config={
        "responses": st.column_config.LinkColumn("responses", display_text="both responses")
    },
)
