"""Shared UI plumbing for the pages: the cached database handle, URL-synced filters, captions.

Not a page itself (app.py lists pages explicitly). Pages call `cached(fn, ...)` with a function
from a benchmark package's `queries` (or another core module) whose first argument is a
Store; results are cached per store and store version (`Store.data_version`: a file's change
counter, bumped by every write transaction of any process, or a DuckLake's snapshot id), so a
run, rescore, import or label saved elsewhere shows on the next rerun. `?as_of=N` pins every
view to a lake snapshot.
"""

from __future__ import annotations

import contextlib
import gc
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import pandas as pd
import streamlit as st

from core.declared import wire_store
from core.store import DatabaseError, Store

T = TypeVar("T")
wire_store()  # every page imports this module: the store learns the benchmarks' views first


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


@st.cache_resource(show_spinner=False)
def _store(path_key: str, as_of: int | None = None) -> Store:
    # create=False: the app is a reader; only `init` and the CLI's writers create the file, so
    # a database deleted under a running app is reported, not replaced by an empty one
    return Store.open(path_key or None, create=False, as_of=as_of)


def pinned_snapshot() -> int | None:
    """?as_of=N in the URL: every view reads the DuckLake as it was at snapshot N."""
    raw = st.query_params.get("as_of")
    if raw in (None, ""):
        return None
    try:
        return int(str(raw))
    except ValueError:
        raise DatabaseError(f"?as_of={raw!s}: a snapshot id is a whole number") from None


def get_store() -> Store:
    """The app's one database handle (short-lived connections inside; see core.store).

    Any database problem (missing, vanished, damaged, too new, locked) stops the page with its
    one-line message instead of a traceback."""
    import os

    from core.store import DB_ENV_VAR, DatabaseMissing, missing_message

    try:
        store = _store(os.environ.get(DB_ENV_VAR, ""), pinned_snapshot())
        if not store.exists():
            raise DatabaseMissing(missing_message(store.path))
        return store
    except DatabaseError as exc:
        st.error(str(exc))
        st.stop()
        raise


@contextlib.contextmanager
def guard_writes() -> Iterator[None]:
    """Around a page's write (import, audit draw, labels, playground save, cancel): a database
    problem (read-only, vanished, locked) becomes its one-line st.error and the page stops,
    rather than a traceback. app.py catches the same at the top, but Streamlit can run a page
    without app.py around it (its legacy page mode), so writes guard themselves too."""
    try:
        yield
    except DatabaseError as exc:
        st.error(str(exc))
        st.stop()


def _read_only_notice(path: object) -> str:
    return (
        f"Read-only database: {md_escape(str(path))} (the file or its folder "
        "is not writable). Browsing works; runs, imports and labels are disabled."
    )


def database_notice() -> None:
    """app.py calls this before every page: a read-only database is browsable, but say that
    writes are off before someone fills in a form."""
    store = get_store()
    if store.as_of is not None:
        st.info(
            f"Pinned to snapshot {store.as_of} of the team store (?as_of= in the URL): every "
            "number on this page is the store as it was then. Remove ?as_of= for the latest.",
            icon=":material/history:",
        )
    elif store.read_only:
        st.warning(_read_only_notice(store.display), icon=":material/lock:")


_MODULES_FROZEN = 0  # len(sys.modules) at the last gc.freeze()


def freeze_imports() -> bool:
    """Move the objects alive now into the garbage collector's permanent generation
    (`gc.freeze()`) whenever modules were imported since the last time; returns whether it did.

    Streamlit runs a full collection after every script run, fragment reruns included
    (`runner.postScriptGC`, on by default to keep a long-lived server's memory down). A full
    collection walks every object the process tracks, most of them the imported modules'
    (streamlit, pandas, pyarrow, DuckDB, core: ~120,000 objects, plotly and openai more): 0.1 s
    and more of the server's CPU after each j / k on the grid, holding the GIL while the key's
    deltas wait to be sent (issue 31, point 8). Frozen, they are skipped; what a rerun makes is
    still collected after it, so the memory hygiene stays. Called at the start of a full run
    (`rerun_session`), and only when imports grew (a few times in a server's life): it
    collects first, so what it freezes is what lives on (modules, caches), not garbage that
    would then never be collected (a frozen object is still freed by its reference count)."""
    global _MODULES_FROZEN
    if len(sys.modules) <= _MODULES_FROZEN:
        return False
    gc.collect()
    gc.freeze()
    _MODULES_FROZEN = len(sys.modules)
    return True


