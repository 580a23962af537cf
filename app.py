"""Streamlit entry point: page config, navigation, one cached database handle.

Pages are thin: they read through `pages.ui.common` (cached calls into `core.benchmarks.misprompt.queries`) and
never open the database themselves.
"""

import streamlit as st

from core.store import DatabaseError
from pages.ui.common import database_notice, leave_legacy_page_mode

leave_legacy_page_mode()

st.set_page_config(
    page_title="Error-handling workbench", page_icon=":material/explore:", layout="wide"
)

PAGES = {
    "Explore": [
        st.Page("pages/overview.py", title="Overview", icon=":material/home:", default=True),
        st.Page(
            "pages/misprompt_results.py", title="Mis-prompt results", icon=":material/grid_on:"
        ),
        st.Page("pages/anchoring.py", title="Anchoring (ErrorBench)", icon=":material/anchor:"),
        st.Page(
            "pages/mistake_finding.py", title="Mistake finding (BBM)", icon=":material/search:"
        ),
        st.Page(
            "pages/proactive_passive.py", title="Proactive vs passive", icon=":material/balance:"
        ),
        st.Page("pages/grid.py", title="Responses", icon=":material/table_rows:"),
    ],
    "Do": [
        st.Page("pages/playground.py", title="Playground", icon=":material/science:"),
        st.Page("pages/runs.py", title="Runs", icon=":material/play_arrow:"),
        st.Page("pages/import_data.py", title="Import", icon=":material/upload_file:"),
        st.Page("pages/judge_audit.py", title="Judge audit", icon=":material/fact_check:"),
    ],
}

page = st.navigation(PAGES)
database_notice()  # a missing / damaged database stops here with its message; read-only: notice
try:
    page.run()
except DatabaseError as exc:  # e.g. a write on a read-only file, a file deleted mid-page
    st.error(str(exc))
