"""Who may do what in the dashboard: four roles, what each may open and do, and the role of a
signed-in person read from the team's access file (access.toml).

Plain Python (no Streamlit): the pages ask `pages.ui.access`, which reads the signed-in person
from Streamlit and calls in here; the table below is the one place the rules live, and the
tests walk it whole. Why a table and not flags on each page: a page or button added later is
refused to everyone who is not listed, rather than open to all.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The team's access file (claim → role, users by email); unset = login off (one person).
ACCESS_ENV_VAR = "EHW_ACCESS_FILE"
# Set to 1: anyone who reaches the app may browse it, and nobody may change anything (no login).
READ_ONLY_ENV_VAR = "EHW_READ_ONLY_FOR_ALL"

VIEWER, ANNOTATOR, RUNNER, ADMIN = "viewer", "annotator", "runner", "admin"
ROLES: tuple[str, ...] = (VIEWER, ANNOTATOR, RUNNER, ADMIN)
# When a person's groups map to several roles, the strongest one counts.
_RANK = {ANNOTATOR: 0, VIEWER: 1, RUNNER: 2, ADMIN: 3}

_READERS = frozenset({VIEWER, RUNNER, ADMIN})
_RUNNERS = frozenset({RUNNER, ADMIN})
_ADMINS = frozenset({ADMIN})

# Pages by file stem (pages/<stem>.py). A page not named here is a results page: readers only.
PAGE_ROLES: dict[str, frozenset[str]] = {
    "runs": _READERS,  # the list and progress; starting and cancelling are actions below
    "playground": _RUNNERS,  # every send asks a model (the team's budget) and saves an exchange
    "import_data": _RUNNERS,
    "judge_audit": frozenset(ROLES),  # an annotator sees its blind queue only (see ACTIONS)
    "action_log": _ADMINS,
}
RESULTS_PAGE_ROLES = _READERS

# Every action a page can take, with the roles that may take it.
ACTIONS: dict[str, frozenset[str]] = {
    "start_run": _RUNNERS,  # the Runs page and each benchmark page's start panel
    "cancel_run": _RUNNERS,  # cancel a running run, mark an interrupted one cancelled
    "rescore": _RUNNERS,  # start (or resume) a judging
    "import": _RUNNERS,  # an item set on the Import page
    "playground": _RUNNERS,  # send, judge now, save labels of an exchange
    "delete_judging": _ADMINS,
    "draw_audit": _ADMINS,  # a new audit sample
    "import_labels": _ADMINS,  # an audit's labels from a CSV
    "label": frozenset({ANNOTATOR, ADMIN}),  # label items of an audit's queue
    "audit_results": _READERS,  # an audit's agreement, verdicts and its labels CSV
    "store_copy": _ADMINS,  # CLI only (`store copy`); listed for the team's record
    "action_log": _ADMINS,
}


def page_roles(stem: str) -> frozenset[str]:
    return PAGE_ROLES.get(stem, RESULTS_PAGE_ROLES)


def may_open(role: str | None, stem: str) -> bool:
    return role is not None and role in page_roles(stem)


def may(role: str | None, action: str) -> bool:
    """Whether `role` may take `action`; an action missing from ACTIONS is refused to all."""
    return role is not None and role in ACTIONS.get(action, frozenset())


class AccessFileError(ValueError):
    """The access file is missing or wrong: the app shows this and serves nothing."""


@dataclass(frozen=True)
class AccessRules:
    """The parsed access file: which claim holds groups, group → role, email → role."""

    claim: str = "groups"
    groups: Mapping[str, str] = field(default_factory=dict)
    users: Mapping[str, str] = field(default_factory=dict)  # lower-case email → role
    default_role: str | None = None  # a signed-in person matched by nothing; None = no access

    def role_for(self, claims: Mapping[str, Any]) -> str | None:
        """The role of a signed-in person from their ID token's claims: the strongest role
        of their groups; else their email's entry (the fallback for providers that send no
        group claim; an email the provider marks unverified is not trusted); else the
        default role (None: no access)."""
        raw = claims.get(self.claim)
        if isinstance(raw, str):
            raw = [raw]
        found = [self.groups[g] for g in raw or () if isinstance(g, str) and g in self.groups]
        if found:
            return max(found, key=_RANK.__getitem__)
        email = claims.get("email")
        if isinstance(email, str) and claims.get("email_verified", True) is not False:
            role = self.users.get(email.strip().lower())
            if role is not None:
                return role
        return self.default_role


def _role(value: object, where: str, path: Path) -> str:
    if not isinstance(value, str) or value not in ROLES:
        raise AccessFileError(
            f"{path}: {where} = {value!r} is not a role; the roles are {', '.join(ROLES)}."
        )
    return value


def parse_rules(text: str, path: Path) -> AccessRules:
    """An access file's text → AccessRules; any mistake names the file and the entry."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AccessFileError(f"{path}: not valid TOML ({exc}).") from None
    unknown = set(data) - {"claim", "default_role", "groups", "users"}
    if unknown:
        raise AccessFileError(
            f"{path}: unknown key(s) {', '.join(sorted(unknown))}; the file has claim, "
            "default_role, [groups] and [users]."
        )
    claim = data.get("claim", "groups")
    if not isinstance(claim, str) or not claim:
        raise AccessFileError(f"{path}: claim must be the name of an ID-token claim.")
    groups = data.get("groups", {})
    users = data.get("users", {})
    if not isinstance(groups, dict) or not isinstance(users, dict):
        raise AccessFileError(f"{path}: [groups] and [users] are tables of name = role.")
    default = data.get("default_role")
    return AccessRules(
        claim=claim,
        groups={str(g): _role(r, f"groups.{g}", path) for g, r in groups.items()},
        users={str(u).strip().lower(): _role(r, f"users.{u}", path) for u, r in users.items()},
        default_role=None if default in (None, "") else _role(default, "default_role", path),
    )


