"""Shared run widgets for the pages: where a run's results are (links with the run preselected),
live numbers of a running run, and the start-a-run form of the benchmark pages.

Not a page (a sub-folder of pages/, listed nowhere in app.py).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from core.access.log import shown_command
from core.registry import BENCHMARKS as REGISTRY
from core.services import jobs
from pages.ui.access import disabled_for, record, require
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    clear_cache,
    endpoints_or_error,
    get_store,
    uncached,
    writes_disabled,
)

FINAL = ("done", "failed", "cancelled", "interrupted")
SAME_AS_MODEL = "(the model's endpoint)"


def run_link_targets(
    benchmark: str, run_id: str, item_set: str | None
) -> list[tuple[str, str, dict]]:
    """(page, label, query params) of a run's results, its response grid and its drill-down."""
    out = []
    bench = REGISTRY.get(benchmark)
    if bench is not None:
        out.append(
            (
                bench.results_page.path,
                f"Results — {bench.results_page.title}",
                {bench.results_page.run_param: run_id},
            )
        )
    if item_set:
        out.append(
            (
                "pages/grid.py",
                "Responses grid",
                {"g_bench": benchmark, "g_set": item_set, "g_runs": run_id},
            )
        )
    if bench is not None:
        drill = {k: v.format(run=run_id) for k, v in bench.results_page.drill_params}
        out.append((bench.results_page.path, "Item drill-down", drill))
    return out


def run_urls(benchmark: str, run_id: str, item_set: str | None) -> dict[str, str]:
    """The same targets as relative URLs (for LinkColumn cells in run tables)."""
    from urllib.parse import urlencode

    out = {}
    for page, label, params in run_link_targets(benchmark, run_id, item_set):
        slug = page.rsplit("/", 1)[-1].removesuffix(".py")
        key = "results" if label.startswith("Results") else "grid" if "grid" in label else "drill"
        out[key] = f"./{slug}?{urlencode(params)}"
    return out


def add_link_columns(runs: pd.DataFrame, config: dict) -> pd.DataFrame:
    """runs (run_id, benchmark, item_set) + link columns `results`, `grid`, `drill-down`, with
    their LinkColumn config added to `config`."""
    urls = [
        run_urls(b, r, s if isinstance(s, str) else None)
        for r, b, s in zip(runs["run_id"], runs["benchmark"], runs["item_set"])
    ]

    def links(key: str) -> pd.Series:  # object: None where a run has no such page
        return pd.Series([u.get(key) for u in urls], index=runs.index, dtype=object)

    out = runs.assign(
        results=links("results"),
        grid=links("grid"),
        **{"drill-down": links("drill")},
    )
    config.update(
        {
            "results": st.column_config.LinkColumn("results", display_text="results"),
            "grid": st.column_config.LinkColumn("grid", display_text="responses"),
            "drill-down": st.column_config.LinkColumn("drill-down", display_text="items"),
        }
    )
    return out


def run_links(benchmark: str, run_id: str, item_set: str | None) -> None:
    """Page links for one run (results, grid with the run preselected, drill-down)."""
    targets = run_link_targets(benchmark, run_id, item_set)
    cols = st.columns(len(targets) or 1)
    icons = [":material/bar_chart:", ":material/table_rows:", ":material/search:"]
    for col, (page, label, params), icon in zip(cols, targets, icons):
        col.page_link(page, label=label, icon=icon, query_params=params)


def live_numbers(run_id: str) -> None:
    """responses, elapsed time, calls, calls/s, tokens, cost and ETA of a running run, from its
    call and response records. Records are written when a response (and its judging) is done,
    so on a slow model the calls stay 0 until the first one: responses and elapsed time show
    that the run is alive meanwhile."""
    stats = uncached(jobs.run_stats, run_id)
    cols = st.columns(7)
    cols[0].metric("responses", f"{stats['done']:,} / {stats['planned']:,}")
    cols[1].metric("elapsed", jobs.format_duration(stats["elapsed_s"]))
    cols[2].metric("calls", f"{stats['calls']:,}", help="recorded with each finished response")
    rate = stats["calls_per_s"]
    cols[3].metric("calls/s (last min)", "—" if rate is None else f"{rate:.1f}")
    cols[4].metric("tokens", f"{stats['tokens']:,}")
    cols[5].metric("cost", "—" if stats["cost_usd"] is None else f"${stats['cost_usd']:.4f}")
    cols[6].metric(
        "ETA",
        jobs.format_duration(stats["eta_s"]),
        help="remaining items ÷ responses per second (over the last minute, else since the "
        "process started)",
    )
    if not stats["responses"]:
        st.caption(
            "Waiting for the first response: calls, tokens and the ETA are recorded when a "
            "response is finished (a slow local model takes a while)."
        )