@contextlib.contextmanager
def rerun_session(hold: bool = True) -> Iterator[None]:
    """Around a page's run (app.py): its queries share one attachment of the file
    (`Store.session()`: attaching costs ~1.5 ms, a page's first run makes 5-15 queries), let
    go when the run ends, so other processes write between reruns as before. `hold=False` for
    a page that waits on a model mid-run (the playground): the file stays free meanwhile. A lake
    keeps its attachment anyway; a store problem is the page's to report (get_store). Freezes
    the imports first (freeze_imports: Streamlit's collection after the run then skips them)."""
    freeze_imports()
    with contextlib.ExitStack() as stack:
        if hold:
            try:
                stack.enter_context(get_store().session())
            except DatabaseError:  # e.g. locked longer than the wait: each query says so itself
                pass
        yield


def writes_disabled() -> bool:
    """Whether this page's writes (a Start button, an import) must be offered disabled; says
    why where the button is. Every place that starts a run asks this (the Runs page, the
    benchmark pages' start panels): a run on a read-only file would fail after creating its
    log folder beside it."""
    store = get_store()
    if store.read_only:
        st.info(_read_only_notice(store.display), icon=":material/lock:")
    return store.read_only


# (the rerun's marker object, version read in that rerun) per session: one read per rerun
_VERSION_SEEN: dict[str, tuple[object, int]] = {}


def store_version(store: Store) -> int:
    """The store's version as this rerun sees it: read once per script run (a page's ten
    cached calls share one read, and one rerun never mixes two versions), then again on the
    next rerun. Outside a Streamlit run (tests calling helpers directly): read every time."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    # a new coordinator object is made by every rerun's reset (kept here, so never reused)
    marker = getattr(ctx, "parallel_coordinator", None) if ctx is not None else None
    if ctx is None or marker is None:
        return store.data_version()
    key = f"{ctx.session_id}|{store.display}"
    seen = _VERSION_SEEN.get(key)
    if seen is not None and seen[0] is marker:
        return seen[1]
    version = store.data_version()
    if len(_VERSION_SEEN) > 256:
        _VERSION_SEEN.clear()
    _VERSION_SEEN[key] = (marker, version)
    return version


@st.cache_data(show_spinner=False, ttl=600, max_entries=256)
def _cached_call(
    db_path: str,
    module: str,
    name: str,
    args: tuple,
    kwargs: tuple,
    read_only: bool = False,
    version: int = 0,
    as_of: int | None = None,
) -> Any:
    """`version` is only part of the cache key (Store.data_version when the call was made)."""
    del version
    import importlib

    fn = getattr(importlib.import_module(module), name)
    store = Store.handle(db_path, read_only=read_only, as_of=as_of)
    return fn(store, *args, **dict(kwargs))


def _call_key(fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> tuple:
    """_cached_call's arguments for fn(store, *args, **kwargs) on this session's store: the
    one cache key `cached` reads and `warm` fills."""
    store = get_store()
    return (
        store.location,
        fn.__module__,
        fn.__name__,
        tuple(args),
        tuple(sorted(kwargs.items())),
        store.read_only,
        store_version(store),
        store.as_of,
    )


def cached(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call fn(store, *args, **kwargs) through st.cache_data (args must be hashable), keyed on
    the store's version: an entry made before any write, by any process, is never served."""
    try:
        return _cached_call(*_call_key(fn, args, kwargs))
    except DatabaseError as exc:
        st.error(str(exc))
        st.stop()
        raise


