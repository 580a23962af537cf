"""Import page: upload a file of any registered benchmark, preview it, import it by name.

Thin: the benchmark registry (core/registry.py) says which files each benchmark imports, its
upload importer, and (optionally) a preview and a format description; validation and writes
live in core. The page shows what they report (line-numbered problems, nothing written) and
lists the sets.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from core.registry import BENCHMARKS, Benchmark
from core.services import item_sets as item_set_store
from core.sources import described
from core.store import PROJECT_ROOT
from pages.ui.access import record, require
from pages.ui.common import (
    cached,
    clear_cache,
    download_csv_bytes,
    get_store,
    guard_writes,
    md_escape,
    show_text,
    table,
)

KINDS: dict[str, Benchmark] = {b.imports.label or b.label: b for b in BENCHMARKS.values()}


def problems_of(exc: ValueError) -> tuple[list[str], int]:
    """An importer's problems ('FILE:LINE: why'): its list when it keeps one, else its lines."""
    listed = getattr(exc, "errors", None) or getattr(exc, "problems", None)
    lines = [str(p) for p in listed] if listed else [ln for ln in str(exc).split("\n") if ln]
    return lines, int(getattr(exc, "total", None) or len(lines))


def show_problems(errors: list[str], total: int) -> None:
    st.error(f"{total} problem(s) found: nothing was imported. Each line says where and why.")
    more = f"\n… and {total - len(errors)} more" if total > len(errors) else ""
    show_text("\n".join(errors) + more)


st.title("📥 Import data")
st.caption(
    "Load your own items. A file is checked completely before anything is written; a "
    "bad line is reported with its line number and nothing is imported. Importing under "
    "an existing name replaces that set, unless runs use it: their results refer to its "
    "items, so choose another name."
)

kind_label = st.radio("What are you importing?", list(KINDS), horizontal=True, key="import_kind")
bench = KINDS[kind_label]

if bench.imports.format_help:
    with st.expander("Expected format"):
        st.markdown(bench.imports.format_help())
        if bench.imports.builtin is not None:
            sample = PROJECT_ROOT / "data" / "samples" / bench.imports.builtin[1]
            if sample.exists():
                st.download_button(
                    "Download our sample as a template",
                    sample.read_bytes(),
                    file_name=sample.name,
                    mime="text/plain",
                    key="dl_template",
                )

upload = st.file_uploader(
    f"{kind_label} file", type=list(bench.imports.files), key=f"upload_{bench.imports.word}"
)

if upload is not None:
    data = upload.getvalue()
    default_name = Path(upload.name).stem
    ok = True
    if bench.imports.previewer:
        preview = bench.imports.previewer()(data, upload.name)
        ok = preview.ok
        if not ok:
            show_problems(preview.errors, preview.total_errors)
        else:
            st.success(md_escape(preview.summary))
            cols = st.columns([3, 2][: len(preview.frames)] or [1])
            for col, (title, frame) in zip(cols, preview.frames):
                with col:
                    st.markdown(f"**{md_escape(title)}**")
                    st.dataframe(frame, hide_index=True, width="stretch")
    else:
        text = data.decode("utf-8", errors="replace")
        lines = text.split("\n")  # as the importers read it (U+2028 is text)
        st.markdown(f"**Preview** ({len(lines)} lines)")
        st.code("\n".join(line[:300] for line in lines[:12]), language=None)

    name = st.text_input("Item set name", value=default_name, key="set_name")
    ready = ok and bool(name.strip()) and not get_store().read_only
    if st.button("Import", type="primary", disabled=not ready, key="do_import"):
        require("import")
        try:
            with guard_writes():
                n = bench.imports.importer()(get_store(), data, upload.name, name.strip())
        except ValueError as exc:
            show_problems(*problems_of(exc))
        else:
            record("import", name.strip(), f"{n} items from {upload.name}")
            clear_cache()
            st.success(f"Imported {n} items as item set **{md_escape(name.strip())}**.")

st.divider()
st.subheader("Results from other tools")
formats_text = described()
st.caption(
    formats_text[:1].upper()
    + formats_text[1:]
    + " becomes runs like any other (docs/results-from-other-tools.md). Items are matched by id "
    "or by input text; the counts show before anything is written, and a file lands whole or "
    "not at all. The same file again changes nothing."
)
results_upload = st.file_uploader(
    "Results file", type=["eval", "json", "jsonl"], key="upload_results"
)
if results_upload is not None:
    from core.sources import FORMATS, SourceError
    from core.sources.service import Options, import_upload, plans_frame

    c1, c2, c3 = st.columns(3)
    fmt = c1.selectbox("Format", ["(recognise)", *FORMATS], key="results_format")
    set_names = ["(match automatically)", *cached(item_set_store.item_sets)["name"]]
    item_set = c2.selectbox("Match to item set", set_names, key="results_item_set")
    run_name = c3.text_input("Run name (optional)", key="results_run_name")
    new_set = c1.text_input("…or build a new item set named", key="results_new_set")
    new_bench = c2.selectbox("of benchmark", list(BENCHMARKS), key="results_benchmark")
    options = Options(
        fmt=None if fmt == "(recognise)" else fmt,
        item_set=None if item_set.startswith("(") or new_set.strip() else item_set,
        new_item_set=new_set.strip() or None,
        benchmark=new_bench if new_set.strip() else None,
        name=run_name.strip() or None,
    )
    data = results_upload.getvalue()
    try:
        plans, _ = import_upload(get_store(), data, results_upload.name, options, write=False)
    except ValueError as exc:
        st.error("Nothing can be imported from this file:")
        show_text(str(exc))
    else:
        table(plans_frame(plans), "results_plan")
        problems = [p for plan in plans for p in plan.problems]
        if problems:
            st.warning("This file would be refused as it is:")
            show_text("\n".join(problems))
        ready = not problems and not get_store().read_only
        if st.button("Import results", type="primary", disabled=not ready, key="do_results"):
            try:
                with guard_writes():
                    plans, written = import_upload(
                        get_store(), data, results_upload.name, options, write=True
                    )
            except (SourceError, ValueError) as exc:
                st.error("Nothing was imported:")
                show_text(str(exc))
            else:
                clear_cache()
                fresh = [p.run_id for p in plans if not p.unchanged]
                if fresh:
                    st.success(
                        f"Imported {written} responses as run(s) {md_escape(', '.join(fresh))}."
                    )
                else:
                    st.info("Already imported: nothing was written.")

st.divider()
st.subheader("Item sets in this database")
sets: pd.DataFrame = cached(item_set_store.item_sets)
if sets.empty:
    st.info(
        "No item sets yet. Run `python -m core init` to load the built-in samples, or "
        "import a file above."
    )
else:
    table(sets, "item_sets")
    pick = st.selectbox("Download the items of a set", list(sets["name"]), key="dl_set")
    if pick:
        download_csv_bytes(
            cached(item_set_store.export_items_csv, pick),
            pick,
            f"Download {md_escape(pick)} (CSV)",
            key="dl_items",
        )
