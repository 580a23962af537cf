"""ProcessBench: runs' error / correct accuracy and F1 as a split × model heatmap (its table
downloadable), the metrics rows with n and intervals, and a solution drill-down with its steps,
its label and the critique's verdict. Filters live in the URL."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.benchmarks.processbench import queries as q
from core.benchmarks.processbench.charts import MEASURES, heatmap
from core.engine.templates import label as template_label
from core.services import run_choice
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    md_escape,
    show_text,
    source_caption,
    table,
    url_multiselect,
    url_radio,
    url_selectbox,
)
from pages.ui.formats import readable_table
from pages.ui.runs import start_run_panel

PAPER = (
    "Zheng et al., ACL 2025, “ProcessBench: Identifying Process Errors in Mathematical Reasoning”"
)
NO_RUN = "(no run)"

st.title("∑ ProcessBench — earliest wrong step")
st.caption(
    "Passive error finding in math solutions: a critic model reads a step-by-step solution "
    "(paragraphs indexed from 0) and names the earliest wrong paragraph, or -1 when all are "
    "correct. Error accuracy: erroneous solutions whose index was named exactly; correct "
    "accuracy: correct solutions answered -1; F1: their harmonic mean (the paper's "
    "definition). Prompt: the paper's critique template (processbench/critique.v1); answer: "
    "the last \\boxed{} of the critique. One sample per solution."
)
st.info(q.NO_PUBLISHED)

runs = cached(q.processbench_runs)
run_ids = list(runs["run_id"]) if len(runs) else []
run_label = {
    r.run_id: f"{r.run_id} — {r.model} · {r.item_set} · {template_label(r.template_id)}"
    for r in runs.itertuples()
}

with st.container(border=True):
    c1, c2 = st.columns([3, 2])
    with c1:
        chosen_runs = url_multiselect(
            "Runs",
            run_ids,
            key="pb_runs",
            default=cached(run_choice.default_runs, tuple(run_ids), 3),  # answered runs
            format_func=lambda r: run_label.get(r, r),
        )
    with c2:
        measure = url_radio(
            "Measure", list(MEASURES), key="pb_measure", format_func=lambda m: MEASURES[m]
        )

if not run_ids:
    st.caption(
        "No ProcessBench runs yet: start one below, or `python -m core run processbench "
        "--items processbench-sample` (docs/benchmarks.md › ProcessBench). The local SmolLM2 "
        "rarely ends its answer with a \\boxed{} index: the template "
        "processbench/critique_structured.v1 (JSON bounded by a schema — not the paper's "
        "protocol) keeps its answers readable; its runs show the mechanics."
    )
start_run_panel("processbench", "pb", expanded=not run_ids)

chosen = runs[runs["run_id"].isin(chosen_runs)] if len(runs) else runs
if len(chosen) and bool(chosen["weak_model"].fillna(False).any()):
    st.warning(WEAK_MODEL_NOTE)
metrics = cached(q.combined_metrics, tuple(chosen_runs))
sources = [f"run {r} (judging {j})" for r, j in zip(chosen["run_id"], chosen["judging"])]

tab_heat, tab_rows, tab_drill = st.tabs(["Heatmap", "Metrics with n and intervals", "Solutions"])

with tab_heat:
    if metrics.empty:
        st.info("Choose a run (or start one) to see its heatmap.")
    else:
        st.plotly_chart(heatmap(metrics, measure), key="pb_heatmap")
        readable_table(q.heatmap_table(metrics, measure), f"processbench_heatmap_{measure}")
        source_caption(*sources)
        st.caption(
            "Rows: the item set's splits, `overall` (every solution pooled) and `average` (the "
            "mean of the split F1s, the paper's Avg. F1; no accuracies). Grey cells rest on "
            "fewer than 10 solutions. An unreadable answer (unparsable, out of range, "
            "truncated) counts as wrong, as in the paper."
        )

with tab_rows:
    if metrics.empty:
        st.info("No run chosen.")
    else:
        readable_table(metrics, "processbench_metrics")
        source_caption(*sources)
        st.caption(
            "As `python -m core metrics processbench --source RUN`. error_ci_* / "
            "correct_ci_*: 95 % Wilson intervals of the accuracies; ci_low / ci_high: 95 % "
            "percentile bootstrap of the F1 over solutions (1,000 resamples within each "
            "split, seed 0). unparsable / out_of_range / truncated: % of scored answers. "
            "judging: the judging the numbers come from (the run's current one) and its "
            "template."
        )

with tab_drill:
    pick = url_selectbox(
        "Run (or only the labels)",
        [NO_RUN, *run_ids],
        key="pb_run",
        default=chosen_runs[0] if chosen_runs else NO_RUN,
        format_func=lambda r: run_label.get(r, r),
    )
    drill_run = pick if pick and pick != NO_RUN else None
    if drill_run:
        item_set = str(runs.loc[runs["run_id"] == drill_run, "item_set"].iloc[0])
        listing = cached(q.run_items, drill_run)
    else:
        sets = cached(q.item_sets)
        names = list(sets["name"]) if len(sets) else []
        item_set = (
            url_selectbox(
                "Item set",
                names,
                key="pb_set",
                default="processbench-sample" if "processbench-sample" in names else None,
            )
            or ""
        )
        listing = cached(q.set_items, item_set) if item_set else pd.DataFrame()
    if listing.empty:
        st.info("Nothing to show: no solutions (or responses) yet.")
    else:
        f1c, f2c = st.columns(2)
        with f1c:
            split = url_selectbox(
                "Split", ["all", *sorted(listing["split"].unique())], key="pb_split"
            )
        with f2c:
            outcome = url_radio(
                "Show",
                ["all", "wrong", "right"] if drill_run else ["all"],
                key="pb_outcome",
                horizontal=True,
            )
        shown = listing if split in (None, "all") else listing[listing["split"] == split]
        if drill_run and outcome != "all":
            scored = shown[shown["status"] == "ok"]
            shown = scored[scored["match"] == (outcome == "right")]
        table(shown, f"processbench_solutions_{drill_run or item_set}")
        ids = list(shown["item_id"])
        if ids:
            item_id = url_selectbox("Solution", ids, key="pb_item") or ids[0]
            detail = cached(q.solution_detail, item_set, item_id, drill_run)
            if detail:
                label = detail["label"]
                verdict = detail.get("verdict") or {}
                predicted = verdict.get("predicted_index")
                st.markdown(
                    f"**Problem** ({md_escape(detail['split'])}, generator "
                    f"{md_escape(detail['generator'] or '—')})"
                )
                show_text(detail["problem"])
                for i, step in enumerate(detail["steps"]):
                    marks = []
                    if label == i:
                        marks.append("◀ label: earliest wrong paragraph")
                    if predicted == i:
                        marks.append("◀ the critique's answer")
                    st.caption(f"paragraph {i}" + (" — " + " · ".join(marks) if marks else ""))
                    show_text(step)
                gold = "-1 (every paragraph correct)" if label == -1 else f"paragraph {label}"
                st.markdown(f"Label: **{md_escape(gold)}**")
                if verdict:
                    if verdict["status"] != "ok":
                        st.error("The model call failed; this solution is not scored.")
                        show_text(verdict.get("error"))
                    else:
                        right = "✅ right" if verdict.get("correct") else "❌ wrong"
                        st.markdown(
                            f"Verdict (judging {md_escape(verdict['judging'])}): "
                            f"**{md_escape(verdict.get('answer') or '?')}** — {right} · read as "
                            f"{md_escape(verdict.get('parse_status'))}"
                        )
                        st.caption("The critique, as the model wrote it:")
                        show_text(verdict.get("response"), height=400)
            source_caption(f"run {drill_run}" if drill_run else f"item set {item_set}")
