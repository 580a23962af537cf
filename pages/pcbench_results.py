"""PCBench results: premise-critique rates per error type × difficulty, proactive vs assisted,
from the paper's per-model statistics beside runs, and one run's problem with both responses
and the judge's verdicts. Filters live in the URL (?pc_variant, ?pc_model, ?pc_runs, ?pc_run,
?pc_item, ?pc_judging)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.benchmarks.pcbench import VARIANTS, charts, metrics, queries
from core.benchmarks.pcbench.items import DIFFICULTIES, ERROR_TYPE_LABELS
from core.benchmarks.pcbench.published import TITLE as PUBLISHED_TITLE
from core.registry import get
from core.services import jobs, run_choice
from core.stats import MIN_N
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

BENCHMARK = get("pcbench")
st.title(BENCHMARK.results_page.title)
st.caption(
    "Each problem has a flawed premise (four error types × three difficulty levels). "
    "**Proactive**: the problem is asked as is. **Assisted**: it ends with the paper's "
    "instruction to check the premises. The judge (the paper's prompt) says whether a response "
    "critiques the flawed premise; the rate is the percent of problems it does, with a Wilson "
    f"95% interval. Cells with fewer than {MIN_N} problems are grey."
)

variant = url_radio("Variant", list(VARIANTS), key="pc_variant", horizontal=True)
COLUMNS = [*DIFFICULTIES, metrics.ALL]


def grid(table_: pd.DataFrame, value: str) -> pd.DataFrame:
    part = table_[(table_["variant"] == variant) & (table_["error_type"] != metrics.ALL)]
    wide = part.pivot(index="error_type", columns="difficulty", values=value)
    return wide.reindex(
        index=[t for t in ERROR_TYPE_LABELS if t in wide.index],
        columns=[c for c in COLUMNS if c in wide.columns],
    )


# -- published --------------------------------------------------------------------------------
st.header("Published (the paper)")
overview = cached(queries.published_overview)
if overview.empty:
    st.info("No published table loaded (`python -m core init`).")
else:
    st.caption(
        "Per model over all 1,200 flawed problems: proactive vs assisted critique rate (percent) "
        "and mean response length in tokens. Most models rarely critique a flawed premise "
        "unless asked to check it."
    )
    table(overview, "pcbench_published_overview")
    source_caption(PUBLISHED_TITLE)
    st.caption(
        "The repository's README shows its results table as an image only; these are the "
        "numbers of its per-model statistics files (evaluation/statistics), counts as published."
    )
    published = cached(metrics.published_metrics)
    by_model = published[
        (published["variant"] == variant)
        & (published["difficulty"] == metrics.ALL)
        & (published["error_type"] != metrics.ALL)
    ]
    models = list(overview["model"])
    st.plotly_chart(
        charts.rate_heatmap(
            by_model.pivot(index="error_type", columns="model", values="rate").reindex(
                index=list(ERROR_TYPE_LABELS), columns=models
            ),
            by_model.pivot(index="error_type", columns="model", values="n"),
            f"Every model — {variant}: critique rate by error type (all difficulties)",
        ),
        key="pc_pub_models_heatmap",
    )
    source_caption(PUBLISHED_TITLE)
    model = url_selectbox("Model", cached(queries.published_models), key="pc_model")
    if model:
        mine = published[published["model"] == model]
        st.plotly_chart(
            charts.rate_heatmap(
                grid(mine, "rate"), grid(mine, "n"), f"{model} — {variant}: critique rate"
            ),
            key="pc_pub_heatmap",
        )
        source_caption(PUBLISHED_TITLE)

    checks = cached(queries.authors_consistency)
    if not checks.empty:
        st.subheader("Consistency: the authors' own verdicts")
        st.caption(
            "Runs imported from the authors' released verdicts (evaluation/eval_result, "
            "`python -m core import results`), recounted here beside their statistics: the "
            "same counts mean the verdicts are the ones the published table counts."
        )
        table(checks, "pcbench_authors_consistency")
        source_caption(PUBLISHED_TITLE + "; the authors' eval_result files")

# -- runs -------------------------------------------------------------------------------------
st.header("Runs")
runs_df = cached(jobs.list_runs, BENCHMARK.name)
run_ids = list(runs_df["run_id"]) if len(runs_df) else []
if not run_ids:
    st.info(
        "No PCBench run yet: start one from the Runs page, or "
        "`python -m core run pcbench --items pcbench-sample`."
    )
    st.stop()
chosen = url_multiselect(
    "Runs",
    run_ids,
    key=BENCHMARK.results_page.run_param,
    default=cached(run_choice.default_runs, tuple(run_ids), 2),  # answered runs only
)
CURRENT = "(each run's current judging)"
picked = url_selectbox(
    "Judging", [CURRENT, *cached(queries.judgings, tuple(chosen))], key="pc_judging"
)
judging = None if picked in (None, CURRENT) else picked
if chosen:
    if runs_df[runs_df["run_id"].isin(chosen)]["weak_model"].fillna(False).astype(bool).any():
        st.warning(WEAK_MODEL_NOTE)
    try:
        frames = [cached(metrics.run_metrics, r, judging) for r in chosen]
    except ValueError as exc:
        st.error(md_escape(str(exc)))
        st.stop()
    all_rows = pd.concat(frames, ignore_index=True)
    overall = all_rows[
        (all_rows["error_type"] == metrics.ALL) & (all_rows["difficulty"] == metrics.ALL)
    ]
    st.subheader("Overall, proactive vs assisted")
    table(overall, "pcbench_run_overall")
    for run_id, frame in zip(chosen, frames):
        if (frame["variant"] == variant).any():
            st.plotly_chart(
                charts.rate_heatmap(
                    grid(frame, "rate"), grid(frame, "n"), f"{run_id} — {variant}: critique rate"
                ),
                key=f"pc_run_heatmap_{run_id}",
            )
            judged = frame["judging"].iloc[0], frame["judge_template"].iloc[0]
            source_caption(f"run {run_id}, judging {judged[0]} ({judged[1]})")
    with st.expander("Every cell (error type × difficulty × variant)"):
        table(all_rows, "pcbench_run_metrics")

# -- drill-down -------------------------------------------------------------------------------
st.header("One problem, both responses")
run = url_selectbox(
    "Run", run_ids, key="pc_run", default=cached(run_choice.default_run, tuple(run_ids))
)
if run:
    items = cached(queries.run_items, run)
    table(items, f"pcbench_items_{run}")
    item_ids = list(items["item_id"])
    item = url_selectbox("Problem", item_ids, key="pc_item")
    if item:
        info = cached(queries.problem, run, item)
        st.caption(
            md_escape(
                f"{ERROR_TYPE_LABELS.get(str(info.get('error_type')), info.get('error_type'))}"
                f" · {info.get('difficulty')}"
            )
        )
        show_text(info.get("prompt"), label="Problem (flawed premise)")
        show_text(info.get("gold"), label="The flaw, as the judge is told it")
        if info.get("normal_query"):
            with st.expander("The sound problem"):
                show_text(info.get("normal_query"))
        answers = cached(queries.responses, run, item)
        for row in answers.to_dict("records"):
            st.subheader(f"{row['variant']}")
            if row["response_status"] != "ok":
                show_text(row["error"], label="Failed")
                continue
            show_text(row["response"], label="Response")
            verdict = (
                "not judged"
                if row["verdict_status"] is None or pd.isna(row["verdict_status"])
                else "critiques the premise"
                if row["critique"] is True
                else "does not critique the premise"
                if row["critique"] is False
                else f"verdict {row['verdict_status']}"
            )
            st.caption(md_escape(f"Judge ({row['judging']}, {row['judge_model']}): {verdict}"))
            show_text(row["explanation"], label="Judge's basis")
