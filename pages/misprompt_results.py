"""Mis-prompt results: the published tables as heatmaps and tables, with runs beside them.

Views (tabs, kept in the URL like every filter): categories (Tables 7–11), settings (Table 6),
judge vs human (Table 12 vs Table 6), tables with filters, consistency checks of the published
tables, and runs (per-item drill-down, comparison of two runs, download).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any, cast

import pandas as pd
import streamlit as st

from core.benchmarks.misprompt import agreement, charts, queries
from core.benchmarks.misprompt.metrics import LABELS, METRICS, RECALL_SUFFIX
from core.benchmarks.misprompt.published import SETTING_LABELS, SETTING_ORDER
from core.benchmarks.misprompt.taxonomy import PRIMARY, SECONDARY
from core.services import run_choice
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    cached_figure,
    download,
    md_escape,
    show_text,
    source_caption,
    table,
    url_multiselect,
    url_radio,
    url_selectbox,
)
from pages.ui.runs import start_run_panel

st.title("Mis-prompt results")
st.caption(
    "Does a model notice, on its own, that a question contains an error? F1 in percent per judge "
    "label: erroneous prompts give TP/FN, error-free control questions give FP; a "
    "category is scored as if paired 1:1 with controls (FP rate × its size). Runs without "
    "controls show recall, marked as such."
)

combined, runs = cached(queries.misprompt_page_data)
if combined.empty:
    st.warning(
        "Nothing to show: no published results and no runs. Run `python -m core init` to "
        "load the papers' tables."
    )
    st.stop()

with st.sidebar:
    st.subheader("Filters")
    metric = (
        url_selectbox(
            "Label", list(METRICS), key="label", default="average", format_func=charts.metric_title
        )
        or "average"  # never taken: METRICS is not empty
    )
    run_labels = dict(zip(runs["run_id"], runs["row_label"])) if len(runs) else {}
    shown_runs = url_multiselect(
        "Runs shown (in panels apart from the published)",
        list(run_labels),
        key="runs",
        format_func=lambda r: run_labels.get(r, r),
    )

shown = runs[runs["run_id"].isin(shown_runs)] if len(runs) else runs
MIN_N = queries.MIN_CELL_N
_with_cells: dict[str, pd.DataFrame] = {}


def with_cells() -> pd.DataFrame:
    """The published rows and the shown runs' cells with their n and 95% interval (published
    rows stay as printed). Computed on first use: a published heatmap is drawn before the
    runs' bootstrap (seconds on a cold cache), and views without run cells never compute it."""
    if "frame" not in _with_cells:
        cells = cached(queries.run_cells, tuple(shown_runs))
        _with_cells["frame"] = queries.with_run_cells(combined, cells)
    return _with_cells["frame"]


def run_sources(frame: pd.DataFrame) -> str:
    """'runs a, b in this database (judge: …)', the judge and template read from the rows shown
    (each run cell carries its judging's), so a caption never names another judging."""
    part = frame[frame["origin"] == "run"] if "origin" in frame else frame.iloc[0:0]
    ids = sorted(set(part["source"]))
    if not ids:
        return ""
    if "judge_model" not in part or "judge_template" not in part:
        part = shown[shown["run_id"].isin(ids)]
    judges = sorted(
        {
            f"{'?' if pd.isna(j) else j}, {queries.template_name(t)}"
            for j, t in zip(part["judge_model"], part["judge_template"])
        }
    )
    more = f" … (+{len(ids) - 6})" if len(ids) > 6 else ""
    return f"runs {', '.join(ids[:6])}{more} in this database" + (
        f" (judge: {'; '.join(judges)})" if judges else ""
    )


def weak_note(frame: pd.DataFrame) -> None:
    ids = set(frame.loc[frame["origin"] == "run", "source"]) if "origin" in frame else set(frame)
    if len(shown) and shown[shown["run_id"].isin(ids)]["weak_model"].any():
        st.warning(WEAK_MODEL_NOTE)


def recall_note(frame: pd.DataFrame) -> None:
    if frame["metric"].str.endswith(RECALL_SUFFIX).any():
        st.info(
            "Runs without control items are shown apart, as **recall**: precision is "
            "unavailable there, so the value is recall, not F1."
        )