def final_summary(run_id: str) -> None:
    """What a finished run asked and cost, kept from its call records and its row: calls,
    tokens, cost and wall time (first start to last write)."""
    stats = uncached(jobs.run_stats, run_id)
    cols = st.columns(4)
    cols[0].metric("calls", f"{stats['calls']:,}")
    cols[1].metric("tokens", f"{stats['tokens']:,}")
    cols[2].metric("cost", "—" if stats["cost_usd"] is None else f"${stats['cost_usd']:.4f}")
    cols[3].metric(
        "duration",
        jobs.format_duration(stats["duration_s"]),
        help="active time: each session from its start to its last write, summed (a resumed "
        "run does not count the idle time between its sessions)",
    )


def failure_reasons(run_id: str, judging: str = "default", calls: bool = True) -> None:
    """Why a run's (or a judging's) units failed: the stored reasons grouped, with counts and
    one full example each (core/services/failures.py); nothing when none failed."""
    from core.services import failures

    groups = uncached(failures.run_failures, run_id, judging, calls)
    counted = {
        stage: sum(g.count for g in groups if g.stage == stage) for stage in ("response", "judging")
    }
    if not counted["response"] and not counted["judging"]:
        return
    said = []
    if counted["response"]:
        said.append(f"{counted['response']:,} answers failed")
    if counted["judging"]:
        said.append(f"{counted['judging']:,} verdicts failed")
    top = next(g for g in groups if g.stage in ("response", "judging"))
    st.error(f"{' and '.join(said)} — most often: {top.reason}", icon=":material/error:")
    frame = failures.failure_frame(groups)
    st.caption(
        "The reasons stored with the failures, grouped (an item's own text masked as '…'), "
        "each with one full example; a resume asks the failed units again. In a terminal: "
        f"`python -m core runs {run_id} --errors"
        + (f" --judging {judging}`" if judging != "default" else "`")
    )
    st.dataframe(frame, hide_index=True, width="stretch")
    from pages.ui.common import download

    download(frame, f"failures_{run_id}_{judging}", "Download the reasons (CSV)")


def model_line(model: object) -> None:
    """The run's model, in full (a metric tile cuts long ids)."""
    st.caption("model")
    st.text(str(model))


def run_field_widgets(benchmark: str, key: str, columns: int = 2) -> dict[str, Any]:
    """One widget per run field of the benchmark (core.registry), `columns` to a row (1: one
    under the other, for a form that is already in a column); returns {field key: value} for
    jobs.build_cli_args. Widget keys are `<key>_<field key>` (e.g. start_setting)."""
    fields = REGISTRY[benchmark].run_fields
    values: dict[str, Any] = {}
    cols: list[Any] = list(st.columns(columns)) if columns > 1 else [st]
    for n, run_field in enumerate(fields):
        where = cols[n % len(cols)]
        widget_key = f"{key}_{run_field.key}"
        if run_field.kind == "flag":
            values[run_field.key] = where.checkbox(
                run_field.label,
                value=bool(run_field.default),
                key=widget_key,
                help=run_field.help or None,
            )
            continue
        options = list(run_field.options())
        if run_field.kind == "multi":
            default = [o for o in (run_field.default or ()) if o in options]
            values[run_field.key] = where.multiselect(
                run_field.label,
                options,
                default=default,
                key=widget_key,
                help=run_field.help or None,
            )
        else:
            index = options.index(run_field.default) if run_field.default in options else 0
            values[run_field.key] = where.selectbox(
                run_field.label,
                options,
                index=index,
                key=widget_key,
                help=run_field.help or None,
                format_func=run_field.option_label,
            )
    return values


