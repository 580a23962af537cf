"""Judge audit, the Export / import tab: labels as CSV."""

from __future__ import annotations

import streamlit as st

from core.services import audit
from pages.ui.access import allowed, record, refused_text, require
from pages.ui.common import (
    clear_cache,
    download_csv_bytes,
    get_store,
    guard_writes,
    md_escape,
    show_text,
    uncached,
)

NEW = audit.NEW_AUDIT_KEY  # ?audit=new: a stable key in the URL, shown as NEW_LABEL
NEW_LABEL = "➕ New audit"


def csv_tab(name: str) -> None:
    st.markdown(
        "**Export** one row per (response, annotator, label): run_id, item_id, variant, "
        "annotator, label, value, judge_value, note, created_at."
    )
    download_csv_bytes(
        uncached(audit.export_labels_csv, name),
        f"labels_{name}",
        "Download labels CSV",
        key="au_export",
    )
    st.markdown(
        "**Import** labels in the same format (e.g. from a colleague's database). Every "
        "row is checked first; any error (with its line) means nothing is written. A row "
        "replaces a saved label unless the saved one is newer."
    )
    if not allowed("import_labels"):
        st.caption(refused_text("import_labels"))
        return
    upload = st.file_uploader("Labels CSV", type=["csv"], key="au_upload")
    if upload is not None and st.button("Import labels", key="au_import"):
        require("import_labels")
        try:
            with guard_writes():
                result = audit.import_labels_csv(get_store(), upload.getvalue())
        except audit.AuditError as exc:
            st.error(md_escape(str(exc).split("\n")[0]))
            show_text("\n".join(str(exc).split("\n")[1:]) or str(exc))
        else:
            record("import_labels", name, f"{result.written} of {result.rows} labels")
            clear_cache()
            st.success(
                f"Imported {result.written} of {result.rows} labels"
                + (
                    f"; {result.skipped_older} kept because the saved label is newer."
                    if result.skipped_older
                    else "."
                )
            )