def published_part(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["origin"] == "published"]


def run_panels(
    frame: pd.DataFrame, x: str, x_title: str, what: str, key: str, x_order: list[str] | None = None
) -> None:
    """The shown runs' cells of a view, apart from the published heatmap: F1 and recall (runs
    without controls) in separate heatmaps with their own colour scales; n, interval in hover."""
    part = frame[frame["origin"] == "run"]
    if part.empty:
        st.caption("No run shown here (choose runs in the sidebar).")
        return
    weak_note(part)
    for recall in (False, True):
        sub = part[part["metric"].str.endswith(RECALL_SUFFIX) == recall]
        if sub.empty:
            continue
        kind = "recall (no control items: precision unavailable)" if recall else "F1"
        st.plotly_chart(
            cached_figure(
                (key, recall, metric, tuple(shown_runs)),
                partial(
                    charts.run_heatmap,
                    sub,
                    x=x,
                    x_order=x_order,
                    recall=recall,
                    min_n=MIN_N,
                    x_title=x_title,
                    title=f"Runs in this database — {what} — {kind} — "
                    f"{charts.metric_title(metric).removesuffix(' — recall')}",
                ),
            ),
            key=f"{key}_{'recall' if recall else 'f1'}",
        )
        source_caption(run_sources(sub))
        low = int(sub["low_n"].sum())
        st.caption(
            f"Hover a cell for its 95% bootstrap interval and n (erroneous items in the "
            f"cell, control items of the run). Grey cells ({low}) have fewer than "
            f"{MIN_N} erroneous items (n<{MIN_N}): too few for a stable value."
            if low
            else "Hover a cell for its 95% bootstrap interval and n (erroneous "
            "items in the cell, control items of the run)."
        )


views = st.tabs(
    ["Categories", "Settings", "Judge vs human", "Tables", "Consistency", "Runs"],
    key="view",
    bind="query-params",
)

# -- Categories: Tables 7–10 (primary) and Table 11 (secondary) ------------------------------------
if views[0].open:
    with views[0]:
        # one level at a time: five heatmaps (two of them a row per run) drawn at once kept the
        # browser busy ~0.4-1 s before any chart showed; the other level is one click away
        level = url_radio(
            "Category level",
            ["primary", "secondary"],
            key="level",
            horizontal=True,
            format_func=lambda v: {
                "primary": "Primary categories (Tables 7–10)",
                "secondary": "Secondary categories (Table 11)",
            }.get(v, v),
        )
        if level == "primary":
            # the paper's Avg cells that its own model rows do not give (Consistency view)
            from core.benchmarks.misprompt.consistency import avg_row_mismatches

            avg_off = avg_row_mismatches(cached(queries.consistency_checks), metric)
            st.plotly_chart(
                cached_figure(
                    ("primary_heatmap", metric),
                    lambda: charts.mark_cells(
                        charts.primary_heatmap(
                            published_part(queries.view_primary(combined, metric)),
                            metric,
                            PRIMARY,
                            title=f"Published (paper) — F1 by primary category — "
                            f"{charts.metric_title(metric)}",
                        ),
                        avg_off,
                        "Avg",
                        "The paper's Avg cell differs from the mean of its model rows",
                    ),
                ),
                key="primary_heatmap",
            )
            source_caption(
                "Mis-prompt paper, Tables 7–10 (13 models, zero-shot, GPT-4o judge; "
                "'Avg' is the paper's own row)"
            )
            if len(avg_off):
                st.caption(
                    "≠ under an Avg cell: the paper's printed Avg is not the mean of its "
                    "model rows — "
                    + "; ".join(
                        f"{c}: printed {p:.1f}, mean of the rows {r:.1f}"
                        for c, p, r in zip(
                            avg_off["category"], avg_off["published"], avg_off["recomputed"]
                        )
                    )
                    + " (the Consistency view lists every check)."
                )
            data = queries.view_primary(with_cells(), metric)
            run_panels(
                data,
                "category",
                "Primary error category",
                "by primary category",
                "primary_runs",
                PRIMARY,
            )
            recall_note(data)
        else:
            data2 = queries.view_secondary(with_cells(), metric)
            st.plotly_chart(
                cached_figure(
                    ("secondary_heatmap", metric),
                    lambda: charts.secondary_heatmap(
                        published_part(data2),
                        metric,
                        SECONDARY,
                        title=f"Published (paper) — F1 by secondary category — "
                        f"{charts.metric_title(metric)}",
                    ),
                ),
                key="secondary_heatmap",
            )
            source_caption("Mis-prompt paper, Table 11 (GPT-4o, zero-shot, GPT-4o judge)")
            run_panels(
                data2,
                "category",
                "Secondary error category",
                "by secondary category",
                "secondary_runs",
                SECONDARY,
            )
            t11 = combined[combined["source"] == "misprompt:T11"]
            if len(t11):
                st.plotly_chart(
                    cached_figure(
                        ("t11_heatmap",),
                        lambda: charts.heatmap(
                            t11.assign(metric=t11["metric"].map(charts.metric_title)),
                            x="metric",
                            y="category",
                            z="f1",
                            x_order=[charts.metric_title(m) for m in METRICS],
                            y_order=SECONDARY,
                            title="Published (paper) — GPT-4o: every label by secondary category",
                            x_title="Judge label",
                            y_title="Secondary error category",
                        ),
                    ),
                    key="t11_heatmap",
                )
                source_caption("Mis-prompt paper, Table 11 (GPT-4o, zero-shot, GPT-4o judge)")
            recall_note(data2)

