"""Runs: every benchmark's runs with live progress; start, watch and cancel them.

A run started here is a `python -m core run …` process (the same command as the terminal), so
the app never writes to the database during a run: it polls progress that the run flushes
every half second. Runs started from a terminal show up here the same way.
"""

from __future__ import annotations

import time

import streamlit as st

from core.access.log import shown_command
from core.declared import example_run
from core.engine.endpoints import redact_url
from core.engine.runner.shards import shard_table
from core.registry import BENCHMARKS as REGISTRY
from core.services import current_judges, jobs, run_choice
from core.services.failures import top_reasons
from core.services.terminal import terminal_command
from pages.ui.access import disabled_for, record, require
from pages.ui.common import (
    WEAK_MODEL_NOTE,
    cached,
    clear_cache,
    endpoints_or_error,
    get_store,
    guard_writes,
    md_escape,
    table,
    uncached,
    url_multiselect,
    url_radio,
    url_selectbox,
    writes_disabled,
)
from pages.ui.judgings import judging_running, judgings_panel
from pages.ui.runs import (
    FINAL,
    add_link_columns,
    failure_reasons,
    final_summary,
    follow_started_run,
    live_numbers,
    model_line,
    run_field_widgets,
    run_links,
)

WATCH_EVERY_S = 2.0
HIDE_FAILED = "hide failed and empty runs"
SHOW = ("all runs", HIDE_FAILED)
CUSTOM = "Custom base URL…"
SAME_AS_MODEL = "(the model's endpoint)"
# Text glyphs every font has (Debian's Chromium has no emoji font: ✅ ⚠️ ⏹️ drew as "⊠")
STATUS_ICON = {
    "running": "●",
    "done": "✓",
    "failed": "✗",
    "cancelled": "■",
    "interrupted": "‖",
    "pending": "…",
}

st.title("Runs")
st.caption(
    f"Runs of every benchmark ({', '.join(b.label for b in REGISTRY.values())}). "
    "A run is a command-line process writing to this database in "
    "short transactions, so you can follow it here while it works — whether it was started "
    "below or from a terminal. Re-running a run name resumes it: only missing or failed items "
    "are asked again. A run marked *interrupted* lost its process (killed, machine restarted): "
    "start it again with the same name to finish it."
)

store = get_store()
started: dict | None = st.session_state.get("runs_started")
follow = st.session_state.pop("runs_follow", None)
if follow:  # a run was just started: the watch selector (and so the URL) moves to it
    st.session_state["w_run"] = follow

# A view pinned to a snapshot (?as_of=) is of the past: it offers no "Start a run" tab, and
# without the tab's button no click can start one (issue 31, point 10).
pinned = store.as_of is not None
if pinned:
    st.info(
        f"Pinned to snapshot {store.as_of}: starting runs is off in a view of the past. "
        "Remove ?as_of= from the URL to start one.",
        icon=":material/history:",
    )
_tabs = st.tabs(["Runs"] if pinned else ["Runs", "Start a run"])
tab_runs, tab_start = _tabs[0], _tabs[-1]
descriptions = jobs.benchmarks()  # name -> description, from the registry now

# -- list and watch ---------------------------------------------------------------------------


def _pending_start() -> bool:
    """A run started from this page whose process has not written its row yet (≤ 60 s)."""
    pending = started  # the module's value, narrowed here
    return (
        pending is not None
        and time.time() - pending.get("at", 0) < 60
        and not uncached(jobs.run_progress, pending["run_name"])
    )


_first_list: dict = {}  # the full run's list, reused by the fragment's first pass


def _is_live() -> bool:
    runs_now = uncached(jobs.list_runs)
    _first_list["runs"] = runs_now
    return (
        bool((runs_now["status"] == "running").any())
        or _pending_start()
        or uncached(jobs.judging_running)
        or _pending_judging()
    )


def _pending_judging() -> bool:
    """A judging started from this page that is still starting or running."""
    pending: tuple[str, str] | None = st.session_state.get("judging_started")
    return pending is not None and judging_running(pending[0])


live_at_start = _is_live()


