"""Proactive vs passive: per model, every taking-part benchmark's measures (its registry
`comparison`), proactive against passive, from published tables and runs side by side. What
each benchmark measures and how to read it comes from its contribution (labels, notes)."""

from __future__ import annotations

import streamlit as st

from core.registry import BENCHMARKS
from core.services import compare as pp
from core.services.charts import proactive_passive_bars, proactive_passive_scatter
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    md_escape,
    source_caption,
    url_multiselect,
    url_radio,
)
from pages.ui.formats import readable_table

HIDE_FAILED = "hide failed and empty runs"

st.title("⚖️ Proactive vs passive error handling")
_taking_part = pp.contributions()
st.caption(
    "**Proactive**: does the model notice an error in a question nobody asked it to check? "
    "**Passive**: does it find errors when asked to? Measures (each benchmark's own, from its "
    "package): " + "; ".join(", ".join(c.measures) for _, c in _taking_part) + "."
)

long = cached(pp.long_table)
overlap = pp.name_overlap(long)
st.info(
    "**Model names are shown as each source spells them and are never merged.** The papers ("
    + ", ".join(BENCHMARKS[name].label for name, _ in _taking_part)
    + ") evaluated different models, so a published model has blanks on the other sides. A "
    "model run here on several benchmarks under the same name lines up in one row. "
    + (
        f"Names with values on both sides: {', '.join(overlap['both'])}."
        if overlap["both"]
        else "No model name currently has values on both sides."
    )
)

kinds = url_radio(
    "Show", ["published and runs", "published", "runs"], key="pp_kind", horizontal=True
)
shown = long
if kinds == "published":
    shown = long[long["kind"] == "published"]
elif kinds == "runs":
    shown = long[long["kind"] == "run"]
measures = list(dict.fromkeys(shown["measure_label"]))
picked = url_multiselect("Measures", measures, key="pp_measures", default=measures)
shown = shown[shown["measure_label"].isin(picked)]
# (the measures offered are the same either way) failed runs and runs without an answer: hidden unless asked for (never picked for the per-model
# table either way: it holds each cell's latest answered run)
unusable = shown["run_state"].isin([pp.FAILED, pp.EMPTY])
all_runs = url_radio("Runs", [HIDE_FAILED, "all runs"], key="pp_runs", horizontal=True)
if all_runs == HIDE_FAILED:
    if unusable.any():
        hidden = ", ".join(dict.fromkeys(shown.loc[unusable, "source"].astype(str)))
        st.caption(md_escape(f"Hidden: failed runs and runs without an answer ({hidden})."))
    shown = shown[~unusable]

if len(shown) and bool(shown["weak_model"].fillna(False).astype(bool).any()):
    st.warning(WEAK_MODEL_NOTE)

wide = pp.wide_table(shown)
st.subheader("Per model")
readable_table(wide, "proactive_vs_passive_by_model", digits=1)
st.caption(
    "[published] columns come from the papers; [runs] columns hold the latest run of "
    "that model for that measure (every run is listed below with its judge). A blank "
    "means the source has no value for that name. A run's value is its benchmark's results "
    "page's own number, from the verdicts of the run's own judge — named in the judge column "
    "below, with its template — not the paper's judge."
)
for note in pp.notes():
    st.caption(note)
srcs = pp.papers(shown)
run_sources = list(shown.loc[shown["kind"] == "run", "source"])
if run_sources:
    srcs.append("runs " + ", ".join(run_sources))
source_caption(*srcs)

if len(shown):
    scores = shown[~shown["recall"].astype(bool)]
    recalls = shown[shown["recall"].astype(bool)]
    if len(scores):
        st.plotly_chart(proactive_passive_bars(scores), key="pp_bars")
        source_caption(*srcs)
        judges = sorted(set(scores.loc[scores["kind"] == "run", "judge"]) - {pp.NO_JUDGE})
        if judges:
            st.caption(
                "Judged run values, by: "
                + "; ".join(judges)
                + ". Published values: each paper's own judge, named in the `judge` column "
                "below."
            )
    if len(recalls):
        st.plotly_chart(
            proactive_passive_bars(
                recalls,
                title="Runs without control items: detection RECALL (not F1; precision "
                "unavailable), per model",
            ),
            key="pp_recall_bars",
        )
        source_caption(
            "runs "
            + ", ".join(recalls["source"])
            + " (judges: "
            + "; ".join(sorted(set(recalls["judge"])))
            + ")"
        )
    if len(wide.columns) > 2:
        pro_cols, pas_cols = pp.score_columns(shown, wide)  # F1, never recall
        both = [
            (x, y)
            for x in pro_cols
            for y in pas_cols
            if x != y and wide[[x, y]].dropna().shape[0] > 0
        ]
        if both:
            x, y = both[0]
            st.plotly_chart(proactive_passive_scatter(wide, x, y), key="pp_scatter")
            source_caption(*srcs)
else:
    st.info("Nothing to show for this choice.")

paired = cached(pp.paired_rows)
if all_runs == HIDE_FAILED and len(paired):
    bad = long.loc[long["run_state"].isin([pp.FAILED, pp.EMPTY]), "source"]
    paired = paired[~paired["source"].isin(set(bad))]
if len(paired):
    st.subheader("Same items, both ways (paired runs)")
    st.caption(
        "Runs that asked the same items proactively and passively: n items answered and "
        "judged both ways, both rates (percent), b = items handled proactively but not when "
        "asked, c = only when asked, p_value = McNemar's exact test of b against c (the "
        "Compare runs page's test)."
    )
    readable_table(paired, "proactive_vs_passive_paired", digits=3)

st.subheader("Every value with its source")
readable_table(shown.drop(columns=["benchmark", "weak_model"]), "proactive_vs_passive_long")
