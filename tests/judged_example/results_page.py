"""Results page of the judged example: per run (in the URL: ?runs=A,B) the judge's numbers
under the run's current judging (or ?judging=NAME), and one run's verdicts (?item_run=RUN)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.services import jobs
from pages.ui.common import (
    cached,
    md_escape,
    show_text,
    table,
    url_multiselect,
    url_selectbox,
)
from tests.judged_example import BENCHMARK
from tests.judged_example.metrics import metrics, verdicts

st.title(BENCHMARK.results_page.title)
runs_df = cached(jobs.list_runs, BENCHMARK.name)
run_ids = list(runs_df["run_id"]) if len(runs_df) else []
if not run_ids:
    st.info("No runs yet: `python -m core run judged --items SET` (or the Runs page).")
    st.stop()
chosen = url_multiselect("Runs", run_ids, key="runs", default=run_ids[:4])
judging = st.query_params.get("judging") or None
if chosen:
    try:
        table(pd.concat([cached(metrics, r, judging) for r in chosen]), "judged_metrics")
    except ValueError as exc:
        st.error(md_escape(str(exc)))

st.subheader("Verdicts of one run")
run = url_selectbox("Run", run_ids, key="item_run")
if run:
    frame = cached(verdicts, run)
    table(frame.drop(columns=["response"]), f"judged_verdicts_{run}")
    item = st.selectbox("Item", list(frame["item_id"]), key="item_pick")
    if item:
        show_text(frame.loc[frame["item_id"] == item, "response"].iloc[0], label="Response")