@st.fragment(run_every=WATCH_EVERY_S if live_at_start else None)
def runs_panel() -> None:
    """The table and the watched run, refreshed every 2 s while anything is running."""
    benchmarks = url_multiselect(
        "Benchmarks",
        list(descriptions),
        key="bench",
        format_func=lambda b: descriptions.get(b, b),
    )
    all_runs = _first_list.pop("runs", None)
    if all_runs is None:  # a fragment rerun (every 2 s while live): read afresh
        all_runs = uncached(jobs.list_runs)
    runs = all_runs[all_runs["benchmark"].isin(benchmarks)] if len(all_runs) else all_runs
    shown = url_radio("Show", list(SHOW), key="runs_show", horizontal=True)
    if shown == HIDE_FAILED and len(runs):  # failed runs and runs without an answer
        answered = uncached(run_choice.answered_runs, list(runs["run_id"]))
        runs = runs[
            [r in answered and s != "failed" for r, s in zip(runs["run_id"], runs["status"])]
        ]
    if runs.empty and not started:
        st.info(
            "No runs yet. Start one in the *Start a run* tab, or from a terminal: "
            f"`python -m core run {example_run()} --limit 5`."
        )
    else:
        why = uncached(top_reasons, list(runs.loc[runs["failed"] > 0, "run_id"]))
        # the judge of each run's current judging (after a rescore, not the first judge's)
        judges = cached(current_judges.current_judges).set_index("run_id")
        view = runs.assign(
            why=[why.get(r, "") for r in runs["run_id"]],
            status=[f"{STATUS_ICON.get(s, '')} {s}" for s in runs["status"]],
            model=[
                f"{m} (weak model)" if bool(w) else m
                for m, w in zip(runs["model"], runs["weak_model"].fillna(False))
            ],
            judge_model=[
                judges["judge_model"].get(r, m) if r in judges.index else m
                for r, m in zip(runs["run_id"], runs["judge_model"])
            ],
            judge_template=[
                judges["judge_template"].get(r) or t if r in judges.index else t
                for r, t in zip(runs["run_id"], runs["judge_template"])
            ],
        )[
            [
                "run_id",
                "benchmark",
                "status",
                "progress",
                "done",
                "failed",
                "why",
                "planned",
                "model",
                "setting",
                "mode",
                "judge_model",
                "judge_template",
                "item_set",
                "created_at",
            ]
        ]
        config = {
            "progress": st.column_config.ProgressColumn(
                "progress", min_value=0.0, max_value=1.0, format="percent"
            ),
            "created_at": st.column_config.DatetimeColumn("created", format="YYYY-MM-DD HH:mm"),
        }
        table(add_link_columns(view, config), "runs", column_config=config)

    run_ids = list(runs["run_id"])
    if started and started["run_name"] not in run_ids:
        run_ids.insert(0, started["run_name"])
    running = [r for r, s in zip(runs["run_id"], runs["status"]) if s == "running"]
    default = started["run_name"] if started else (running[0] if running else None)
    st.subheader("Watch a run")
    run_id = url_selectbox("Run", run_ids, key="run", default=default)
    if run_id:
        watch(run_id, runs)
    live_now = (
        bool((all_runs["status"] == "running").any())
        or _pending_start()
        or uncached(jobs.judging_running)
        or _pending_judging()
    )
    if live_at_start and not live_now:
        clear_cache()  # everything finished: one full rerun stops the refreshing
        st.rerun()


