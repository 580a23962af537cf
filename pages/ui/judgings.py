"""A run's judgings on the Runs page: the list, a form that starts (or resumes) one as a
background `python -m core rescore …` process followed like a run, and deleting one.

Not a page (a sub-folder of pages/, listed nowhere in app.py).
"""

from __future__ import annotations

import shlex

import streamlit as st

from core.access.log import shown_command
from core.engine.runner import RunError
from core.registry import BENCHMARKS as REGISTRY
from core.services import jobs
from core.services.rescore import default_judging_name
from pages.ui.access import disabled_for, record, require
from pages.ui.common import (
    clear_cache,
    endpoints_or_error,
    get_store,
    guard_writes,
    md_escape,
    table,
    uncached,
    writes_disabled,
)

CUSTOM = "Custom base URL…"
STARTED = "judging_started"  # session state: (run, judging) started from this page
SHOWN = [
    "judging",
    "status",
    "judge_endpoint",
    "judge_model",
    "template_id",
    "done",
    "failed",
    "planned",
    "judge_urls",
    "key_env",
    "current",
]


def judging_running(run_id: str) -> bool:
    """Whether a judging of this run is running or was just started here (the page refreshes)."""
    started = st.session_state.get(STARTED)
    if started and started[0] == run_id:
        progress = uncached(jobs.judging_progress, *started)
        if not progress or progress["status"] == "running":
            return True
    frame = uncached(jobs.list_judgings, run_id)
    return bool(len(frame) and (frame["status"] == "running").any())


def judgings_panel(run_id: str, benchmark: str) -> None:
    """The run's judgings, the judging started from here with its progress, the form."""
    st.subheader("Judgings of this run")
    st.caption(
        "A judging reads the run's stored responses again (an LLM judge, or the benchmark's "
        "scorer); the model under test is not asked. Results show the latest finished "
        "judging ('current') unless a page picks one."
    )
    frame = uncached(jobs.list_judgings, run_id)
    if len(frame):
        table(frame[[c for c in SHOWN if c in frame.columns]], f"judgings-{run_id}")
        for name, failed in zip(frame["judging"], frame.get("failed", [0] * len(frame))):
            if name != "default" and failed and int(failed) > 0:  # why its verdicts failed
                with st.expander(f"Why {int(failed):,} verdicts of judging {name} failed"):
                    from pages.ui.runs import failure_reasons

                    failure_reasons(run_id, str(name), calls=False)
    _follow(run_id)
    _start_form(run_id, benchmark, list(frame["judging"]) if len(frame) else [])
    _delete_form(run_id, frame)


def _follow(run_id: str) -> None:
    started = st.session_state.get(STARTED)
    if not started or started[0] != run_id:
        return
    judging = started[1]
    progress = uncached(jobs.judging_progress, run_id, judging)
    if not progress:
        st.info(md_escape(f"Starting judging {judging}… (its log is below)"))
    else:
        planned = progress["planned"]
        st.progress(
            min(1.0, progress["done"] / planned) if planned else 0.0,
            text=f"Judging {judging}: {progress['done']} of {planned} done, "
            f"{progress['failed']} failed — {progress['status']}",
        )
    log = jobs.read_log(get_store().location, jobs.judging_log_name(run_id, judging))
    if log and (not progress or progress["status"] != "done"):
        with st.expander("Judging log (last lines)", expanded=not progress):
            st.code(log, language=None)


def _start_form(run_id: str, benchmark: str, existing: list[str]) -> None:
    bench = REGISTRY.get(benchmark)
    if bench is None:
        return
    st.markdown("**New judging** — or resume one: an existing name resumes it")
    base_url = model = key_env = endpoint = template = None
    default_model = None
    if bench.judged_by_model:
        endpoints = endpoints_or_error()
        names = list(endpoints)
        c1, c2 = st.columns(2)
        choice = c1.selectbox("Judge endpoint", names + [CUSTOM], key="jg_endpoint")
        if choice == CUSTOM:
            base_url = c1.text_input(
                "Judge base URL", placeholder="http://127.0.0.1:8000/v1", key="jg_base_url"
            )
            model = c1.text_input("Judge model id", key="jg_model")
            key_env = c1.text_input(
                "API key environment variable (its name, not the key)", key="jg_key_env"
            )
            default_model = model
        else:
            endpoint = choice
            default_model = endpoints[choice].model if choice in endpoints else choice
        field = next((f for f in bench.run_fields if f.key == "judge_template"), None)
        if field is not None:
            options = list(field.options())
            template = c2.selectbox(
                field.label,
                options,
                index=options.index(field.default) if field.default in options else 0,
                key="jg_template",
            )
        concurrency = c2.number_input(
            "Concurrency (0 = the endpoint's)", min_value=0, value=0, step=1, key="jg_concurrency"
        )
    else:
        concurrency = 0
    suggested = default_judging_name(
        default_model if bench.judged_by_model else None,
        template if bench.judged_by_model else f"{benchmark}/scorer",
    )
    name = st.text_input(
        "Judging name",
        value=suggested,
        key="jg_name",
        help="An existing name resumes that judging: a failed one may use another URL, key "
        "variable or concurrency; another judge model or template is refused.",
    )
    if name in existing:
        st.caption(md_escape(f"{name} exists: starting resumes it."))
    args: list[str] = []
    try:
        args = jobs.build_rescore_args(
            run_id,
            name,
            judged_by_model=bench.judged_by_model,
            judge_endpoint=endpoint,
            base_url=base_url,
            model=model,
            api_key_env=key_env,
            template=template,
            concurrency=int(concurrency) or None,
        )
    except ValueError as exc:
        st.warning(md_escape(str(exc)))
    if args:
        st.code("python -m core " + shlex.join([*args, "--quiet"]), language="bash")
    blocked = writes_disabled() or disabled_for("rescore")
    if st.button("Start judging", disabled=blocked or not args, key="jg_start"):
        require("rescore")
        with guard_writes():
            job = jobs.start_cli_rescore([*args, "--quiet"], get_store().location)
        record("rescore", f"{run_id}/{job.run_name}", shown_command(args))
        st.session_state[STARTED] = (run_id, job.run_name)
        clear_cache()
        st.rerun()


def _delete_form(run_id: str, frame) -> None:
    named = [
        j for j, s in zip(frame["judging"], frame["status"]) if j != "default" and s != "running"
    ]
    if not named:
        return
    with st.expander("Delete a judging"):
        st.caption(
            "Deletes the judging's records only (not the run, its responses, its own "
            "'default' judging or the call log). A running judging cannot be deleted."
        )
        victim = st.selectbox("Judging", named, key="jg_delete_name")
        if st.button(
            "Delete this judging",
            key="jg_delete",
            disabled=writes_disabled() or disabled_for("delete_judging"),
        ):
            require("delete_judging")
            with guard_writes():
                try:
                    st.toast(md_escape(uncached(jobs.delete_judging, run_id, victim)))
                except RunError as exc:
                    st.error(md_escape(str(exc)))
                    return
            record("delete_judging", f"{run_id}/{victim}")
            clear_cache()
            st.rerun()