# -- Settings: Table 6 ------------------------------------------------------------------------------
if views[1].open:
    with views[1]:
        settings = [s for s in SETTING_ORDER]
        order = [SETTING_LABELS[s] for s in settings]

        def by_setting(frame: pd.DataFrame) -> pd.DataFrame:
            data = queries.view_settings(frame, metric, "judge")
            return data.assign(setting=data["setting"].map(lambda s: SETTING_LABELS.get(s, s)))

        fig = cached_figure(
            ("settings_heatmap", metric),
            lambda: charts.settings_heatmap(
                published_part(by_setting(combined)),
                metric,
                order,
                title=f"Published (paper) — F1 by setting — {charts.metric_title(metric)}",
            ),
        )
        st.plotly_chart(fig, key="settings_heatmap")
        data = by_setting(with_cells())
        source_caption(
            "Mis-prompt paper, Table 6 (13 models × zero-shot, 1-shot, 3-shot, CoT, "
            "SFT; SFT only for six open models; GPT-4o judge)"
        )
        run_panels(
            data, "setting", "Setting", "by setting (all categories)", "settings_runs", order
        )
        recall_note(data)

# -- Judge vs human: Table 12 vs Table 6 ----------------------------------------------------------
if views[2].open:
    with views[2]:
        diff, mad = cached(queries.judge_human_published)
        pair = queries.view_judge_vs_human(with_cells(), metric)
        pair = pair.assign(setting=pair["setting"].map(lambda s: SETTING_LABELS.get(s, s)))
        order = [SETTING_LABELS[s] for s in SETTING_ORDER]
        run_pair = pair[pair["origin"] == "run"]
        pair = pair[pair["origin"] == "published"]
        c1, c2, c3 = st.columns(3)
        c1.metric(
            "Mean |human − judge|",
            f"{mad['with_average']:.2f}",
            help="Tables 12 vs 6: all published cells, the six labels and the Avg column",
        )
        c2.metric(
            "Six labels only",
            f"{mad['six_labels']:.2f}",
            help=f"{mad['cells']} cells (the Avg column left out)",
        )
        c3.metric("Paper reports", f"{mad['paper']:.2f}")
        if len(pair):
            st.caption(
                f"{charts.metric_title(metric)}: mean |human − judge| over the "
                f"{len(pair)} published cells shown = {pair['difference'].abs().mean():.2f}"
            )
        left, right = st.columns(2)
        with left:
            st.plotly_chart(
                charts.settings_heatmap(
                    pair.rename(columns={"judge": "f1"}),
                    metric,
                    order,
                    title=f"Published — {charts.metric_title(metric)} F1 — GPT-4o judge",
                ),
                key="judge_heatmap",
            )
            source_caption("Mis-prompt paper, Table 6 (judge)")
        with right:
            st.plotly_chart(
                charts.settings_heatmap(
                    pair.rename(columns={"human": "f1"}),
                    metric,
                    order,
                    title=f"Published — {charts.metric_title(metric)} F1 — human evaluation",
                ),
                key="human_heatmap",
            )
            source_caption("Mis-prompt paper, Table 12 (human evaluation)")
        st.plotly_chart(charts.difference_heatmap(pair, metric, order), key="difference_heatmap")
        source_caption("Mis-prompt paper, Table 12 − Table 6, cell by cell")
        if len(run_pair):
            st.subheader("Runs in this database: judge vs majority human labels")
            table(run_pair, "judge_vs_human_runs")
            source_caption(
                "runs: judge verdicts (judge and template in the run label) and "
                "majority human labels from this database's audits"
            )
        with st.expander("All cells (every label)"):
            table(diff, "judge_vs_human_published")