def watch(run_id: str, runs) -> None:
    progress = uncached(jobs.run_progress, run_id)
    if not progress:
        st.info(md_escape(f"Starting {run_id}… (the process is loading; its log is below)"))
    else:
        status = progress["status"]
        planned = max(progress["planned"], 1)
        st.progress(
            min(progress["done"] / planned, 1.0),
            text=f"{STATUS_ICON.get(status, '')} {status}: {progress['done']} of "
            f"{progress['planned']} done, {progress['failed']} failed",
        )
        cols = st.columns(3)
        cols[0].metric("status", status)
        cols[1].metric("done", f"{progress['done']} / {progress['planned']}")
        cols[2].metric("failed (retried on resume)", progress["failed"])
        model_line(progress["model"])  # in full: a metric tile cuts long model ids
        shards = uncached(shard_table, run_id)
        if len(shards):  # a run split over machines (`run --shard K/N`): one row per shard
            st.markdown(
                f"**Shards** ({len(shards)} started): the run is done when every shard is; "
                "a stopped shard resumes with the same command, on any machine."
            )
            table(shards, f"{run_id}-shards.csv")
        row = runs[runs["run_id"] == run_id]
        if len(row) and bool(row["weak_model"].fillna(False).iloc[0]):
            st.warning(WEAK_MODEL_NOTE)
        if status == "running":
            live_numbers(run_id)
            if st.button(
                "Cancel this run",
                key=f"cancel_{run_id}",
                type="secondary",
                disabled=disabled_for("cancel_run"),
            ):
                require("cancel_run")
                with guard_writes():
                    st.toast(md_escape(uncached(jobs.cancel_run, run_id)))
                record("cancel_run", run_id)
        if progress["failed"] or status in ("failed", "interrupted", "cancelled"):
            failure_reasons(run_id)  # the stored reasons, grouped, before the numbers
        if status in FINAL or status == "interrupted":
            delete_form(run_id, progress)
        if status in FINAL:
            final_summary(run_id)  # calls, tokens, cost and duration stay after the end
            item_set = row["item_set"].iloc[0] if len(row) else None
            run_links(
                progress["benchmark"], run_id, item_set if isinstance(item_set, str) else None
            )
        if status == "interrupted":  # FINAL holds it too: a separate `if`, not an elif
            st.warning(
                "This run's process is gone. Start it again with the same run name to "
                "finish it, or mark it cancelled."
            )
            if st.button(
                "Mark cancelled", key=f"mark_{run_id}", disabled=disabled_for("cancel_run")
            ):
                require("cancel_run")
                with guard_writes():
                    st.toast(md_escape(uncached(jobs.cancel_run, run_id)))
                record("cancel_run", run_id, "marked cancelled")
                clear_cache()
                st.rerun()
    log = jobs.read_log(store.location, run_id)
    if log:
        with st.expander("Log (last lines)", expanded=not progress):
            st.code(log, language=None)
    if progress and progress["status"] in ("done", "failed", "cancelled", "interrupted"):
        judgings_panel(run_id, progress["benchmark"])


def delete_form(run_id: str, progress: dict) -> None:
    """Delete a run that is not running (a failed or empty one is why this exists), behind a
    confirmation box; as `python -m core runs --delete RUN --yes`."""
    with st.expander("Delete this run", icon=":material/delete:"):
        st.caption(
            f"Removes run {run_id} whole: its {progress['done'] + progress['failed']:,} "
            "responses, every judging's records and its call log (not its item set, not the "
            "call cache). Refused when a judge audit sampled it. In a terminal: "
            f"`python -m core runs --delete {run_id} --yes`."
        )
        sure = st.checkbox(f"Yes, delete run {run_id}", key=f"delete_sure_{run_id}")
        if st.button(
            "Delete run",
            key=f"delete_{run_id}",
            type="primary",
            disabled=not sure or writes_disabled(),
        ):
            with guard_writes():
                st.toast(md_escape(uncached(run_choice.delete_run, run_id)))
            clear_cache()
            st.query_params.pop("run", None)
            st.rerun()


with tab_runs:
    runs_panel()

# -- start ------------------------------------------------------------------------------------
if pinned:
    st.stop()