def warm(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Put `cached(fn, *args, **kwargs)` in the cache from a background thread, for a call the
    user's next keypress is likely to make (the grid's next item before j): that rerun then
    finds it there instead of waiting for the query. The key is taken here, in the script's
    thread (the URL's snapshot, this rerun's store version); a rerun asking for the same key
    while the thread computes it waits for that result (st.cache_data locks per key) rather
    than computing it twice. Errors are left to the rerun that asks for it."""
    from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

    key = _call_key(fn, args, kwargs)

    def run() -> None:
        with contextlib.suppress(Exception):
            _cached_call(*key)

    thread = threading.Thread(target=run, name="ehw-warm", daemon=True)
    # the session's context: st.cache_data then runs as it does in the script (no "missing
    # ScriptRunContext" warning per call)
    add_script_run_ctx(thread, get_script_run_ctx())
    thread.start()


def uncached(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """For live views (run progress): no cache."""
    return fn(get_store(), *args, **kwargs)


# Built figures by (database, store version, the caller's key), shared by reruns and sessions
_FIGURES: OrderedDict[tuple, Any] = OrderedDict()
_FIGURES_MAX = 64
_FIGURES_LOCK = threading.Lock()


def cached_figure(key: tuple, build: Callable[[], T]) -> T:
    """`build()` once per database version and `key`, then the same figure for every rerun
    and session: building a Plotly heatmap of 40 runs (plotly validates every cell) costs
    0.1-0.3 s, more than the rest of a warm page. `key` must name everything the figure
    shows besides the store's data (view, label, runs shown). The figure must not be changed
    afterwards (st.plotly_chart only copies it)."""
    store = get_store()
    full = (str(store.path), store_version(store), *key)
    with _FIGURES_LOCK:
        if full in _FIGURES:
            _FIGURES.move_to_end(full)
            return _FIGURES[full]
    figure = build()
    with _FIGURES_LOCK:
        _FIGURES[full] = figure
        while len(_FIGURES) > _FIGURES_MAX:
            _FIGURES.popitem(last=False)
    return figure


def clear_cache() -> None:
    _cached_call.clear()
    with _FIGURES_LOCK:
        _FIGURES.clear()


# -- URL query-string state -----------------------------------------------------------------


def _qp_get(key: str) -> str | None:
    value = st.query_params.get(key)
    return value if value not in (None, "") else None


def url_selectbox(
    label: str, options: Sequence[str], key: str, default: str | None = None, **kwargs: Any
) -> str | None:
    """A selectbox whose value lives in the URL (?key=value) so a view can be shared by link."""
    options = list(options)
    if not options:
        st.selectbox(label, ["—"], key=f"w_{key}", disabled=True, **kwargs)
        return None
    wanted = _qp_get(key) or default
    index = options.index(wanted) if wanted in options else 0
    pending = st.session_state.pop(_PENDING + key, None)
    if pending is not None and pending in options:
        st.session_state[f"w_{key}"] = pending  # set through the state: the browser follows
    value = st.selectbox(label, options, index=index, key=f"w_{key}", **kwargs)
    if value is not None and st.query_params.get(key) != str(value):
        st.query_params[key] = str(value)
    return value


_PENDING = "_url_select::"


def url_select(key: str, value: str) -> None:
    """Make the url_selectbox `key` show `value` from the next run on (e.g. a just-created
    audit or exchange), in the URL and in the browser's selector alike.

    Dropping the widget's state is not enough: the browser keeps the old choice and sends it
    back with the next click. A value set through st.session_state before the widget is drawn
    is sent to the browser; this records it for url_selectbox to set then (callers may be past
    the widget already in this run)."""
    st.query_params[key] = value
    st.session_state[_PENDING + key] = value


def url_multiselect(
    label: str,
    options: Sequence[str],
    key: str,
    default: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[str]:
    """A multiselect kept in the URL as a comma-separated list."""
    options = list(options)
    raw = _qp_get(key)
    wanted = (
        raw.split(",") if raw is not None else list(default if default is not None else options)
    )
    wanted = [w for w in wanted if w in options]
    value = st.multiselect(label, options, default=wanted, key=f"w_{key}", **kwargs)
    joined = ",".join(value)
    if st.query_params.get(key, None) != joined:
        st.query_params[key] = joined
    return value


def url_radio(
    label: str, options: Sequence[str], key: str, default: str | None = None, **kwargs: Any
) -> str:
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


def url_number_input(
    label: str, key: str, min_value: int, max_value: int, default: int, **kwargs: Any
) -> int:
    """An integer input kept in the URL, clamped to [min_value, max_value]."""
    try:
        wanted = int(_qp_get(key) or default)
    except ValueError:
        wanted = default
    wanted = min(max(wanted, min_value), max_value)
    wkey = f"w_{key}"
    if wkey in st.session_state:
        if not min_value <= (st.session_state[wkey] or min_value) <= max_value:
            st.session_state[wkey] = wanted  # the range shrank (a filter narrowed it)
        value = st.number_input(
            label, min_value=min_value, max_value=max_value, step=1, key=wkey, **kwargs
        )  # the state holds the value
    else:
        value = st.number_input(
            label,
            min_value=min_value,
            max_value=max_value,
            value=wanted,
            step=1,
            key=wkey,
            **kwargs,
        )
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
    """Every chart names where its numbers come from. Sources carry run and set names (typed
    by users), so each is shown as plain text (md_escape; backticks dropped)."""
    st.caption("Source: " + "; ".join(md_escape(s.replace("`", "")) for s in sources if s))


def download(frame: pd.DataFrame, name: str, label: str = "Download CSV") -> None:
    """A CSV download whose text cells cannot run as spreadsheet formulas (core.services.csvsafe)."""
    from core.services.csvsafe import neutralise_formulas

    st.download_button(
        label,
        neutralise_formulas(frame).to_csv(index=False).encode(),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"dl_{name}",
    )


def download_csv_bytes(
    data: bytes | str, name: str, label: str = "Download CSV", key: str | None = None
) -> None:
    """The same for a CSV already built in core (an export): re-written cell by cell."""
    from core.services.csvsafe import neutralise_csv_bytes

    raw = data.encode() if isinstance(data, str) else data
    st.download_button(
        label,
        neutralise_csv_bytes(raw) if raw.strip() else raw,
        file_name=f"{name}.csv",
        mime="text/csv",
        key=key or f"dl_{name}",
    )


MISSING_TEXT = "—"
_STYLE_MAX_CELLS = 200_000  # past this a Styler costs more than it helps; Streamlit's blank


def shown_frame(frame: pd.DataFrame) -> Any:
    """`frame` for st.dataframe with missing values shown as '—' instead of 'None' (the data
    keep NaN: sorting, the CSV and tests see the numbers as they are)."""
    if frame.empty or frame.size > _STYLE_MAX_CELLS or not frame.isna().to_numpy().any():
        return frame
    return frame.style.format(na_rep=MISSING_TEXT, precision=2)


def table(frame: pd.DataFrame, name: str, **kwargs: Any) -> None:
    """A dataframe with its CSV download (every table can be downloaded)."""
    st.dataframe(shown_frame(frame), width="stretch", hide_index=True, **kwargs)
    download(frame, name)


GREY_TEXT = "color: #9a9a9a"  # a row resting on fewer than core.stats.MIN_N items


def stats_table(frame: pd.DataFrame, name: str, n_col: str = "n", **kwargs: Any) -> int:
    """`table` for metrics rows with their n and interval (issue 18): a row whose `n_col` is
    below core.stats.MIN_N is greyed, as the run heatmaps grey their cells — too few
    items for a stable value. Returns how many rows were greyed (for the caption)."""
    from core.stats import MIN_N

    if n_col not in frame or frame.empty or frame.size > _STYLE_MAX_CELLS:
        table(frame, name, **kwargs)
        return 0
    frame = frame.reset_index(drop=True)  # row.name below is the position
    n = pd.to_numeric(frame[n_col], errors="coerce")
    low = (n < MIN_N).fillna(False).to_numpy()
    styled = frame.style.format(na_rep=MISSING_TEXT, precision=2).apply(
        lambda row: [GREY_TEXT if low[row.name] else ""] * len(row), axis=1
    )
    st.dataframe(styled, width="stretch", hide_index=True, **kwargs)
    download(frame, name)
    return int(low.sum())


# -- untrusted text ---------------------------------------------------------------------------
# Items and model output are data, not markup: `costs $5 and $10` must not become LaTeX and
# `![x](http://host/x)` must not make the viewer's browser fetch a URL. They go to the page
# through show_text (a code block: no Markdown, no HTML, no LaTeX); where such text has to sit
# in a Markdown string (captions, titles, expander / radio labels) it goes through md_escape.

_MD_SPECIALS = set("\\`*_{}[]()#+-.!|<>$~:=&\"'^")
# md_escape backslash-escapes what can start emphasis, code, links/images, HTML, LaTeX, tables
# and strikethrough anywhere; `_` unless inside a word (snake_case stays readable), `:` before a
# letter (Streamlit directives :red[..], :emoji:), `&` starting an entity, and # - + = > "1."
# at the start (headings, lists, quotes). Everything else is left as typed.
_MD_ALWAYS = re.compile(r"([\\`*\[\]<>$~|])")
_MD_CONTEXT = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|:(?=[A-Za-z])|&(?=#?\w+;)")


def md_escape(text: Any) -> str:
    """`text` as literal characters inside Streamlit Markdown (captions, titles, labels):
    Markdown, LaTeX ($), HTML (<) and Streamlit directive characters are backslash-escaped;
    line breaks become spaces (a label is one line)."""
    s = " ".join(("" if text is None else str(text)).splitlines())
    out = _MD_ALWAYS.sub(r"\\\1", s)
    out = _MD_CONTEXT.sub(lambda m: "\\" + m.group(0), out)
    out = re.sub(r"^(\s*)([#+=>-])", r"\1\\\2", out)  # heading, list, quote
    return re.sub(r"^(\s*\d+)([.)])", r"\1\\\2", out)  # ordered list


def html_text(text: Any) -> str:
    """`text` for the inside of an HTML snippet passed to st.markdown(unsafe_allow_html=True):
    HTML-escaped, and every Markdown / LaTeX special and line break written as a character
    reference, so neither the Markdown parser (a blank line would end the HTML block) nor
    LaTeX sees anything to interpret."""
    s = "" if text is None else str(text)
    return "".join(f"&#{ord(ch)};" if ch in _MD_SPECIALS or ch in "\n\r" else ch for ch in s)


def show_text(text: Any, *, label: str | None = None, height: int | None = None) -> None:
    """Untrusted text (an item, prompt, response, rationale, trace step, error message) shown
    verbatim: a wrapped code block, so nothing in it is interpreted. `label` is a trusted
    caption above it (escaped anyway); `height` caps a long text with a scroll bar."""
    if label:
        st.caption(md_escape(label))
    value = "" if text is None or (isinstance(text, float) and text != text) else str(text)
    if not value:
        st.caption("(empty)")
        return
    kwargs: dict[str, Any] = {"language": None, "wrap_lines": True}
    if height is not None:
        kwargs["height"] = height
    st.code(value, **kwargs)


def endpoints_or_error() -> dict[str, Any]:
    """The endpoints file's endpoints by name; a broken file is one error on the page (its text
    escaped: it may quote the file) and no endpoint."""
    from core.engine.endpoints import EndpointError, load_endpoints

    try:
        return dict(load_endpoints())
    except EndpointError as exc:
        st.error(md_escape(f"The endpoints file has a problem: {exc}"))
        return {}


# Last, after every definition: the rerun it may raise aborts this module's import, and a second
# session importing it at the same moment (two tabs on a fresh server) could get the half-run
# module; called at the top, that module lacked database_notice & co. (an ImportError page).
leave_legacy_page_mode()