# -- Tables ----------------------------------------------------------------------------------------
if views[3].open:
    with views[3]:
        full = with_cells()
        c1, c2, c3 = st.columns(3)
        with c1:
            sources = url_multiselect(
                "Sources",
                sorted(
                    full["source"].unique(),
                    key=lambda s: (not s.startswith("misprompt"), len(s), s),
                ),
                key="t_src",
                default=[],
                format_func=lambda s: queries.source_title(s),
            )
            level = url_radio(
                "Category level", ["all", "primary", "secondary"], key="t_level", horizontal=True
            )
        with c2:
            models = url_multiselect(
                "Models / runs",
                list(dict.fromkeys(full["row_label"])),
                key="t_models",
                default=[],
            )
            evaluator = url_radio(
                "Evaluator", ["any", "judge", "human"], key="t_eval", horizontal=True
            )
        with c3:
            settings = url_multiselect("Settings", SETTING_ORDER, key="t_set", default=[])
            metrics = url_multiselect(
                "Metrics (empty = the sidebar's label)",
                list(METRICS),
                key="t_met",
                default=[],
                format_func=charts.metric_title,
            )
        layout = url_radio(
            "Layout",
            ["by model and category (wide)", "one row per cell (long)"],
            key="t_layout",
            horizontal=True,
        )
        filtered = queries.view_filter(
            full,
            tuple(sources),
            tuple(models),
            tuple(settings),
            level,
            tuple(metrics) or (metric,),
            None if evaluator == "any" else evaluator,
        )
        weak_note(filtered)
        shown_frame = (
            queries.view_by_model_category(filtered) if layout.startswith("by") else filtered
        )
        st.caption(
            queries.shown_caption(shown_frame, len(filtered))
            + ("" if metrics else f" Label: {charts.metric_title(metric)} (sidebar).")
            + " Other empty filters mean everything. `origin` says whether a row is the "
            "paper's (published) or a run's; run rows carry their 95% bootstrap interval "
            "(ci_low, ci_high), n (n_error erroneous items in the cell, n_control "
            f"controls), low_n (n < {MIN_N}), judge and judge template. Metric names "
            "ending in _recall are recall (a run without controls), not F1."
        )
        table(shown_frame, "misprompt_f1")
        tables = sorted(
            {int(s.split("T")[-1]) for s in filtered["source"] if s.startswith("misprompt:T")}
        )
        source_caption(
            "Mis-prompt paper, Tables " + ", ".join(map(str, tables)) if tables else "",
            run_sources(filtered),
        )

# -- Consistency ---------------------------------------------------------------------------------
if views[4].open:
    with views[4]:
        st.markdown(
            "Recomputed from the published numbers: each **Avg row** (mean over the 13 models), "
            "each **Avg column** (mean of the six labels), Table 10's Avg row against Table 9's, "
            "**Table 4** against the GPT-4o rows of **Tables 7–10**, and Table 3 against Table 6's "
            "zero-shot rows, and **Table 2**'s stated total (14,969) against the sum of its 14 "
            "cells. Recomputed values are rounded to 2 decimals; a difference above 0.01 "
            "is a mismatch."
        )
        checks = cached(queries.consistency_checks)
        from core.benchmarks.misprompt.consistency import summary

        st.dataframe(summary(checks), hide_index=True, width="stretch")
        only = url_radio("Show", ["mismatches", "all checked cells"], key="c_show", horizontal=True)
        frame = checks[checks["mismatch"]] if only == "mismatches" else checks
        table(frame, "misprompt_consistency")
        source_caption("Mis-prompt paper, Tables 2, 3, 4, 6–11 (recomputed here)")