with tab_start:
    st.markdown(
        "Starts `python -m core run …` in the background; the command is shown "
        "below so you can also run it in a terminal."
    )
    bench = st.radio(
        "Benchmark",
        list(descriptions),
        horizontal=True,
        key="start_bench",
        format_func=lambda b: descriptions[b],
    )
    sets = cached(jobs.item_sets, bench)
    set_names = list(sets["name"]) if len(sets) else []
    sizes = dict(zip(sets["name"], sets["n_items"])) if len(sets) else {}
    if not set_names:
        st.info(
            "No item sets for this benchmark yet: import one on the Import page, or run "
            "`python -m core init` to load the built-in samples."
        )
    item_set = st.selectbox(
        "Item set",
        set_names,
        key="start_items",
        format_func=lambda n: f"{n} ({sizes.get(n, '?')} items)",
    )
    endpoints = endpoints_or_error()
    names = list(endpoints)
    c1, c2 = st.columns(2)
    with c1:
        choice = st.selectbox(
            "Model endpoint",
            names + [CUSTOM],
            key="start_endpoint",
            index=names.index("local") if "local" in names else 0,
            help="Endpoints come from data/models.toml ($EHW_MODELS_FILE). "
            "'local' is SmolLM2 served by `python -m core serve-local`.",
        )
        base_url = model = key_env = None
        if choice == CUSTOM:
            base_url = st.text_input(
                "Base URL", placeholder="http://127.0.0.1:8000/v1", key="start_base_url"
            )
            model = st.text_input("Model id", key="start_model")
            key_env = st.text_input(
                "API key environment variable (its name, not the key)",
                key="start_key_env",
                help="Keys are never typed into the app or stored: export the variable before "
                "starting the app, and name it here.",
            )
        elif endpoints.get(choice) is not None:
            ep = endpoints[choice]
            st.caption(
                f"{ep.model} at {', '.join(redact_url(u) for u in ep.base_urls)}; up to {ep.max_concurrency} "
                f"requests in flight" + (f"; key from ${ep.api_key_env}" if ep.api_key_env else "")
            )
            if ep.weak:
                st.caption(WEAK_MODEL_NOTE)
    with c2:
        values = run_field_widgets(bench, "start", columns=1)
        judge = None
        if REGISTRY[bench].judged_by_model:
            judge_choice = st.selectbox(
                "Judge endpoint",
                [SAME_AS_MODEL] + names,
                key="start_judge",
                help="One judge call per response, six labels. The local SmolLM2 is a weak judge.",
            )
            judge = None if judge_choice == SAME_AS_MODEL else judge_choice
    c3, c3b, c4, c5 = st.columns([1, 1, 1, 1.6])
    limit = c3.number_input(
        "Limit (0 = all items)",
        min_value=0,
        value=jobs.DEFAULT_LIMIT,
        step=1,
        key="start_limit",
        help="A seeded sample stratified over the set's categories (and "
        "its error:control ratio), not the first N items.",
    )
    sample_seed = c3b.number_input(
        "Sample seed",
        min_value=0,
        value=0,
        step=1,
        key="start_sample_seed",
        disabled=not limit,
        help="Seed of the --limit sample (default 0).",
    )
    concurrency = c4.number_input(
        "Concurrency (0 = the endpoint's)", min_value=0, value=0, step=1, key="start_concurrency"
    )
    run_name = c5.text_input(
        "Run name (blank = automatic; an existing name resumes it)", key="start_run_name"
    )

    error = None
    args: list[str] = []
    try:
        args = jobs.build_cli_args(
            bench,
            item_set or "",
            endpoint=None if choice == CUSTOM else choice,
            base_url=base_url,
            model=model,
            api_key_env=key_env,
            judge_endpoint=judge,
            fields=values,
            limit=int(limit) or None,
            concurrency=int(concurrency) or None,
            run_name=run_name,
            sample_seed=int(sample_seed) if limit else None,
        )
    except ValueError as exc:
        error = str(exc)
    if item_set:
        planned = cached(jobs.planned_composition, item_set, int(limit) or None, int(sample_seed))
        if planned:
            st.caption(
                "Items this run will ask: " + ", ".join(f"{k} {v}" for k, v in planned.items())
            )
            note = REGISTRY[bench].no_controls_note
            if REGISTRY[bench].has_controls and note and not planned.get("control"):
                st.warning("No control (error-free) items in this run: " + note() + ".")
    if args:
        st.code(terminal_command(args, store.location, is_lake=store.is_lake), language="bash")
    if error and item_set:
        st.warning(md_escape(error))
    blocked = writes_disabled() or disabled_for("start_run")
    if st.button("Start run", type="primary", disabled=blocked or not args, key="start_button"):
        require("start_run")  # a replayed click of the disabled button stops here
        if blocked:  # a click on a disabled button (e.g. sent by hand) starts nothing
            st.stop()
        job = jobs.start_cli_run(args, store.location)
        record("start_run", job.run_name, shown_command(args))
        st.session_state["runs_started"] = {
            "run_name": job.run_name,
            "pid": job.pid,
            "at": time.time(),
        }
        st.query_params["run"] = job.run_name
        st.session_state["runs_follow"] = job.run_name
        st.session_state["start_job"] = job.run_name  # followed below the form, in place
        clear_cache()
        st.rerun()
    follow_started_run("start")

if started:
    st.sidebar.success(f"Last started: {started['run_name']}")
