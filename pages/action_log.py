"""Action log (admins): who started, imported, deleted, drew or labelled what, and when.

Reads the store's append-only `actions` table (core/access/log.py); the filters live in the
URL, the table downloads as CSV.
"""

from __future__ import annotations

import streamlit as st

from core.access import log as action_log
from pages.ui.access import require
from pages.ui.common import cached, table, url_multiselect, url_text_input

require("action_log")
st.title("🗒️ Action log")
st.caption(
    "Every action taken in the app, newest first: runs and judgings started or cancelled, "
    "imports, judgings deleted, audits drawn, labels saved and imported — who (the signed-in "
    "email, or the machine's user without login), their role, what, on what, when (UTC). "
    "The app only ever appends to this table."
)
people, kinds = cached(action_log.people_and_actions)
c1, c2, c3 = st.columns(3)
with c1:
    who = url_multiselect("Who", people, key="who", default=[])
with c2:
    what = url_multiselect("Action", kinds, key="action", default=[])
with c3:
    target = url_text_input("On (contains)", key="on")
frame = cached(action_log.actions, tuple(who), tuple(what), target.strip())
if frame.empty:
    st.info("No actions recorded" + (" for these filters." if who or what or target else " yet."))
else:
    st.caption(f"{len(frame)} actions" + (" (the newest 10,000)" if len(frame) >= 10_000 else ""))
table(frame, "action_log")
