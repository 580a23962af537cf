"""Import page: upload a Mis-prompt, BIG-Bench Mistake or M2 file, preview it, import it by name.

Thin: validation and writes live in core (core.misprompt.items, core.bbm, core.errorbench);
this page shows what they report (line-numbered problems, nothing written) and lists the sets.
"""

from __future__ import annotations

import inspect
import importlib
import tempfile
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import streamlit as st

from core.misprompt import items as mi
from core.misprompt.taxonomy import display_name
from pages.ui.common import (cached, clear_cache, download_csv_bytes, get_store, guard_writes,
                             md_escape, show_text, table)

KINDS = {
    "Mis-prompt items": ("misprompt", ["csv", "json", "jsonl", "tsv"]),
    "BIG-Bench Mistake traces": ("bbm", ["jsonl", "json"]),
    "ErrorBench (M2 file)": ("m2", ["m2", "txt"]),
}
# Importers other helpers provide: (module, function) candidates, first found wins.
OTHER_IMPORTERS: dict[str, list[tuple[str, str]]] = {
    "bbm": [("core.bbm.items", "import_files"), ("core.bbm", "import_files"),
            ("core.bbm", "import_file")],
    "m2": [("core.errorbench.cli", n) for n in ("import_m2", "import_file", "import_m2_file",
                                                "import_path", "import_passages")]
          + [("core.errorbench", "import_m2")],
}


def find_importer(kind: str) -> Callable[..., Any] | None:
    for module_name, name in OTHER_IMPORTERS.get(kind, []):
        try:
            module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - a helper's module still being written
            continue
        fn = getattr(module, name, None)
        if callable(fn):
            return fn
    return None


def run_other_importer(fn: Callable[..., Any], data: bytes, filename: str, name: str) -> int:
    """Call a (store, path-or-paths-or-bytes, name) importer with the upload; returns the count."""
    store = get_store()
    params = list(inspect.signature(fn).parameters.values())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(filename).name  # keep the name: BBM infers the task from it
        path.write_bytes(data)
        second = params[1].name if len(params) > 1 else "path"
        if second in ("paths", "files"):
            arg: Any = [path]
        elif second in ("data", "content", "raw", "payload"):
            arg = data
        else:
            arg = path
        kwargs = {"name": name} if "name" in [p.name for p in params] else {}
        try:
            result = fn(store, arg, **kwargs) if kwargs else fn(store, arg, name)
        except ValueError as exc:
            problems = getattr(exc, "problems", None) or getattr(exc, "errors", None) \
                or str(exc).splitlines()
            raise mi.ItemImportError([str(p).replace(str(tmp) + "/", "") for p in problems]) \
                from exc
    if isinstance(result, int):
        return result
    if isinstance(result, dict):  # ErrorBench's import_m2 returns its summary
        return int(result.get("passages") or result.get("n_items") or 0)
    return int(getattr(result, "n_items", 0) or getattr(result, "n_passages", 0) or 0)


def show_problems(errors: list[str], total: int) -> None:
    st.error(f"{total} problem(s) found: nothing was imported. Each line says where and why.")
    more = f"\n… and {total - len(errors)} more" if total > len(errors) else ""
    show_text("\n".join(errors) + more)


st.title("📥 Import data")
st.caption("Load your own items. A file is checked completely before anything is written; a "
           "bad line is reported with its line number and nothing is imported. Importing under "
           "an existing name replaces that set, unless runs use it: their results refer to its "
           "items, so choose another name.")

kind_label = st.radio("What are you importing?", list(KINDS), horizontal=True, key="import_kind")
kind, types = KINDS[kind_label]

if kind == "misprompt":
    with st.expander("Expected format"):
        st.markdown(
            "CSV (header row), JSON (a list, or `{\"data\": [...]}`) or JSONL with the released "
            "export's fields: `" + "`, `".join(mi.COLUMNS) + "`.\n\n"
            "- `error` is `error` or `no_error` (control questions; the original `correct` is "
            "accepted).\n- Categories follow the paper's taxonomy; the tables' short names such "
            "as `TextContSubjSpec` and the long names are both accepted. The primary category "
            "may be left empty; if given it must be the secondary's.\n- Erroneous items need a "
            "`gold_answer` (the judge compares against it); controls must have no category.")
        sample = (Path(mi.__file__).resolve().parent.parent / "data" / "samples"
                  / "misprompt_sample.csv")
        if sample.exists():
            st.download_button("Download our sample as a template", sample.read_bytes(),
                               file_name="misprompt_sample.csv", mime="text/csv",
                               key="dl_template")

upload = st.file_uploader(f"{kind_label} file", type=types, key=f"upload_{kind}")

if upload is not None:
    data = upload.getvalue()
    default_name = Path(upload.name).stem
    if kind == "misprompt":
        parsed = mi.parse_bytes(data, upload.name)
        if not parsed.ok:
            show_problems(parsed.errors, parsed.total_errors)
        else:
            items = parsed.items
            n_err = int(items["is_error"].sum())
            st.success(f"{len(items)} items read from {md_escape(upload.name)}: {n_err} erroneous, "
                       f"{len(items) - n_err} controls.")
            counts = (items[items["is_error"]]
                      .groupby(["primary_category", "secondary_category"]).size()
                      .rename("items").reset_index())
            counts["secondary_category"] = counts["secondary_category"].map(display_name)
            left, right = st.columns([3, 2])
            with left:
                st.markdown("**Preview**")
                preview = items[["item_id", "split", "is_error", "primary_category",
                                 "secondary_category", "prompt", "gold"]].head(50)
                st.dataframe(preview, hide_index=True, width="stretch")
            with right:
                st.markdown("**Erroneous items per category**")
                st.dataframe(counts, hide_index=True, width="stretch")
    else:
        text = data.decode("utf-8", errors="replace")
        lines = text.split("\n")  # as the importers read it (U+2028 is text)
        st.markdown(f"**Preview** ({len(lines)} lines)")
        st.code("\n".join(line[:300] for line in lines[:12]), language=None)

    importer = None if kind == "misprompt" else find_importer(kind)
    available = kind == "misprompt" or importer is not None
    if not available:
        st.warning(f"Importing {kind_label} is not available in this build yet.")
    name = st.text_input("Item set name", value=default_name, key="set_name")
    ready = (available and bool(name.strip()) and (kind != "misprompt" or parsed.ok)
             and not get_store().read_only)
    if st.button("Import", type="primary", disabled=not ready, key="do_import"):
        try:
            with guard_writes():
                if kind == "misprompt":
                    n = mi.import_bytes(get_store(), data, upload.name, name.strip())
                else:
                    n = run_other_importer(importer, data, upload.name, name.strip())
        except mi.ItemImportError as exc:
            show_problems(exc.errors, exc.total)
        else:
            clear_cache()
            st.success(f"Imported {n} items as item set **{md_escape(name.strip())}**.")

st.divider()
st.subheader("Item sets in this database")
sets: pd.DataFrame = cached(mi.item_sets)
if sets.empty:
    st.info("No item sets yet. Run `python -m core init` to load the built-in samples, or "
            "import a file above.")
else:
    table(sets, "item_sets")
    pick = st.selectbox("Download the items of a set", list(sets["name"]), key="dl_set")
    if pick:
        download_csv_bytes(cached(mi.export_items_csv, pick), pick,
                           f"Download {md_escape(pick)} (CSV)", key="dl_items")
