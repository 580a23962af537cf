"""Streamlit entry point: page config, navigation, one cached database handle.

Pages are thin: they read through `pages.common` (cached calls into `core.queries`) and
never open the database themselves.
"""

import streamlit as st

st.set_page_config(page_title="Error-handling workbench", page_icon="🧭", layout="wide")

PAGES = {
    "Explore": [
        st.Page("pages/overview.py", title="Overview", icon="🏠", default=True),
        st.Page("pages/misprompt_results.py", title="Mis-prompt results", icon="🔥"),
        st.Page("pages/anchoring.py", title="Anchoring (ErrorBench)", icon="⚓"),
        st.Page("pages/mistake_finding.py", title="Mistake finding (BBM)", icon="🔎"),
        st.Page("pages/proactive_passive.py", title="Proactive vs passive", icon="⚖️"),
    ],
    "Do": [
        st.Page("pages/playground.py", title="Playground", icon="🧪"),
        st.Page("pages/runs.py", title="Runs", icon="▶️"),
        st.Page("pages/import_data.py", title="Import", icon="📥"),
        st.Page("pages/judge_audit.py", title="Judge audit", icon="✅"),
    ],
}

st.navigation(PAGES).run()
