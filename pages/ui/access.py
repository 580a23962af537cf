"""The signed-in person and the server-side checks every page and action goes through.

Login is optional (core.access.Mode): without EHW_ACCESS_FILE the app serves one person on
their own machine, who may do everything (as before); with it, everyone signs in through the
OpenID Connect provider in .streamlit/secrets.toml ([auth]) and gets the role access.toml gives
their groups or email. A button hidden or disabled for a role is a courtesy: every handler
calls `require(action)` before it acts, and app.py calls `require_page` before a page runs.

Not a page (a sub-folder of pages/, listed nowhere in app.py).
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import streamlit as st

from core import access
from core.access import log as action_log
from pages.ui.common import get_store, md_escape


@dataclass(frozen=True)
class Person:
    """Who is in front of the app: `who` goes into the action log and onto audit labels."""

    who: str
    role: str | None
    signed_in: bool
    name: str = ""


def mode() -> access.Mode:
    return access.mode_from_env()


def _local_name() -> str:
    try:
        return f"local: {getpass.getuser()}"
    except Exception:  # no user name (a container without one in /etc/passwd)
        return "local"


def _claims() -> dict[str, Any]:
    try:
        return dict(st.user.to_dict())
    except Exception:
        return {}


@st.cache_resource(show_spinner=False, ttl=30)
def _rules(path: str) -> access.AccessRules:
    """The access file, read again at most every 30 s: a change reaches open sessions soon."""
    return access.load_rules(path)


def current_person() -> Person:
    """The person of this session (without login: the machine's user, or anyone read only)."""
    m = mode()
    if not m.login:
        if m.read_only_for_all:
            return Person("anyone (read-only)", access.VIEWER, False)
        return Person(_local_name(), access.ADMIN, False)
    claims = _claims()
    if not claims.get("is_logged_in"):
        return Person("", None, False)
    assert m.access_file is not None
    role = _rules(m.access_file).role_for(claims)
    who = str(claims.get("email") or claims.get("sub") or "")
    return Person(who, role, True, str(claims.get("name") or ""))


def allowed(action: str) -> bool:
    return access.may(current_person().role, action)


def may_open_page(stem: str) -> bool:
    """For a link to pages/<stem>.py: only to a page the role has (st.page_link to a page
    missing from the navigation raises)."""
    return access.may_open(current_person().role, stem)


def refused_text(action: str, person: Person | None = None) -> str:
    person = person or current_person()
    roles = ", ".join(r for r in access.ROLES if access.may(r, action))
    return (
        f"Your role ({person.role or 'none'}) may not {action.replace('_', ' ')}: "
        f"that needs {roles}."
    )


def require(action: str) -> None:
    """Stop this run unless the person's role may take `action` (server side: a replayed or
    forged click reaches this check like a real one)."""
    person = current_person()
    if not access.may(person.role, action):
        st.error(refused_text(action, person), icon=":material/block:")
        st.stop()


def require_page(stem: str) -> None:
    person = current_person()
    if not access.may_open(person.role, stem):
        st.error(
            f"Your role ({person.role or 'none'}) may not open this page.",
            icon=":material/block:",
        )
        st.stop()


def disabled_for(action: str) -> bool:
    """For a button's `disabled=`: True (with a caption saying why) when the role may not."""
    if allowed(action):
        return False
    st.caption(refused_text(action))
    return True


def record(action: str, target: str = "", detail: str = "") -> None:
    """Append the action to the store's action log under the person's identity. Called after
    the action succeeded; a log that cannot be written is said on the page, not hidden."""
    from core.store import DatabaseError

    person = current_person()
    try:
        action_log.record(get_store(), person.who, person.role or "", action, target, detail)
    except DatabaseError as exc:
        st.warning(f"The action log could not be written: {exc}")


def labeller_name() -> str | None:
    """Under login: the signed-in identity labels are saved under (no typed name)."""
    person = current_person()
    return person.who if person.signed_in else None


def is_annotator() -> bool:
    return current_person().role == access.ANNOTATOR


# -- the gate app.py runs before any page --------------------------------------------------


def _served_address() -> str | None:
    """The address the server listens on, or "127.0.0.1" when there is no server (AppTest
    runs scripts without one: nothing listens)."""
    from streamlit.runtime import Runtime

    if type(Runtime._instance) is not Runtime:  # AppTest's stand-in
        return "127.0.0.1"
    address = st.get_option("server.address")
    return str(address) if address else None


def _providers() -> list[str]:
    """Named providers ([auth.google], …) of secrets.toml; [] for one unnamed provider."""
    try:
        auth = st.secrets.get("auth", {})
    except Exception:
        return []
    return [k for k, v in dict(auth).items() if hasattr(v, "keys")]


def _sign_in_screen() -> None:
    st.title("Error-handling workbench")
    st.write("This dashboard is for the team: sign in to continue.")
    providers = _providers()
    if not providers and st.button("Sign in", type="primary", key="ehw_login"):
        st.login()
    for name in providers:
        if st.button(f"Sign in with {name}", key=f"ehw_login_{name}"):
            st.login(name)


def _stop(pages: dict[str, list[Any]]) -> NoReturn:
    """End the run without any page: the navigation is declared but hidden (no list of page
    files in the sidebar, no "page not found" for the URL asked), and none of it runs."""
    st.navigation(pages, position="hidden")
    st.stop()
    raise AssertionError("st.stop() returned")


def gate(pages: dict[str, list[Any]]) -> Person:
    """Before every page: refuse to serve an exposed app without login, show the sign-in
    screen, refuse a signed-in person without a role; else the person, with their name and a
    Log out button in the sidebar. `pages`: app.py's navigation, declared hidden when no page
    may run."""
    m = mode()
    refusal = access.serving_refusal(_served_address(), m)
    if refusal:
        st.error(refusal, icon=":material/gpp_bad:")
        _stop(pages)
    if m.login:
        try:
            assert m.access_file is not None
            _rules(m.access_file)
        except access.AccessFileError as exc:
            st.error(md_escape(str(exc)))
            _stop(pages)
    person = current_person()
    if m.login and not person.signed_in:
        _sign_in_screen()
        _stop(pages)
    if person.role is None:
        st.error(
            md_escape(
                f"Signed in as {person.who}, but the team's access file gives this account no "
                "role. Ask an admin to add your group or email to access.toml."
            )
        )
        if st.button("Log out", key="ehw_logout_norole"):
            st.logout()
        _stop(pages)
    if person.signed_in:
        with st.sidebar:
            st.caption(md_escape(f"Signed in as {person.who} · {person.role}"))
            if st.button("Log out", key="ehw_logout"):
                st.logout()
    elif m.read_only_for_all:
        st.sidebar.caption("Read-only for everyone (EHW_READ_ONLY_FOR_ALL=1).")
    return person


def navigation_pages(pages: dict[str, list[Any]], person: Person) -> dict[str, list[Any]]:
    """app.py's pages narrowed to what the role may open. An annotator gets the audit page
    alone, as the default: any other URL lands there."""
    if person.role == access.ANNOTATOR:
        return {
            "Audit": [
                st.Page(
                    "pages/judge_audit.py",
                    title="Audit queue",
                    icon=":material/fact_check:",
                    default=True,
                )
            ]
        }
    shown: dict[str, list[Any]] = {}
    for section, entries in pages.items():
        keep = [p for p in entries if access.may_open(person.role, page_stem(p))]
        if keep:
            shown[section] = keep
    return shown


def page_stem(page: Any) -> str:
    """pages/<stem>.py of an st.Page (its file, not its URL path: the default page's is "")."""
    return Path(str(page._page)).stem
