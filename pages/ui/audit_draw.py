"""Judge audit, drawing a new audit: which runs (answered, not failed, by default), the sample's
fraction, seed and strata, a preview per stratum with the PPI warning, and the draw."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NoReturn

import pandas as pd
import streamlit as st

from core.registry import get as get_benchmark
from core.services import audit, run_choice
from core.stats import MIN_N
from pages.ui.access import record, require
from pages.ui.common import (
    cached,
    clear_cache,
    get_store,
    guard_writes,
    md_escape,
    table,
    uncached,
    url_multiselect,
    url_radio,
    url_select,
    url_selectbox,
)

# The Runs page's wording: failed runs and runs without an answer can be hidden
HIDE_FAILED = "hide failed and empty runs"
SHOW = ("all runs", HIDE_FAILED)


def new_audit() -> NoReturn:
    """The New audit panel: runs, sample settings, the per-stratum preview, the draw."""
    runs = cached(audit.auditable_runs)
    if runs.empty:
        kinds = audit.auditable_benchmarks()
        st.info(
            f"No judged {' or '.join(get_benchmark(b).label for b in kinds)} runs yet. Start "
            f"one on the Runs page (or `python -m core run {'|'.join(kinds)} …`); its verdicts "
            "can then be audited here."
        )
        st.stop()
    kinds = list(dict.fromkeys(runs["benchmark"]))
    if len(kinds) > 1:  # one audit samples one benchmark's runs (one set of labels)
        kind = url_selectbox(
            "Benchmark",
            kinds,
            key="au_benchmark",
            format_func=lambda b: get_benchmark(b).label,
        )
        runs = runs[runs["benchmark"] == kind]
    chosen = choose_runs(runs)
    c1, c2, c3 = st.columns(3)
    with c1:
        fraction = st.slider(
            "Sample fraction",
            0.01,
            1.0,
            audit.DEFAULT_FRACTION,
            0.01,
            key="au_fraction",
            help="The paper re-labels 10% of responses.",
        )
    with c2:
        seed = int(st.number_input("Seed", 0, 2**31 - 1, 0, 1, key="au_seed"))
    with c3:
        level = st.radio(
            "Strata: run ×",
            ["primary", "secondary"],
            horizontal=True,
            key="au_level",
            format_func=lambda v: f"{v} category",
        )
    name = _audit_name(fraction, seed, level)
    taken = _name_taken(name)
    if not chosen:
        st.info("Choose at least one run.")
        st.stop()
    _preview(chosen, fraction, level)
    if st.button("Draw sample", type="primary", key="au_draw", disabled=taken):
        _draw(name, chosen, fraction, seed, level)
    st.stop()


def choose_runs(runs: pd.DataFrame) -> list[str]:
    """The runs to sample (?runs=…). Chosen by default: the answered runs that did not fail
    (`run_choice.default_runs`, as Compare, the results pages and the grid pick); failed runs are
    listed, marked, but picked only when asked for, and "hide failed and empty runs" (the
    Runs page's choice, ?au_runs_show=…) leaves them out of the list."""
    ids = [str(r) for r in runs["run_id"]]
    answered = cached(run_choice.answered_runs, tuple(ids))
    shown = url_radio("Show", list(SHOW), key="au_runs_show", horizontal=True)
    if shown == HIDE_FAILED:
        ids = [r for r in ids if r in answered and answered[r][1] != "failed"]
    failed = {r for r in ids if answered.get(r, (0, ""))[1] == "failed"}
    desc = {
        str(r.run_id): f"{r.run_id!s} · {r.model!s} · {r.setting!s} · {r.mode or 'proactive'!s} · "
        f"{r.n_verdicts!s} verdicts" + (" · failed" if str(r.run_id) in failed else "")
        for r in runs.itertuples()
    }
    return url_multiselect(
        "Runs to sample verdicts from",
        ids,
        key="runs",
        default=cached(run_choice.default_runs, tuple(ids), len(ids)),
        format_func=lambda r: desc.get(r, r),
    )


def _name_taken(name: str) -> bool:
    """Whether an audit of this name exists (said, with a button to open it)."""
    taken = uncached(audit.get_audit, name) if name else None
    if taken is None:
        return False
    st.warning(
        md_escape(
            f"An audit named {name!r} already exists: {taken.describe()}. Drawing under "
            "this name is off (it would not draw anything new): choose another name for a "
            "new sample, or open that audit."
        )
    )
    st.button(
        f"Open audit {name}",
        key="au_open_existing",
        on_click=url_select,
        args=("audit", name),
    )
    return True


def _preview(chosen: list[str], fraction: float, level: str) -> None:
    """Sampled items per stratum, and a warning when a run gets fewer than MIN_N of them: its
    judge-corrected (PPI) estimates would say "n too small"."""
    pool = cached(audit.verdict_pool, tuple(chosen), level)
    strata = ["run_id", "category"]
    sizes = audit.stratum_sizes(pool.groupby(strata).size().to_dict(), fraction)
    preview = pool.groupby([*strata, "model"]).size().rename("verdicts").reset_index()
    preview["sampled"] = [sizes[(r, c)] for r, c in zip(preview["run_id"], preview["category"])]
    st.caption(
        f"{int(preview['sampled'].sum())} of {len(pool)} judged responses will be "
        "sampled: round(fraction × stratum size), at least one per stratum (run × category, so "
        "every run gets its share). Controls (error-free questions) form their own "
        "category."
    )
    table(preview, "audit_strata_preview")
    per_run = preview.groupby("run_id")["sampled"].sum()
    few = per_run[per_run < MIN_N]
    if len(few):  # PPI corrects a run with people's labels on its own sampled items
        st.warning(
            md_escape(
                "Too few items per run for the judge-corrected (PPI) estimates: "
                + ", ".join(f"{r} gets {int(k)}" for r, k in few.items())
                + f'. Below {MIN_N} labelled items a run\'s PPI rows say "n too small"; '
                "raise the sample fraction (or audit fewer runs at once)."
            )
        )


def _draw(name: str, chosen: list[str], fraction: float, seed: int, level: str) -> None:
    require("draw_audit")
    try:
        with guard_writes():
            info = audit.create_audit(
                get_store(), name, chosen, fraction, seed, level, exist_ok=False
            )
    except audit.AuditError as exc:  # AuditExists too: drawn meanwhile by another session
        st.error(md_escape(str(exc)))
        st.stop()
    record("draw_audit", info.name, f"runs {', '.join(chosen)}; fraction {fraction}, seed {seed}")
    clear_cache()
    url_select("audit", info.name)  # the URL and the browser's selector
    st.rerun()


def _audit_name(fraction: float, seed: int, level: str) -> str:
    """The name field: it follows fraction, seed and strata until the person types a name."""
    default = f"audit-{datetime.now(UTC):%Y%m%d}-s{seed}-{round(fraction * 100)}pct" + (
        f"-{level}" if level != "primary" else ""
    )
    if st.session_state.get("au_name") in (None, st.session_state.get("au_name_default")):
        st.session_state["au_name"] = default
    st.session_state["au_name_default"] = default
    return str(st.text_input("Audit name", key="au_name")).strip()
