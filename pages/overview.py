"""Overview: what the database holds (runs, published sources, item sets, counts) and where to go next."""

from __future__ import annotations

import streamlit as st

from core.declared import example_run
from core.registry import BENCHMARKS
from core.services import overview
from core.store import snapshots
from pages.ui.access import may_open_page
from pages.ui.common import WEAK_MODEL_NOTE, cached, get_store, table
from pages.ui.runs import add_link_columns

st.title("Error-handling workbench")
# Both lists come from the registry: a new benchmark appears here by itself.
_proactive = [b.label for b in BENCHMARKS.values() if b.mode == "proactive"]
_passive = [b.label for b in BENCHMARKS.values() if b.mode != "proactive"]
st.caption(
    f"Evaluate how LLMs handle errors: proactively ({', '.join(_proactive)} — does a model "
    f"notice a flawed question on its own?) and passively ({', '.join(_passive)} — can it find "
    "errors when asked?). Published results are preloaded; runs against any OpenAI-compatible "
    f"endpoint appear beside them. {len(BENCHMARKS)} benchmarks."
)

store = get_store()
st.caption(f"Database: `{store.display}`")
if store.is_lake:  # a team store: which snapshot this is, and the ones a view can be pinned to
    snaps = cached(snapshots.snapshot_list)
    if store.as_of is not None:
        st.caption(f"Showing snapshot {store.as_of} (pinned with ?as_of=).")
    else:
        st.caption(
            f"Showing snapshot {store.data_version()}, the latest: every write makes a new one. "
            "Pin a view to an earlier one with ?as_of=N (the list below)."
        )
    with st.expander(f"Snapshots ({len(snaps):,} newest)"):
        usable = snaps[snaps["usable"]].drop(columns="usable")
        table(
            usable.assign(view=[f"./?as_of={n}" for n in usable["snapshot_id"]]),
            "snapshots",
            column_config={"view": st.column_config.LinkColumn("view", display_text="pin to it")},
        )

counts = cached(overview.table_counts)
n = dict(zip(counts["table_name"], counts["rows"]))
cols = st.columns(5)
published_cells = cached(overview.published_cells)
cols[0].metric("Published cells", f"{published_cells:,}")
cols[1].metric("Item sets", f"{n.get('item_sets', 0):,}")
cols[2].metric("Items", f"{n.get('items', 0):,}")
cols[3].metric("Runs", f"{n.get('runs', 0):,}")
cols[4].metric("Results", f"{n.get('results', 0):,}", help="judged or scored responses")

if not published_cells:
    st.warning(
        "No published results are loaded. Run `python -m core init` (or `./start.sh`) "
        "to create the database and load the papers' tables."
    )

st.subheader("Where to go next")
nav = st.columns(3)
with nav[0]:
    st.markdown("**Results**")
    _linked: set[str] = set()
    for _bench in BENCHMARKS.values():  # each benchmark's results page, in registry order
        if (
            _bench.results_page.path not in _linked
            and _bench.results_page.path != "pages/overview.py"
        ):
            _linked.add(_bench.results_page.path)
            st.page_link(
                _bench.results_page.path,
                label=_bench.results_page.title,
                icon=_bench.results_page.icon,
            )
with nav[1]:
    st.markdown("**Explore**")
    st.page_link(
        "pages/proactive_passive.py", label="Proactive vs passive", icon=":material/balance:"
    )
    st.page_link("pages/grid.py", label="Responses (item × run grid)", icon=":material/table_rows:")
    st.page_link("pages/compare.py", label="Compare two runs", icon=":material/compare_arrows:")
    if may_open_page("playground"):  # a link to a page the role lacks would not resolve
        st.page_link("pages/playground.py", label="Playground", icon=":material/science:")
with nav[2]:
    st.markdown("**Do**")
    st.page_link("pages/runs.py", label="Start or watch a run", icon=":material/play_arrow:")
    if may_open_page("import_data"):
        st.page_link("pages/import_data.py", label="Import items", icon=":material/upload_file:")
    st.page_link("pages/judge_audit.py", label="Audit the judge", icon=":material/fact_check:")

st.subheader("Runs")
runs = cached(overview.runs_overview)
if runs.empty:
    st.info(
        "No runs yet. Start one on the Runs page, or from the command line: "
        f"`python -m core run {example_run()}`."
    )
else:
    if runs["weak_model"].any():
        st.warning(WEAK_MODEL_NOTE)
    summary = (
        runs.groupby(["benchmark", "status"], dropna=False)
        .agg(runs=("run_id", "size"), responses=("responses", "sum"), failed=("failed", "sum"))
        .reset_index()
    )
    st.dataframe(summary, hide_index=True, width="stretch")
    config: dict = {}
    table(add_link_columns(runs, config), "runs", column_config=config)

st.subheader("Published sources")
st.caption(
    "The papers' tables, unchanged (only names normalised, by each benchmark's loader, to the "
    "words its runs use)."
)
table(cached(overview.published_sources), "published_sources")

st.subheader("Item sets")
sets = cached(overview.item_sets)
if sets.empty:
    st.info(
        "No item sets. `python -m core init` loads the built-in samples; the Import page "
        "loads your own."
    )
else:
    table(sets, "item_sets")

with st.expander("Rows per table"):
    table(counts, "table_counts")
    st.caption(
        "Query the file directly: `duckdb data/results.duckdb` — the schema is in the "
        "docs/architecture.md (Database schema)."
    )