def load_rules(path: str | Path) -> AccessRules:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise AccessFileError(
            f"The access file {p} ({ACCESS_ENV_VAR}) cannot be read: {exc.strerror or exc}."
        ) from None
    return parse_rules(text, p)


@dataclass(frozen=True)
class Mode:
    """How this app serves: login (with the access file's path) or not, read-only for all."""

    access_file: str | None
    read_only_for_all: bool

    @property
    def login(self) -> bool:
        return self.access_file is not None


def mode_from_env(env: Mapping[str, str] | None = None) -> Mode:
    env = os.environ if env is None else env
    path = (env.get(ACCESS_ENV_VAR) or "").strip() or None
    return Mode(path, (env.get(READ_ONLY_ENV_VAR) or "").strip() == "1")


def is_loopback(address: str | None) -> bool:
    """Whether a server bound to `address` is reachable from this machine only. Unset or
    empty means every interface (Streamlit's default), which is not."""
    if not address:
        return False
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, it may be reachable


def serving_refusal(address: str | None, mode: Mode) -> str | None:
    """Why the app must not serve as started (None: it may). Without login, anyone who reaches
    a non-loopback address could start runs on the team's API keys, delete judgings and label
    under any name; so that needs login, or an explicit read-only mode for everyone."""
    if mode.login or mode.read_only_for_all or is_loopback(address):
        return None
    where = f"address {address}" if address else "every network interface (no --server.address)"
    return (
        f"This app is listening on {where} without login, so anyone who reaches the port "
        "could start runs that spend the team's API budget, delete judgings and label audits "
        "under any name. It serves nothing until one of these is true:\n\n"
        "1. For yourself: listen on this machine only — `./start.sh` does, or "
        "`streamlit run app.py --server.address 127.0.0.1`.\n"
        f"2. For a team: turn login on — set {ACCESS_ENV_VAR} to the team's access.toml and "
        "put an `[auth]` section in .streamlit/secrets.toml (docs/team-dashboard.md).\n"
        f"3. For everyone, read only: start it with {READ_ONLY_ENV_VAR}=1 — every page can "
        "be browsed, nothing can be started, imported, deleted or labelled (best with a "
        "read-only database role, docs/team-dashboard.md)."
    )