def start_run_panel(benchmark: str, key: str, expanded: bool = False) -> None:
    """A start form for one benchmark (item set, endpoint, limit and the benchmark's own choice),
    the command it runs, then the started run followed in place with links to its results.
    None in a view pinned to a snapshot (?as_of=): a view of the past starts nothing."""
    if get_store().as_of is not None:
        return
    sets = cached(jobs.item_sets, benchmark)
    names = list(sets["name"]) if len(sets) else []
    with st.expander("Start a run", expanded=expanded):
        if not names:
            st.info(
                "No item sets for this benchmark yet: `python -m core init` loads the "
                "built-in sample; the Import page loads your own."
            )
            return
        endpoints = list(endpoints_or_error()) or ["local"]
        blocked = writes_disabled() or disabled_for("start_run")
        with st.form(f"{key}_start"):
            c1, c2, c3 = st.columns(3)
            sample = f"{benchmark}-sample"
            item_set = c1.selectbox(
                "Item set",
                names,
                key=f"{key}_start_set",
                index=names.index(sample) if sample in names else 0,
            )
            endpoint = c2.selectbox(
                "Model endpoint",
                endpoints,
                key=f"{key}_start_endpoint",
                index=endpoints.index("local") if "local" in endpoints else 0,
                help="data/models.toml ($EHW_MODELS_FILE); 'local' is SmolLM2",
            )
            limit = c3.number_input(
                "Items to run (0 = all)",
                min_value=0,
                value=jobs.DEFAULT_LIMIT,
                step=1,
                key=f"{key}_start_limit",
                help="A seeded sample stratified over the set's categories "
                "(and its error:control ratio), not the first N items.",
            )
            sample_seed = c3.number_input(
                "Sample seed",
                min_value=0,
                value=0,
                step=1,
                key=f"{key}_start_seed",
                help="Seed of the stratified sample (default 0).",
            )
            values = run_field_widgets(benchmark, f"{key}_start")
            judge = None
            if REGISTRY[benchmark].judged_by_model:
                judge_choice = st.selectbox(
                    "Judge endpoint",
                    [SAME_AS_MODEL, *endpoints],
                    key=f"{key}_start_judge",
                    help="one call per response, six labels; the local SmolLM2 is a weak judge",
                )
                judge = None if judge_choice == SAME_AS_MODEL else judge_choice
            submitted = st.form_submit_button("Start run", type="primary", disabled=blocked)
        st.caption(WEAK_MODEL_NOTE + " Other endpoints and options: the Runs page.")
        if submitted:
            require("start_run")  # a replayed submit of the disabled form stops here
        if submitted and not blocked:
            try:
                args = jobs.build_cli_args(
                    benchmark,
                    item_set,
                    endpoint=endpoint,
                    judge_endpoint=judge,
                    fields=values,
                    limit=int(limit) or None,
                    sample_seed=int(sample_seed) if limit else None,
                )
            except ValueError as exc:
                st.error(str(exc))
                return
            job = jobs.start_cli_run(args + ["--quiet"], get_store().location)
            record("start_run", job.run_name, shown_command(args))
            st.session_state[f"{key}_job"] = job.run_name
            st.success(f"Started run {job.run_name} (process {job.pid}).")
    follow_started_run(key)


def follow_started_run(key: str) -> None:
    """Progress of the run this page started, refreshed every 2 s until it ends."""
    run_id = st.session_state.get(f"{key}_job")
    if not run_id:
        return

    @st.fragment(run_every=2.0)
    def _follow() -> None:
        progress = uncached(jobs.run_progress, run_id)
        if not progress:
            st.info(f"Run {run_id} is starting…")
            return
        planned, done, failed = progress["planned"], progress["done"], progress["failed"]
        st.progress(
            min(1.0, done / planned) if planned else 0.0,
            text=f"Run {run_id}: {done} / {planned} responses, {failed} failed — "
            f"{progress['status']}",
        )
        model_line(progress["model"])
        if progress["status"] == "running":
            live_numbers(run_id)
        if progress["status"] in FINAL:
            final_summary(run_id)
            if failed:
                failure_reasons(run_id)
            log = jobs.read_log(get_store().location, run_id)
            if failed and log:
                with st.expander("Run log"):
                    st.code(log, language=None)
            run_links(progress["benchmark"], run_id, uncached(jobs.run_item_set, run_id))
            if st.button("Show results", key=f"{key}_show"):
                st.session_state.pop(f"{key}_job", None)
                clear_cache()
                st.rerun()

    _follow()
