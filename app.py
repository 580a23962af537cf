"""Streamlit entry point: page config, navigation, one cached database handle.

The benchmarks' results pages come from the registry, so a new benchmark adds no line here.
Pages are thin: they read through `pages.ui.common` (cached calls into `core`) and never open
the database themselves.
"""

from pathlib import Path

import streamlit as st

from core.registry import BENCHMARKS
from core.store import DatabaseError
from pages.ui.access import gate, navigation_pages, page_stem, require_page
from pages.ui.common import database_notice, leave_legacy_page_mode, rerun_session

leave_legacy_page_mode()

st.set_page_config(
    page_title="Error-handling workbench", page_icon=":material/explore:", layout="wide"
)

OTHER_PAGES = {
    "Explore": [
        st.Page(
            "pages/proactive_passive.py", title="Proactive vs passive", icon=":material/balance:"
        ),
        st.Page("pages/grid.py", title="Responses", icon=":material/table_rows:"),
        st.Page("pages/compare.py", title="Compare runs", icon=":material/compare_arrows:"),
    ],
    "Do": [
        st.Page("pages/playground.py", title="Playground", icon=":material/science:"),
        st.Page("pages/runs.py", title="Runs", icon=":material/play_arrow:"),
        st.Page("pages/import_data.py", title="Import", icon=":material/upload_file:"),
        st.Page("pages/judge_audit.py", title="Judge audit", icon=":material/fact_check:"),
    ],
}
# Each registered benchmark's results page, in registry order; a page listed already (a
# benchmark that shows its results on a shared page) is listed once.
_listed = {"overview", *(p.url_path for pages in OTHER_PAGES.values() for p in pages)}
RESULT_PAGES = []
for _bench in BENCHMARKS.values():
    if Path(_bench.results_page.path).stem not in _listed:
        _listed.add(Path(_bench.results_page.path).stem)
        RESULT_PAGES.append(
            st.Page(
                _bench.results_page.path,
                title=_bench.results_page.title,
                icon=_bench.results_page.icon,
            )
        )

PAGES = {
    "Explore": [
        st.Page("pages/overview.py", title="Overview", icon=":material/home:", default=True),
        *RESULT_PAGES,
        *OTHER_PAGES["Explore"],
    ],
    "Do": OTHER_PAGES["Do"],
    "Admin": [st.Page("pages/action_log.py", title="Action log", icon=":material/history:")],
}

# Pages that wait on a model while they run: they hold no attachment of the file meanwhile
# (every other page's queries share one per rerun, pages/ui/common.py's rerun_session).
WAITS_ON_MODELS = {"playground"}

# Who is in front of the app decides which pages exist for them (pages/ui/access.py): a page
# left out cannot be reached by link or URL either, and require_page checks again. Expanded:
# every page stays listed (13 pages fold to "View 3 more" by default, which hid Runs, Import
# and Judge audit on pages with sidebar content).
person = gate(PAGES)
page = st.navigation(navigation_pages(PAGES, person), expanded=True)
require_page(page_stem(page))
database_notice()  # a missing / damaged database stops here with its message; read-only: notice
try:
    with rerun_session(hold=page.url_path not in WAITS_ON_MODELS):
        page.run()
except DatabaseError as exc:  # e.g. a write on a read-only file, a file deleted mid-page
    st.error(str(exc))
