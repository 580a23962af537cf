"""Mistake finding (BIG-Bench Mistake): the paper's Tables 4, 5, 9 with runs beside them, a task ×
model heatmap per method, and a trace drill-down with the gold and the predicted mistake step."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.benchmarks.bbm import queries as q
from core.benchmarks.bbm.charts import (
    MEASURE_LABELS,
    PUBLISHED_TABLE,
    SUBSET_LABELS,
    heatmap,
    method_split_bars,
)
from core.benchmarks.bbm.metrics import ACCURACY, WEIGHTED_F1
from core.benchmarks.bbm.paper_prompts import template_info
from core.benchmarks.bbm.prompts import METHOD_LABELS, METHODS
from core.engine.templates import STRUCTURED_NOTE, is_structured
from core.engine.templates import label as template_label
from core.services import run_choice
from core.stats import MIN_N
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    html_text,
    md_escape,
    show_text,
    source_caption,
    stats_table,
    table,
    url_multiselect,
    url_radio,
    url_selectbox,
)
from pages.ui.runs import start_run_panel

PAPER = "Tyen et al. 2024, “LLMs cannot find reasoning errors, but can correct them” (BIG-Bench Mistake)"

st.title("🔎 Mistake finding — BIG-Bench Mistake")
st.caption(
    "Passive error handling: given a chain-of-thought trace, can a model name the first wrong step "
    "(or say there is none)? Accuracy counts an answer right only if the location matches exactly. "
    "The weighted F1 (Table 5) asks instead whether “reports a mistake” predicts an incorrect "
    "final answer. Runs use this project's prompts (data/prompts/bbm/; zero-shot unless run with "
    "--shots, see each run's template id) unless marked [paper prompts] (`run bbm --prompts "
    "paper`: the paper's own 3-shot task-specific messages, template id bbm-paper/<method>); "
    "compare runs of our prompts with the paper's numbers with care."
)

runs = cached(q.bbm_runs)
run_ids = list(runs["run_id"]) if len(runs) else []
run_label = (
    {
        r["run_id"]: f"{r['run_id']} — {r['model']} · {r['method']} · {r['item_set']} · "
        f"{template_label(r['template_id'])}"
        + (" · [paper prompts]" if r["protocol"] == "paper" else "")
        + (" · [Dyck subsampled]" if r["dyck"].startswith("subsample") else "")
        for r in runs.to_dict("records")
    }
    if len(runs)
    else {}
)

with st.container(border=True):
    c1, c2, c3, c4 = st.columns([3, 2, 2, 2])
    with c1:
        chosen_runs = url_multiselect(
            "Runs beside the paper",
            run_ids,
            key="runs",
            default=cached(run_choice.default_runs, tuple(run_ids), 3),  # answered runs
            format_func=lambda r: run_label.get(r, r),
        )
    with c2:
        method = (
            url_selectbox(
                "Method",
                list(METHODS),
                key="method",
                default="direct_trace",
                format_func=lambda m: METHOD_LABELS.get(m, m),
            )
            or "direct_trace"  # never taken: METHODS is not empty
        )
    with c3:
        measure = url_radio(
            "Measure",
            [ACCURACY, WEIGHTED_F1],
            key="measure",
            format_func=lambda m: MEASURE_LABELS[m],
        )
    with c4:
        subsets = ["all"] if measure == WEIGHTED_F1 else list(SUBSET_LABELS)
        subset = url_radio("Traces", subsets, key="subset", format_func=SUBSET_LABELS.get)

if not run_ids:
    st.caption(
        "No BIG-Bench Mistake runs yet: start one below, or `python -m core run bbm "
        "--items bbm-sample --method direct_trace` (one method per run; see docs/benchmarks.md › "
        "BIG-Bench Mistake). With the local SmolLM2, the template "
        "bbm/direct_trace_structured.v1 (JSON output bounded by a schema — not the paper's "
        "protocol) keeps its answers readable."
    )
start_run_panel("bbm", "bbm", expanded=not run_ids)
metrics = cached(q.combined_metrics, tuple(chosen_runs))
chosen = runs[runs["run_id"].isin(chosen_runs)] if len(runs) else runs
if len(chosen) and bool(chosen["weak_model"].fillna(False).any()):
    st.warning(WEAK_MODEL_NOTE)
for w in cached(q.unparsed_warnings, tuple(chosen_runs)):
    st.warning(
        f"Run {w['run_id']}: {w['unparsable'] + w['ambiguous'] + w['out_of_range']} of "
        f"{w['scored']} answers ({100 * w['share']:.0f}%) could not be scored — "
        f"{w['unparsable']} unparsable, {w['ambiguous']} ambiguous, {w['out_of_range']} "
        "out of range (step 0 or beyond the last). "
        "They count as wrong, so its numbers say more about the answer format than about "
        "mistake finding."
    )

published_ref = PUBLISHED_TABLE.get((measure, subset))
sources = [f"{PAPER}, {published_ref}" if published_ref else ""]
sources += [f"run {r}" for r in chosen_runs]

tab_heat, tab_tables, tab_split, tab_trace = st.tabs(
    ["Heatmap", "Tables 4 · 5 · 9 and runs", "With vs without a mistake", "Trace drill-down"]
)

with tab_heat:
    fig = heatmap(metrics, method, measure, subset)
    st.plotly_chart(fig, key="bbm_heatmap")
    source_caption(*sources)
    if method == "cot_step":
        st.caption("– cells: the paper has no CoT (step) results for GPT-4-Turbo and Gemini Pro.")
    st.caption(
        "Overall (Table 4) = mean of the five task accuracies, as in the paper. "
        "† Dyck languages: every published Dyck cell uses the paper's 592-trace sample "
        "(88 correct / 504 incorrect final answers, Table 2); cells noted `subsampled` (*) "
        "used 300 traces (45 / 255)."
    )
    dyck_runs = (
        chosen[["run_id", "dyck"]] if len(chosen) else pd.DataFrame(columns=["run_id", "dyck"])
    )
    for label, part in (
        (
            "on a subsample drawn like the paper's (not its exact sample)",
            dyck_runs[dyck_runs["dyck"].str.startswith("subsample")],
        ),
        (
            "on every Dyck trace, not the paper's 592 sample",
            dyck_runs[dyck_runs["dyck"].str.startswith("all")],
        ),
    ):
        if len(part):
            st.caption(f"Dyck cells of run(s) {', '.join(part['run_id'])} are {label}.")
    if chosen_runs:
        run_rows = metrics[
            (metrics["kind"] == "run")
            & (metrics["task"] != "Overall")
            & (metrics["measure"] == ACCURACY)
            & (metrics["subset"] == "all")
        ]
        partial = run_rows.groupby("source")["task"].nunique()
        partial = partial[partial < 5]
        if len(partial):
            st.caption(
                "Runs on fewer than five tasks — their Overall is the mean over the tasks "
                "they have, not comparable with the paper's: "
                + ", ".join(f"{src} ({n} of 5)" for src, n in partial.items())
            )

with tab_tables:
    published = cached(q.published_table)
    for (meas, sub), ref in PUBLISHED_TABLE.items():
        st.subheader(f"{ref} — {MEASURE_LABELS[meas]}, {SUBSET_LABELS[sub]}")
        wide = q.paper_layout(metrics, meas, sub)
        table(wide, f"bbm_{ref.replace(' ', '_').lower()}_with_runs")
        source_caption(f"{PAPER}, {ref}", *[f"run {r}" for r in chosen_runs])
        if ref == "Table 4":
            t9 = cached(q.table9_consistency)
            bad9 = t9[t9["consistent"] == False]  # noqa: E712 (None = not checkable)
            st.markdown(
                "**Consistency: Table 9a/9b with Table 2's counts vs Table 4** — "
                "T4 = (9a × traces without a mistake + 9b × traces with one) / traces"
            )
            if len(bad9):
                worst = bad9.reindex(bad9["difference"].abs().sort_values(ascending=False).index)
                st.warning(
                    f"{len(bad9)} of {int(t9['consistent'].notna().sum())} checkable cells do not "
                    "reproduce within rounding (±0.015): "
                    + "; ".join(
                        f"{r['task']} · {r['model']} · {METHOD_LABELS.get(r['method'], r['method'])}: "
                        f"{r['recomputed_table_4']:.2f} vs {r['published_table_4']:.2f} "
                        f"({r['difference']:+.2f})"
                        for r in worst.to_dict("records")
                    )
                    + ". Shown as printed."
                )
            table(t9, "bbm_consistency_table9_vs_table4")
            source_caption(f"{PAPER}, Tables 2, 4, 9a, 9b (recomputed here)")
            check = cached(q.overall_consistency)
            bad = check[~check["consistent"]]
            if len(bad):
                st.warning(
                    "Table 4's Overall is the mean of the five task cells, except: "
                    + "; ".join(
                        f"{r['model']} {METHOD_LABELS.get(r['method'], r['method'])} prints "
                        f"{r['printed_overall']:.2f} where its tasks average "
                        f"{r['mean_of_tasks']:.2f}"
                        for r in bad.to_dict("records")
                    )
                    + ". Shown as printed; run Overalls use the mean."
                )
    st.subheader("Published cells, as transcribed (with notes)")
    table(published, "bbm_published_long")
    source_caption(f"{PAPER}, Tables 4, 5, 9 (published/bigbench_mistake_accuracy.csv)")
    if chosen_runs:
        st.subheader("Chosen runs: protocol and Dyck sample")
        table(
            chosen[
                ["run_id", "model", "method", "item_set", "protocol", "template_id", "dyck"]
            ].assign(template_id=chosen["template_id"].map(template_label)),
            "bbm_run_protocols",
        )
        st.caption(
            "protocol `paper` = the paper's own 3-shot prompts (`--prompts paper`), "
            "`ours` = data/prompts/bbm/ templates; template_id as stored with the run "
            "(ids stored before the one-template format, e.g. bbm/direct_trace_v1, name "
            "the same file as bbm/direct_trace.v1)."
        )
        st.subheader("Run metrics (long format, as `python -m core metrics bbm`)")
        run_rows = metrics[metrics["kind"] == "run"].drop(columns=["kind"])
        greyed = stats_table(run_rows, "bbm_run_metrics")
        st.caption(
            "n = traces the value rests on; ci_low – ci_high = its 95% interval (Wilson for "
            "accuracy and the parse shares, a bootstrap over traces for weighted F1, Wilson on "
            "Kish's effective n for Overall; see docs/statistics.md)."
            + (
                f" Grey rows ({greyed}) rest on fewer than {MIN_N} traces: too few for a "
                "stable value."
                if greyed
                else ""
            )
        )
        counts = pd.DataFrame([{"run_id": r, **cached(q.run_counts, r)} for r in chosen_runs])
        st.caption(
            "Per run: responses scored, failed (left out of scores), unparsable answers "
            "(wrong for accuracy, “no mistake reported” for F1), ambiguous answers (claims "
            "that do not resolve to one answer; counted like unparsable), out-of-range step numbers "
            "(0 or beyond the trace's last step; wrong for accuracy), partly parsed step "
            "answers."
        )
        table(counts, "bbm_run_counts")

with tab_split:
    cols = sorted(set(q.paper_layout(metrics, ACCURACY, "traces_with_mistake")["model"]))
    if cols:
        pick = (
            url_selectbox(
                "Model / run", cols, key="split_model", default="GPT-4" if "GPT-4" in cols else None
            )
            or cols[0]  # never taken: cols is not empty
        )
        st.plotly_chart(method_split_bars(metrics, pick), key="bbm_split")
        is_run = " · " in pick
        source_caption(f"run {pick.split(' · ')[-1]}" if is_run else f"{PAPER}, Table 9a/9b")
        st.caption(
            "Mean over tasks. The paper's Figure 1 shows the same trade-off: step-level "
            "methods find more mistakes but call more correct traces wrong."
        )
    else:
        st.info("No split results to show.")

with tab_trace:
    sets = cached(q.item_sets)
    if not len(sets) and not run_ids:
        st.info("No BIG-Bench Mistake traces yet: `python -m core import bbm FILE.jsonl`.")
    else:
        trace_run = url_selectbox(
            "Run (or only the gold annotation)",
            ["(no run)"] + run_ids,
            key="trace_run",
            default=chosen_runs[0] if chosen_runs else None,
            format_func=lambda r: run_label.get(r, r),
        )
        if trace_run and trace_run != "(no run)":
            item_set = str(runs.loc[runs["run_id"] == trace_run, "item_set"].iloc[0])
            listing = cached(q.run_trace_table, trace_run)
            if bool(runs.loc[runs["run_id"] == trace_run, "weak_model"].fillna(False).iloc[0]):
                st.warning(WEAK_MODEL_NOTE)
        else:
            trace_run = None
            set_names = list(sets["name"]) if len(sets) else []
            item_set = (
                url_selectbox(
                    "Item set",
                    set_names,
                    key="trace_set",
                    default="bbm-sample" if "bbm-sample" in set_names else None,
                )
                or ""  # no item set yet
            )
            listing = cached(q.set_items, item_set) if item_set else pd.DataFrame()
        if listing is None or listing.empty:
            st.info("This run has no responses yet.")
        else:
            f1c, f2c = st.columns(2)
            with f1c:
                task_filter = url_selectbox(
                    "Task", ["all"] + sorted(listing["task"].unique()), key="trace_task"
                )
            with f2c:
                outcome = url_radio(
                    "Show",
                    ["all", "wrong", "right"] if trace_run else ["all"],
                    key="trace_outcome",
                    horizontal=True,
                )
            shown = listing
            if task_filter and task_filter != "all":
                shown = shown[shown["task"] == task_filter]
            if trace_run and outcome == "wrong":
                shown = shown[shown["location_correct"] == False]  # noqa: E712
            elif trace_run and outcome == "right":
                shown = shown[shown["location_correct"] == True]  # noqa: E712
            table(shown, f"bbm_traces_{trace_run or item_set}")
            ids = list(shown["item_id"])
            if ids:
                item_id = url_selectbox("Trace", ids, key="trace")
                detail = cached(q.trace_detail, item_set, item_id, trace_run)
                if detail:
                    st.markdown(f"**Question** ({md_escape(detail['task'])})")
                    show_text(detail["input"])
                    pred = detail.get("prediction") or {}
                    scores = pred.get("scores") or {}
                    gold = detail["gold_index"]
                    p_idx = scores.get("predicted_index") if pred else None
                    answers = scores.get("step_answers") or []
                    legend = (
                        "<span class='bbm-gold-key' style='background:#fde2e1;padding:2px 6px;"
                        "border-radius:4px'>gold: first mistake</span> "
                        "<span class='bbm-pred-key' style='background:#fff3c4;padding:2px 6px;"
                        "border-radius:4px'>predicted by the model</span>"
                    )
                    st.markdown(legend, unsafe_allow_html=True)
                    parts = []
                    for i, step in enumerate(detail["steps"]):
                        is_gold = gold is not None and i == gold
                        is_pred = p_idx is not None and i == p_idx
                        bg = (
                            "#fde2e1"
                            if is_gold and not is_pred
                            else "#fff3c4"
                            if is_pred and not is_gold
                            else "#d8f3dc"
                            if is_gold and is_pred
                            else "transparent"
                        )
                        tags = []
                        if is_gold:
                            tags.append("◀ gold mistake")
                        if is_pred:
                            tags.append("◀ predicted mistake")
                        if i < len(answers):
                            tags.append(f"model said: {answers[i]}")
                        tag = f" <b>{html_text(' · '.join(tags))}</b>" if tags else ""
                        cls = " ".join(
                            c for c, on in (("bbm-gold", is_gold), ("bbm-pred", is_pred)) if on
                        )
                        parts.append(
                            f"<div class='bbm-step {cls}' data-step='{i + 1}' "
                            f"style='background:{bg};padding:4px 8px;margin:2px 0;"
                            f"border-radius:4px;font-family:monospace;white-space:pre-wrap'>"
                            f"Thought {i + 1}: {html_text(step)}{tag}</div>"
                        )
                    st.markdown("\n".join(parts), unsafe_allow_html=True)
                    gold_txt = "no mistake" if gold is None else f"Thought {gold + 1}"
                    line = (
                        f"Gold: **{gold_txt}** · final answer {md_escape(repr(detail['answer']))}, "
                        f"target {md_escape(repr(detail['target']))} "
                        f"({'correct' if detail['answer_correct'] else 'incorrect'})"
                    )
                    if pred:
                        p_txt = "no mistake" if p_idx is None else f"Thought {p_idx + 1}"
                        if scores.get("parse_status") not in ("ok", "partial"):
                            p_txt = f"unreadable answer ({scores.get('parse_status')})"
                        ok = scores.get("location_correct")
                        line += (
                            f"  \nPredicted ({METHOD_LABELS.get(pred['method'], pred['method'])}): "
                            f"**{p_txt}** — {'✅ right' if ok else '❌ wrong'}"
                            f" · parse: {md_escape(scores.get('parse_status'))}"
                        )
                        if pred.get("status") != "ok":
                            line += f" · response failed: {md_escape(pred.get('error'))}"
                    st.markdown(line)
                    if pred:
                        with st.expander("Raw model output"):
                            show_text(pred.get("response") or "")
                    if trace_run:
                        stored = runs.loc[runs["run_id"] == trace_run, "template_id"].iloc[0]
                        note = f" — {STRUCTURED_NOTE}" if is_structured(stored) else ""
                        with st.expander(f"Prompt template ({stored}){note}"):
                            info = template_info(stored)
                            st.caption(info["caption"])
                            for name, text in info["sections"].items():
                                st.markdown(f"`=== {name} ===`")
                                st.code(text, language=None, wrap_lines=True)
                    source_caption(f"run {trace_run}" if trace_run else f"item set {item_set}")
