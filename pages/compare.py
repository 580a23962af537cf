"""Compare runs: a paired comparison of two runs of one benchmark over the items both answered
(`python -m core compare`; docs/statistics.md) — the table with its CSV, and the items that
flipped, each linked to the Responses grid showing both responses.

Data: core.services.compare_runs. Baseline and candidate live in the URL
(`?baseline=RUN&candidate=RUN`), so a link reproduces the view.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.services import compare_runs, current_judges, run_choice
from pages.ui.common import (
    cached,
    download,
    md_escape,
    source_caption,
    url_selectbox,
)
from pages.ui.formats import count_text, number_text, p_text

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

judges = cached(current_judges.current_judges)
judge_of = {
    r: current_judges.judge_suffix(m, j)
    for r, m, j in zip(judges["run_id"], judges["judge_model"], judges["judging"])
}
# the judge in each label: two runs of one model judged by different judges read apart
labels = {r: lb + judge_of.get(r, "") for r, lb in zip(runs["run_id"], runs["label"])}
bench_of = dict(zip(runs["run_id"], runs["benchmark"]))
set_of = dict(zip(runs["run_id"], runs["item_set"]))

# A run named in the URL that cannot be compared is named, not replaced by another run.
asked = {key: st.query_params.get(key) for key in ("baseline", "candidate")}
problems = [
    f"{key}={value!r}: no run of that name (see the Runs page)"
    for key, value in asked.items()
    if value is not None and value not in bench_of
]
a, b = asked["baseline"], asked["candidate"]
if not problems and a is not None and b is not None:
    if a == b:
        problems.append(f"candidate={b!r} is the baseline itself: choose another run")
    elif bench_of[a] != bench_of[b]:
        problems.append(
            f"candidate={b!r} is a {bench_of[b]} run and baseline={a!r} a {bench_of[a]} run: "
            "a comparison pairs two runs of one benchmark"
        )
if problems:
    for problem in problems:
        st.error(md_escape(problem))
    st.page_link("pages/compare.py", label="Choose the runs again", icon=":material/refresh:")
    st.stop()

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

HOLDS = "holds after Holm"
# F1 on the control items alone is not defined (no error to find): their F1 rows read 0.000
# for "no true positive possible"; they are left out of what is shown (the CSV keeps them).
control_f1 = (result["category"] == "(none)") & result["metric"].str.endswith("_f1")
shown = result[~control_f1].reset_index(drop=True)
holds = shown["p_holm"] < compare_runs.ALPHA
display = pd.DataFrame(
    {
        "metric": shown["metric"],
        "category": shown["category"],
        "n": shown["n"],
        **{
            col: [number_text(v) for v in shown[col]]
            for col in ("baseline", "candidate", "diff", "ci_low", "ci_high")
        },
        "b": [count_text(v) for v in shown["b"]],
        "c": [count_text(v) for v in shown["c"]],
        "p_value": [p_text(v) for v in shown["p_value"]],
        "p_holm": [p_text(v) for v in shown["p_holm"]],
        HOLDS: ["yes" if h else "" for h in holds],
        "mdd_80": [number_text(v) for v in shown["mdd_80"]],
    }
)
st.dataframe(display, hide_index=True, width="stretch")
download(result, f"compare-{baseline}-vs-{candidate}")
st.caption(
    f"*{HOLDS}*: yes when the Holm-adjusted p-value across the table is below "
    f"{compare_runs.ALPHA:g} — the differences that hold when every row is tested at once. "
    "Detection scores (F1; recall where no control was compared; the false-positive rate, "
    "_fpr, on the control items alone, category (none)) have no McNemar test (b, c and p "
    "empty): read their interval. The CSV has every row at full precision."
)

overall = shown[shown["category"] == "all"].reset_index(drop=True)
overall_holds = overall["p_holm"] < compare_runs.ALPHA
fig = go.Figure()
for flag, name, colour in ((True, HOLDS, "#1a7f37"), (False, "does not hold", "#8c959f")):
    part = overall[overall_holds == flag]
    fig.add_trace(
        go.Scatter(
            x=part["diff"],
            y=part["metric"],
            mode="markers",
            name=name,
            marker={"color": colour, "size": 9},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": part["ci_high"] - part["diff"],
                "arrayminus": part["diff"] - part["ci_low"],
                "color": colour,
            },
            hovertemplate="%{y}: diff %{x:.3f}<extra>" + name + "</extra>",
        )
    )
fig.add_vline(x=0, line_color="#444", line_width=1)
fig.update_layout(
    title="Candidate − baseline, all items (95% paired bootstrap interval)",
    xaxis_title="difference (proportion)",
    yaxis={"autorange": "reversed"},
    height=120 + 28 * len(overall),
    margin={"l": 10, "r": 10, "t": 50, "b": 40},
    legend={"orientation": "h", "y": -0.25},
)
st.plotly_chart(fig, key="cmp_diffs")
source_caption(f"`python -m core compare --baseline {baseline} --candidate {candidate}`")

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