def judging_choice(
    run_id: str,
    names: list[str],
    current: list[str],
    default: str,
    judgings: pd.DataFrame,
    label_of: Callable[[str, str | None], str],
) -> str:
    """The judging shown: the URL's `judging` when someone chose one, else the run's current
    one. Only a choice is written to the URL — a default written on first visit kept an old
    judging on every reload after a newer one was made (issue 31, point 4); an explicit older
    one says that a newer judging exists."""
    wanted = st.query_params.get("judging")
    explicit = wanted in names
    if wanted is not None and not explicit:
        del st.query_params["judging"]  # another run's judging (the run changed): not this one's

    target = str(wanted) if explicit else default
    # keyed on what it starts from: when the current judging changes (a rescore finished),
    # a selector that was following it starts again from the new one
    key = f"w_judging_{run_id}_{'url' if explicit else 'current'}_{target}"

    def chosen() -> None:
        st.query_params["judging"] = st.session_state[key]

    value = st.selectbox(
        "Judging",
        names,
        index=names.index(target),
        key=key,
        on_change=chosen,
        # labels made now (a lambda reading the page's globals later saw other values)
        format_func={
            j: f"{label_of(run_id, j)} · {status}" + (" (current)" if j in current else "")
            for j, status in zip(judgings["judging"], judgings["status"])
        }.__getitem__,
        help="A run's responses can be judged again (`python -m core rescore`); "
        "each judging is kept. Heatmaps and tables use each run's current (latest "
        "finished) judging; this view shows the one chosen here.",
    )
    value = str(value or default)
    if explicit and current and value not in current:
        st.info(
            md_escape(
                f"A newer judging of {run_id} exists: {current[0]} (the current one, used by "
                f"the heatmaps). This view shows {value} because the URL names it "
                "(judging=…); choose the current one to follow it."
            ),
            icon=":material/update:",
        )
    return value


