"""core.access: roles from ID-token claims through the access file, the serving rule, and the
append-only action log (plain Python, no Streamlit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import access
from core.access import log as action_log

RULES = access.parse_rules(
    """
claim = "groups"
[groups]
eval-admins = "admin"
eval-runners = "runner"
eval-viewers = "viewer"
labellers = "annotator"
[users]
"Ada@Lab.org" = "runner"
""",
    Path("access.toml"),
)


@pytest.mark.parametrize(
    ("claims", "role"),
    [
        ({"groups": ["eval-viewers"]}, "viewer"),
        ({"groups": ["labellers"]}, "annotator"),
        ({"groups": ["labellers", "eval-runners"]}, "runner"),  # the strongest group counts
        ({"groups": ["eval-viewers", "eval-admins", "x"]}, "admin"),
        ({"groups": "eval-runners"}, "runner"),  # a provider that sends one string
        ({"groups": ["nobody"], "email": "ada@lab.org"}, "runner"),  # email fallback
        ({"email": " ADA@lab.org "}, "runner"),
        ({"email": "ada@lab.org", "email_verified": False}, None),  # unverified: not trusted
        ({"groups": ["nobody"], "email": "eve@else.org"}, None),
        ({}, None),
    ],
)
def test_role_from_claims(claims, role):
    assert RULES.role_for(claims) == role


def test_another_claim_and_a_default_role():
    rules = access.parse_rules(
        'claim = "roles"\ndefault_role = "viewer"\n[groups]\nehw-admin = "admin"\n', Path("a")
    )
    assert rules.role_for({"roles": ["ehw-admin"], "groups": []}) == "admin"
    assert rules.role_for({"groups": ["ehw-admin"]}) == "viewer"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[groups]\nx = "owner"\n', "groups.x = 'owner' is not a role"),
        ('[users]\n"a@b" = 3\n', "users.a@b = 3 is not a role"),
        ('default_role = "root"\n', "default_role = 'root'"),
        ("[groups\n", "not valid TOML"),
        ('[group]\nx = "admin"\n', "unknown key(s) group"),
        ("claim = 3\n", "claim must be"),
    ],
)
def test_a_wrong_access_file_says_where(text, message, tmp_path):
    path = tmp_path / "access.toml"
    path.write_text(text)
    with pytest.raises(access.AccessFileError) as info:
        access.load_rules(path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_a_missing_access_file_names_the_variable(tmp_path):
    with pytest.raises(access.AccessFileError, match="EHW_ACCESS_FILE"):
        access.load_rules(tmp_path / "nope.toml")


def test_every_action_and_page_has_roles_and_an_unknown_one_is_refused():
    assert access.may("admin", "start_run") and not access.may("admin", "fly")
    assert not access.may(None, "start_run") and not access.may_open(None, "overview")
    assert access.may_open("viewer", "some_new_results_page")
    assert not access.may_open("annotator", "some_new_results_page")
    for roles in [*access.ACTIONS.values(), *access.PAGE_ROLES.values()]:
        assert roles and roles <= set(access.ROLES)
    # admin may everything; an annotator nothing but label and its page
    assert all(access.may("admin", a) for a in access.ACTIONS)
    assert [a for a in access.ACTIONS if access.may("annotator", a)] == ["label"]
    assert [p for p in access.PAGE_ROLES if access.may_open("annotator", p)] == ["judge_audit"]


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.0.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        (None, False),  # Streamlit's default: every interface
        ("", False),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("lab.example.org", False),
    ],
)
def test_loopback(address, loopback):
    assert access.is_loopback(address) is loopback


def test_serving_refusal():
    off = access.Mode(None, False)
    assert access.serving_refusal("127.0.0.1", off) is None
    message = access.serving_refusal("0.0.0.0", off)
    assert message and "EHW_READ_ONLY_FOR_ALL=1" in message and "EHW_ACCESS_FILE" in message
    assert "every network interface" in (access.serving_refusal(None, off) or "")
    assert access.serving_refusal("0.0.0.0", access.Mode("access.toml", False)) is None
    assert access.serving_refusal("0.0.0.0", access.Mode(None, True)) is None
    env = {"EHW_ACCESS_FILE": " /srv/access.toml ", "EHW_READ_ONLY_FOR_ALL": "1"}
    assert access.mode_from_env(env) == access.Mode("/srv/access.toml", True)
    assert access.mode_from_env({"EHW_READ_ONLY_FOR_ALL": "yes"}) == access.Mode(None, False)


def test_the_action_log_appends_and_filters(store):
    action_log.record(store, "ada@lab.org", "runner", "start_run", "run-1", "python -m core run")
    action_log.record(store, "bob@lab.org", "admin", "delete_judging", "run-1/j2")
    action_log.record(store, "ada@lab.org", "runner", "import", "my-set", "x" * 5000)
    frame = action_log.actions(store)
    assert frame["action"].tolist() == ["import", "delete_judging", "start_run"]  # newest first
    assert len(frame["detail"].iloc[0]) == 2000  # bounded
    assert action_log.actions(store, who=("bob@lab.org",))["target"].tolist() == ["run-1/j2"]
    assert len(action_log.actions(store, action=("start_run", "import"))) == 2
    assert action_log.actions(store, target="RUN-1")["action"].tolist() == [
        "delete_judging",
        "start_run",
    ]
    assert action_log.people_and_actions(store) == (
        ["ada@lab.org", "bob@lab.org"],
        ["delete_judging", "import", "start_run"],
    )
    assert frame["created_at"].notna().all()


def test_a_logged_command_keeps_no_secret():
    shown = action_log.shown_command(
        [
            "run",
            "misprompt",
            "--base-url",
            "https://user:hunter2@llm.lab/v1?code=s3cr3t",
            "--api-key-env",
            "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789",
            "--model",
            "m",
        ]
    )
    assert "hunter2" not in shown and "s3cr3t" not in shown and "sk-proj" not in shown
    assert shown.startswith("python -m core run misprompt --base-url https://")
    assert "--api-key-env *** --model m" in shown
