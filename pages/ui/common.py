"""Shared UI plumbing for the pages: the cached database handle, URL-synced filters, captions.

Not a page itself (app.py lists pages explicitly). Pages call `cached(fn, ...)` with a function
from `core.misprompt.queries` (or another core module) whose first argument is a Store; results are cached
per database file and cleared with `clear_cache()` after a write.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

import pandas as pd
import streamlit as st

from core.storage import DatabaseError, Store

T = TypeVar("T")


def leave_legacy_page_mode() -> None:
    """Make app.py's st.navigation govern the very first session too.

    Streamlit still has MPA v1 behaviour for apps with a `pages/` folder beside the main script:
    until some script calls st.navigation, a fresh server runs the first session's page file
    directly (a deep link then shows file names in the sidebar and skips app.py's page config).
    Every page imports this module, so switching the flag off and rerunning routes that first
    session through app.py like every later one.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


leave_legacy_page_mode()


@st.cache_resource(show_spinner=False)
def _store(path_key: str) -> Store:
    return Store.open(path_key or None)


def get_store() -> Store:
    """The app's one database handle (short-lived connections inside; see core.storage)."""
    import os

    from core.storage import DB_ENV_VAR

    try:
        return _store(os.environ.get(DB_ENV_VAR, ""))
    except DatabaseError as exc:
        st.error(str(exc))
        st.stop()
        raise


@st.cache_data(show_spinner=False, ttl=600)
def _cached_call(db_path: str, module: str, name: str, args: tuple, kwargs: tuple) -> Any:
    import importlib

    fn = getattr(importlib.import_module(module), name)
    return fn(Store(path=__import__("pathlib").Path(db_path), _migrated=True), *args,
              **dict(kwargs))


def cached(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call fn(store, *args, **kwargs) through st.cache_data (args must be hashable)."""
    store = get_store()
    try:
        return _cached_call(str(store.path), fn.__module__, fn.__name__, tuple(args),
                            tuple(sorted(kwargs.items())))
    except DatabaseError as exc:
        st.error(str(exc))
        st.stop()
        raise


def uncached(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """For live views (run progress): no cache."""
    return fn(get_store(), *args, **kwargs)


def clear_cache() -> None:
    _cached_call.clear()


# -- URL query-string state -----------------------------------------------------------------

def _qp_get(key: str) -> str | None:
    value = st.query_params.get(key)
    return value if value not in (None, "") else None


def url_selectbox(label: str, options: Sequence[str], key: str, default: str | None = None,
                  **kwargs: Any) -> str | None:
    """A selectbox whose value lives in the URL (?key=value) so a view can be shared by link."""
    options = list(options)
    if not options:
        st.selectbox(label, ["—"], key=f"w_{key}", disabled=True, **kwargs)
        return None
    wanted = _qp_get(key) or default
    index = options.index(wanted) if wanted in options else 0
    value = st.selectbox(label, options, index=index, key=f"w_{key}", **kwargs)
    if value is not None and st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)
    return value


def url_multiselect(label: str, options: Sequence[str], key: str,
                    default: Sequence[str] | None = None, **kwargs: Any) -> list[str]:
    """A multiselect kept in the URL as a comma-separated list."""
    options = list(options)
    raw = _qp_get(key)
    wanted = raw.split(",") if raw is not None else list(default if default is not None else options)
    wanted = [w for w in wanted if w in options]
    value = st.multiselect(label, options, default=wanted, key=f"w_{key}", **kwargs)
    joined = ",".join(value)
    if st.query_params.get(key, None) != joined:
        st.query_params[key] = joined
    return value


def url_radio(label: str, options: Sequence[str], key: str, default: str | None = None,
              **kwargs: Any) -> str:
    options = list(options)
    wanted = _qp_get(key) or default
    index = options.index(wanted) if wanted in options else 0
    value = st.radio(label, options, index=index, key=f"w_{key}", **kwargs)
    if st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)
    return value


def url_text_input(label: str, key: str, **kwargs: Any) -> str:
    """A text input kept in the URL (empty = no parameter)."""
    value = st.text_input(label, value=_qp_get(key) or "", key=f"w_{key}", **kwargs)
    if (st.query_params.get(key) or "") != value:
        if value:
            st.query_params[key] = value
        elif key in st.query_params:
            del st.query_params[key]
    return value


def url_number_input(label: str, key: str, min_value: int, max_value: int, default: int,
                     **kwargs: Any) -> int:
    """An integer input kept in the URL, clamped to [min_value, max_value]."""
    try:
        wanted = int(_qp_get(key) or default)
    except ValueError:
        wanted = default
    wanted = min(max(wanted, min_value), max_value)
    wkey = f"w_{key}"
    if wkey in st.session_state:
        if not min_value <= (st.session_state[wkey] or min_value) <= max_value:
            st.session_state[wkey] = wanted      # the range shrank (a filter narrowed it)
        value = st.number_input(label, min_value=min_value, max_value=max_value, step=1,
                                key=wkey, **kwargs)   # the state holds the value
    else:
        value = st.number_input(label, min_value=min_value, max_value=max_value, value=wanted,
                                step=1, key=wkey, **kwargs)
    value = int(value if value is not None else wanted)
    if st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)
    return value


# -- presentation ---------------------------------------------------------------------------

WEAK_MODEL_NOTE = (
    "⚠️ Weak model: SmolLM2-135M-Instruct is a tiny local demo model. Its answers and verdicts "
    "show the mechanics, not what a capable model or judge would say."
)


def source_caption(*sources: str) -> None:
    """Every chart names where its numbers come from."""
    st.caption("Source: " + "; ".join(s for s in sources if s))


def download(frame: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    st.download_button(label, frame.to_csv(index=False).encode(), file_name=f"{name}.csv",
                       mime="text/csv", key=f"dl_{name}")


def table(frame: pd.DataFrame, name: str, **kwargs: Any) -> None:
    """A dataframe with its CSV download (every table can be downloaded)."""
    st.dataframe(frame, width="stretch", hide_index=True, **kwargs)
    download(frame, name)