# -- Runs: drill-down, comparison, download ------------------------------------------------------------
if views[5].open:
    with views[5]:
        start_run_panel("misprompt", "mp", expanded=runs.empty)
        if runs.empty:
            st.info(
                "No Mis-prompt runs yet. Start one above, on the Runs page, or with "
                "`python -m core run misprompt --items misprompt-sample --setting zero-shot`;"
                " it appears here and beside the published results."
            )
            st.page_link("pages/runs.py", label="Go to Runs", icon=":material/play_arrow:")
            st.stop()
        ids = list(runs["run_id"])
        # every label here names the judging shown (one label per run and judging): the run
        # picked in the URL with its picked judging, other runs with their current one
        all_judgings = cached(agreement.judgings)
        labels = queries.judging_labels(all_judgings, runs)
        current_of = dict(
            zip(
                all_judgings.loc[all_judgings["current"], "run_id"],
                all_judgings.loc[all_judgings["current"], "judging"],
            )
        )

        def shown_judging(run: str) -> str:
            wanted = st.query_params.get("judging")
            if run == st.query_params.get("run") and (run, wanted) in labels:
                return str(wanted)
            return current_of.get(run, "default")

        def label_of(run: str, judging_name: str | None = None) -> str:
            key = (run, judging_name or shown_judging(run))
            return str(labels.get(key, run_labels.get(run, run)))

        run_id = (
            url_selectbox(
                "Run",
                ids,
                key="run",
                default=cached(run_choice.default_run, tuple(ids)),  # one with answers
                format_func=label_of,
            )
            or ids[0]
        )
        info = runs[runs["run_id"] == run_id].iloc[0]
        if info["weak_model"]:
            st.warning(WEAK_MODEL_NOTE)
        judgings = all_judgings[all_judgings["run_id"] == run_id].reset_index(drop=True)
        names = list(judgings["judging"])
        current = [j for j, c in zip(judgings["judging"], judgings["current"]) if c]
        judging = current[0] if current else "default"
        if len(names) > 1:
            judging = judging_choice(run_id, names, current, judging, judgings, label_of)
        picked = judgings[judgings["judging"] == judging]
        judge_shown = picked["judge_model"].iloc[0] if len(picked) else info["judge_model"]
        template_shown = picked["template_id"].iloc[0] if len(picked) else info["judge_template"]
        st.caption(
            f"Setting **{md_escape(info['setting'])}** ({md_escape(info['mode'])}) · "
            + md_escape(
                f"item set {info['item_set']} · judging {judging}: judge {judge_shown} with "
                f"{queries.template_name(template_shown)} · "
                f"status {info['status']}"
            )
        )
        # the tiles count the judging shown (the run's row counts its current one)
        counts = {
            **cast("dict[str, Any]", info.to_dict()),
            **cached(queries.judging_diagnostics, run_id, judging),
        }
        m = st.columns(5)
        m[0].metric("Verdicts scored", f"{counts['verdicts_ok']:,}")
        m[1].metric(
            "Failed verdicts",
            f"{counts['verdicts_failed']:,}",
            help="judge calls that failed; excluded from the scores",
        )
        m[2].metric(
            "Inconsistent verdicts",
            f"{counts['inconsistent']:,}",
            help="'accurate' true while its 'attempt' is false; counted as the judge "
            "gave them, not fixed",
        )
        m[3].metric("Erroneous / control", f"{counts['n_error']:,} / {counts['n_control']:,}")
        m[4].metric("Failed responses", f"{info['responses_failed']:,}")
        if info["recall_only"]:
            st.info(
                "This run has no control items: precision is unavailable, so its values "
                "are recall (metric names end in _recall), not F1."
            )

        ci = cached(queries.run_f1_ci, run_id, ("all",), judging=judging)
        overall = ci[(ci["category_level"] == "all") & (ci["evaluator"] == "judge")]
        if len(overall):
            st.plotly_chart(
                charts.f1_interval_chart(
                    overall,
                    f"{label_of(run_id, judging)}: "
                    f"{'recall' if info['recall_only'] else 'F1'} with 95% bootstrap "
                    "interval",
                    recall=bool(info["recall_only"]),
                ),
                key="run_ci",
            )
            source_caption(
                f"run {run_id}, judging {judging} (judge {judge_shown}, "
                f"{queries.template_name(template_shown)}; intervals from the exact "
                "bootstrap distribution, or drawn until each end is within ±0.5 point; items "
                "resampled, erroneous and controls separately, seed 0)"
            )
        every = url_radio(
            "Intervals by category",
            ["no", "yes (slower on large runs)"],
            key="ci_cat",
            horizontal=True,
        )
        table(
            cached(queries.run_f1_ci, run_id, judging=judging) if every != "no" else ci,
            f"f1_{run_id}",
        )

        st.subheader("Judgings of this run")
        table(judgings, f"judgings_{run_id}")
        if len(names) < 2:
            st.caption(
                "One judging so far. To check the judge, judge the stored responses "
                "again with another judge or template — the model is not asked again: "
                f"`python -m core rescore --source {run_id} --judge-endpoint NAME "
                "[--judge-template misprompt/judge.v1]`."
            )
        else:
            other = url_selectbox(
                "Compare with judging",
                [n for n in names if n != judging],
                key="judging_b",
                format_func=lambda j: label_of(run_id, j),
            )
            pair = cached(queries.judgings_side_by_side, run_id, judging, other)
            low = pair["n"] < agreement.MIN_KAPPA_N
            shown = pair.assign(kappa=pair["kappa"].where(~low))
            table(shown, f"judge_vs_judge_{run_id}")
            st.caption(
                f"Judge vs judge on the responses both judged: per label the 2×2 counts "
                f"(a = {md_escape(judging)}, b = {md_escape(other)}), raw agreement (%) "
                f"and Cohen's κ; κ is left empty below n = {agreement.MIN_KAPPA_N} or "
                "when both judges give one constant value (undefined)."
            )

        st.subheader("Items")
        f1c, f2c, f3c, f4c = st.columns(4)
        with f1c:
            category = url_selectbox("Category", ["(all)", *PRIMARY, *SECONDARY], key="d_cat")
        with f2c:
            kind = url_radio(
                "Items", ["all", "erroneous", "control"], key="d_kind", horizontal=True
            )
        with f3c:
            only = url_radio(
                "Verdicts", ["all", "inconsistent only"], key="d_incons", horizontal=True
            )
        with f4c:
            label_filter = url_selectbox(
                "Label is true",
                ["(any)", *LABELS],
                key="d_label",
                format_func=lambda s: s if s == "(any)" else charts.metric_title(s),
            )
        items = cached(
            queries.run_items,
            run_id,
            None if category == "(all)" else category,
            kind,
            only != "all",
            None if label_filter == "(any)" else label_filter,
            True if label_filter != "(any)" else None,
        )
        st.caption(
            f"{len(items):,} items shown (first 500 matching) of "
            f"{cached(queries.run_item_count, run_id):,} responses."
        )
        st.dataframe(items, hide_index=True, width="stretch")
        if len(items):
            item_id = url_selectbox("Item", list(items["item_id"]), key="item")
            detail = cached(queries.run_item_detail, run_id, item_id)
            if detail:
                kind_text = (
                    "erroneous — " + f"{detail['primary_category']} / "
                    f"{detail['secondary_category']}"
                    if detail["is_error"]
                    else "control (error-free question)"
                )
                st.markdown(f"**{md_escape(item_id)}** · {md_escape(kind_text)}")
                if detail["inconsistent"]:
                    st.warning(
                        "Inconsistent verdict: an 'accurate' label is true while its "
                        "'attempt' label is false. Shown as the judge gave it."
                    )
                a, b = st.columns(2)
                with a:
                    st.markdown("**Prompt**")
                    show_text(detail["prompt"] or "")
                    st.markdown("**Ground truth**")
                    show_text(detail["gold"] or "")
                    if detail.get("explanation"):
                        st.markdown("**Explanation of the error**")
                        show_text(detail["explanation"])
                with b:
                    st.markdown("**Response**" + (" (weak model)" if info["weak_model"] else ""))
                    show_text(detail["response"] or detail.get("response_error") or "")
                rationales = detail.get("rationales") or {}
                label_rows = pd.DataFrame(  # not `labels`: label_of reads that name
                    {
                        "label": [charts.metric_title(lb) for lb in LABELS],
                        "value": [detail.get(lb) for lb in LABELS],
                        "rationale": [
                            rationales.get(lb, "") if isinstance(rationales, dict) else ""
                            for lb in LABELS
                        ],
                    }
                )
                st.dataframe(label_rows, hide_index=True, width="stretch")
                with st.expander("Raw judge output"):
                    show_text(detail.get("raw") or "(none)")
                    st.caption(
                        md_escape(
                            f"verdict status {detail.get('verdict_status')} · "
                            f"parse: {detail.get('parse_note')}"
                        )
                    )
                if detail.get("messages"):
                    with st.expander("Messages sent to the model"):
                        st.code(
                            json.dumps(detail["messages"], indent=1, ensure_ascii=False),
                            language="json",
                        )

        st.subheader("Compare two runs item by item")
        others = [r for r in ids if r != run_id]
        if not others:
            st.info(
                "Only one run: start another (for instance the same items with --passive) "
                "to compare proactive and passive item by item."
            )
        else:
            run_b = url_selectbox(
                "Compare with", others, key="run_b", format_func=lambda r: run_labels.get(r, r)
            )
            rates, differing, n_diff = cached(queries.compare_runs, run_id, run_b)
            for kind_name in ("erroneous", "control"):
                sub = rates[rates["kind"] == kind_name]
                if len(sub):
                    st.plotly_chart(
                        charts.label_rates_bar(
                            sub, f"Share of {kind_name} items with each label true"
                        ),
                        key=f"compare_{kind_name}",
                    )
                    source_caption(f"runs {run_id} and {run_b} (judge verdicts)")
            st.caption(f"{n_diff:,} items where at least one label differs (showing up to 500).")
            table(differing, f"compare_{run_id}_vs_{run_b}")

        st.subheader("Download")
        if st.checkbox("Prepare the CSV of this run (one row per response)", key="prep_dl"):
            download(cached(queries.run_export, run_id), f"run_{run_id}", "Download run CSV")
