"""AppTest: the role matrix (issue 27) — every page and every action of the app, for each of
the four roles, with login on (an access file) and the signed-in person given as AppTest's
`user=`. A refused action is also replayed: the disabled button's click is sent anyway (what a
hand-made websocket message does), and the server must refuse it and write nothing.

The two tables below are the matrix as tested, written out (not read from core.access), so a
change to the rules fails here until the table is changed too.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from core.services import audit, jobs
from core.store import Store
from tests.audit_fixtures import write_labels
from tests.conftest import ROOT
from tests.echo_task import create_item_set

APP = str(ROOT / "app.py")
ROLES = ("viewer", "annotator", "runner", "admin")

# page stem: Y = opens, - = refused (the navigation has no such page; require_page behind it)
PAGE_MATRIX = """
                     viewer annotator runner admin
overview               Y       -        Y      Y
misprompt_results      Y       -        Y      Y
anchoring              Y       -        Y      Y
mistake_finding        Y       -        Y      Y
processbench_results   Y       -        Y      Y
pcbench_results        Y       -        Y      Y
proactive_passive      Y       -        Y      Y
grid                   Y       -        Y      Y
compare                Y       -        Y      Y
runs                   Y       -        Y      Y
playground             -       -        Y      Y
import_data            -       -        Y      Y
judge_audit            Y       Y        Y      Y
action_log             -       -        -      Y
"""

# action: Y = done (and logged under the person), - = refused (button absent or disabled, and
# its replayed click refused by the server with nothing written)
ACTION_MATRIX = """
                     viewer annotator runner admin
start_run              -       -        Y      Y
start_run_panel        -       -        Y      Y
cancel_run             -       -        Y      Y
rescore                -       -        Y      Y
delete_judging         -       -        -      Y
import                 -       -        Y      Y
draw_audit             -       -        -      Y
import_labels          -       -        -      Y
label                  -       Y        -      Y
audit_results          Y       -        Y      Y
"""


def _parse(table: str) -> dict[tuple[str, str], bool]:
    lines = [l.split() for l in table.strip().splitlines()]
    head = lines[0]
    return {(row[0], role): row[1 + i] == "Y" for row in lines[1:] for i, role in enumerate(head)}


PAGES = _parse(PAGE_MATRIX)
ACTIONS = _parse(ACTION_MATRIX)

ACCESS_TOML = """
claim = "groups"
[groups]
"ehw-viewers" = "viewer"
"ehw-annotators" = "annotator"
"ehw-runners" = "runner"
"ehw-admins" = "admin"
"""


def person(role: str) -> dict[str, Any]:
    return {
        "is_logged_in": True,
        "email": f"{role}@lab.test",
        "name": role.title(),
        "groups": [f"ehw-{role}s", "unrelated-group"],
    }


@pytest.fixture
def access_on(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "access.toml"
    path.write_text(ACCESS_TOML, "utf-8")
    monkeypatch.setenv("EHW_ACCESS_FILE", str(path))
    monkeypatch.delenv("EHW_READ_ONLY_FOR_ALL", raising=False)
    return path


@pytest.fixture
def team_store(two_runs_store: Store, access_on) -> Store:
    """Two judged runs, an audit of them, a bbm item set, an interrupted run with a named
    judging."""
    audit.create_audit(two_runs_store, "aud", ["run-a", "run-b"], fraction=0.5, seed=1)
    two_runs_store.execute(
        "INSERT INTO judgings (run_id, judging, kind, judge_model, status, n_planned) "
        "VALUES ('gone-run', 'j2', 'judge', 'jm', 'done', 0)"
    )
    create_item_set(two_runs_store, "bbm-few", "bbm", ["trace 1", "trace 2"])
    two_runs_store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, model, setting) "
        "VALUES ('gone-run', 'misprompt', 'running', 4, 'm', 'cot')"
    )
    return two_runs_store


def open_as(role: str, page: str | None, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.user = person(role)
    if page:
        at.switch_page(f"pages/{page}.py")
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def titles(at: AppTest) -> list[str]:
    return [t.value for t in at.title]


def log_rows(store: Store) -> list[tuple]:
    return store.rows("SELECT who, role, action, target FROM actions ORDER BY created_at")


def replay(at: AppTest, key: str) -> AppTest:
    """Click a button the page drew disabled, as a forged client would: the browser's disabled
    flag is the client's to ignore."""
    button = at.button(key=key)
    button.proto.disabled = False
    return button.click().run()


def refused(at: AppTest, action: str) -> bool:
    """The page said the role may not take `action`: an error (a click refused by require) or
    the caption beside a button drawn disabled (whose forged click Streamlit itself drops)."""
    said = f"may not {action.replace('_', ' ')}"
    return any(said in str(e.value) for e in [*at.error, *at.caption])


# -- pages ------------------------------------------------------------------------------------

_ADMIN_TITLES: dict[str, str] = {}


def _title_of(stem: str) -> str:
    """A page's own title, as the admin (who may open every page) sees it."""
    if stem not in _ADMIN_TITLES:
        at = open_as("admin", None if stem == "overview" else stem)
        _ADMIN_TITLES[stem] = titles(at)[0]
    return _ADMIN_TITLES[stem]


@pytest.mark.parametrize("stem", sorted({s for s, _ in PAGES}))
def test_page_matrix(stem, team_store):
    own = _title_of(stem)
    for role in ROLES:
        at = open_as(role, None if stem == "overview" else stem)
        shown = titles(at)
        if PAGES[(stem, role)]:
            assert shown and shown[0] == own, (stem, role, shown)
        else:
            assert own not in shown, (stem, role, shown)
        if role == "annotator":  # whatever the URL, the audit queue alone
            assert shown == ["Judge audit"], (stem, shown)


def test_annotator_navigation_holds_the_audit_queue_only(team_store):
    at = open_as("annotator", "runs")
    texts = " ".join(str(c.value) for c in at.sidebar.caption)
    assert "annotator@lab.test" in texts and "annotator" in texts
    assert titles(at) == ["Judge audit"]
    # no tab but Label, whatever ?au_view= asks for
    at = open_as("annotator", "judge_audit", audit="aud", au_view="Results")
    assert [t.label for t in at.tabs] == ["Label"]


# -- actions ----------------------------------------------------------------------------------


def _fake_starter(calls: list) -> Any:
    def start(args: list[str], db_path: Any, **_: Any) -> Any:
        calls.append(list(args))
        name = args[args.index("--run-name") + 1] if "--run-name" in args else "started-run"
        return SimpleNamespace(pid=0, run_name=name, log_path=Path("/dev/null"), command=args)

    return start


def _act_start_run(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    """(done, refused): the Runs page's Start run."""
    calls: list = []
    monkeypatch.setattr(jobs, "start_cli_run", _fake_starter(calls))
    at = open_as(role, "runs")
    if titles(at) != ["Runs"]:
        return False, True  # the page is not there for this role
    at.text_input(key="start_run_name").input("by-the-page").run()
    button = at.button(key="start_button")
    at = replay(at, "start_button") if button.disabled else button.click().run()
    return bool(calls), refused(at, "start_run")


def _act_start_run_panel(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    calls: list = []
    monkeypatch.setattr(jobs, "start_cli_run", _fake_starter(calls))
    at = open_as(role, "mistake_finding")
    submit = [b for b in at.button if b.label == "Start run"]
    if not submit:
        return False, True
    button = submit[0]
    if button.disabled:
        button.proto.disabled = False
    at = button.click().run()
    return bool(calls), refused(at, "start_run")


def _act_cancel_run(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    at = open_as(role, "runs", run="gone-run")
    if titles(at) != ["Runs"]:
        return False, True
    key = "mark_gone-run" if "mark_gone-run" in _keys(at) else "cancel_gone-run"
    button = at.button(key=key)
    at = replay(at, key) if button.disabled else button.click().run()
    status = store.scalar("SELECT status FROM runs WHERE run_id = 'gone-run'")
    return status == "cancelled", refused(at, "cancel_run")


def _act_rescore(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    calls: list = []
    monkeypatch.setattr(jobs, "start_cli_rescore", _fake_starter(calls))
    at = open_as(role, "runs", run="run-a")
    if titles(at) != ["Runs"]:
        return False, True
    button = at.button(key="jg_start")
    at = replay(at, "jg_start") if button.disabled else button.click().run()
    return bool(calls), refused(at, "rescore")


def _act_delete_judging(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    at = open_as(role, "runs", run="gone-run")
    if titles(at) != ["Runs"]:
        return False, True
    button = at.button(key="jg_delete")
    at = replay(at, "jg_delete") if button.disabled else button.click().run()
    left = store.scalar("SELECT count(*) FROM judgings WHERE judging = 'j2'")
    return left == 0, refused(at, "delete_judging")


def _act_import(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    sample = ROOT / "data" / "samples"
    at = open_as(role, "import_data")
    if titles(at) and "Import" not in titles(at)[0]:
        return False, True
    return _upload_and_import(at, sample, store)


def _upload_and_import(at: AppTest, sample: Path, store: Store) -> tuple[bool, bool]:
    from core.registry import BENCHMARKS

    bench = BENCHMARKS["misprompt"]
    assert bench.imports.builtin is not None
    path = sample / bench.imports.builtin[1]
    at.file_uploader[0].upload(path.name, path.read_bytes()).run()
    at.text_input(key="set_name").input("from-upload").run()
    at = at.button(key="do_import").click().run()
    n = store.scalar("SELECT count(*) FROM item_sets WHERE name = 'from-upload'")
    return bool(n), refused(at, "import")


def _act_draw_audit(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    at = open_as(role, "judge_audit", audit=audit.NEW_AUDIT_KEY)
    if titles(at) != ["Judge audit"]:
        return False, True
    if "au_draw" not in _keys(at):
        # no New audit for this role: the URL's ?audit=new fell back to an existing audit
        return False, "New audit" not in [s.value for s in at.subheader]
    at.text_input(key="au_name").input("drawn-here").run()
    at = at.button(key="au_draw").click().run()
    return audit.get_audit(store, "drawn-here") is not None, refused(at, "draw_audit")


def _keys(at: AppTest) -> set[str]:
    return {b.key for b in at.button if b.key}


def _act_import_labels(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    queue = audit.audit_queue(store, "aud")
    labels = audit.label_set_of_audit(store, "aud").names
    write_labels(store, [(queue.iloc[0], "colleague", {l: True for l in labels})])
    csv = audit.export_labels_csv(store, "aud")
    store.execute("DELETE FROM human_labels")
    at = open_as(role, "judge_audit", audit="aud", au_view="Export / import")
    if not at.tabs or "Export / import" not in [t.label for t in at.tabs]:
        return False, True
    if not at.file_uploader:
        return False, any("may not import labels" in c.value for c in at.caption)
    at.file_uploader[0].upload("labels.csv", csv.encode() if isinstance(csv, str) else csv).run()
    at = at.button(key="au_import").click().run()
    n = store.scalar("SELECT count(*) FROM human_labels WHERE annotator = 'colleague'")
    return bool(n), refused(at, "import_labels")


def _act_label(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    at = open_as(role, "judge_audit", audit="aud", au_view="Label")
    if "Label" not in [t.label for t in at.tabs]:
        return False, True
    labels = audit.label_set_of_audit(store, "aud").names
    for label in labels:
        at.button(key=f"au_yes_{label}").click().run()
    at = at.button(key="au_save").click().run()
    who = f"{role}@lab.test"
    n = store.scalar("SELECT count(*) FROM human_labels WHERE annotator = ?", [who])
    return n == len(labels), refused(at, "label")


def _act_audit_results(role: str, store: Store, monkeypatch) -> tuple[bool, bool]:
    at = open_as(role, "judge_audit", audit="aud", au_view="Results")
    tabs = [t.label for t in at.tabs]
    return "Results" in tabs, "Results" not in tabs


DRIVERS = {
    "start_run": _act_start_run,
    "start_run_panel": _act_start_run_panel,
    "cancel_run": _act_cancel_run,
    "rescore": _act_rescore,
    "delete_judging": _act_delete_judging,
    "import": _act_import,
    "draw_audit": _act_draw_audit,
    "import_labels": _act_import_labels,
    "label": _act_label,
    "audit_results": _act_audit_results,
}
LOGGED = {  # the action log's name of each driven action
    "start_run": "start_run",
    "start_run_panel": "start_run",
    "cancel_run": "cancel_run",
    "rescore": "rescore",
    "delete_judging": "delete_judging",
    "import": "import",
    "draw_audit": "draw_audit",
    "import_labels": "import_labels",
    "label": "label",
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action", sorted({a for a, _ in ACTIONS}))
def test_action_matrix(action, role, team_store, monkeypatch):
    done, was_refused = DRIVERS[action](role, team_store, monkeypatch)
    expected = ACTIONS[(action, role)]
    assert done == expected, (action, role, done)
    assert was_refused == (not expected), (action, role, was_refused)
    rows = log_rows(team_store)
    if action in LOGGED:
        mine = [r for r in rows if r[2] == LOGGED[action]]
        if expected:  # logged under the signed-in identity, not a typed name
            assert mine and all(r[:2] == (f"{role}@lab.test", role) for r in mine), rows
        else:
            assert not mine, rows


def test_matrix_covers_every_rule():
    """Every page of the app and every action of core.access is in a table above."""
    from core import access
    from tests.test_browser_smoke import _app_pages

    stems = {s or "overview" for s in _app_pages()}
    assert stems == {s for s, _ in PAGES}
    driven = {LOGGED.get(a, a) for a, _ in ACTIONS} | {"playground", "action_log", "store_copy"}
    assert driven == set(access.ACTIONS), set(access.ACTIONS) ^ driven


# -- a viewer cannot start a run, by any route -----------------------------------------------


@pytest.mark.parametrize(
    ("page", "params", "key", "module"),
    [
        ("runs", {}, "start_button", None),
        ("runs", {"run": "run-a"}, "jg_start", "pages.ui.judgings"),
        ("runs", {"run": "gone-run"}, "jg_delete", "pages.ui.judgings"),
    ],
)
def test_the_handler_refuses_even_a_button_left_enabled(
    page, params, key, module, team_store, monkeypatch
):
    """A hidden or disabled button is not the check: with the buttons drawn enabled for
    everyone (as a page that forgot to disable them would), the viewer's click reaches the
    handler, and require() refuses it there — no process, no deletion, no log row."""
    import importlib

    calls: list = []
    monkeypatch.setattr(jobs, "start_cli_run", _fake_starter(calls))
    monkeypatch.setattr(jobs, "start_cli_rescore", _fake_starter(calls))
    monkeypatch.setattr("pages.ui.access.disabled_for", lambda action: False)
    if module:
        monkeypatch.setattr(importlib.import_module(module), "disabled_for", lambda action: False)
    at = open_as("viewer", page, **params)
    if key == "start_button":
        at.text_input(key="start_run_name").input("sneaky").run()
    button = at.button(key=key)
    assert not button.disabled
    at = button.click().run()
    assert any("Your role (viewer) may not" in e.value for e in at.error), [
        e.value for e in at.error
    ]
    assert not calls
    assert team_store.scalar("SELECT count(*) FROM judgings WHERE judging = 'j2'") == 1
    assert log_rows(team_store) == []


def test_a_viewer_cannot_start_a_run_by_url_or_query_parameters(team_store, monkeypatch):
    calls: list = []
    monkeypatch.setattr(jobs, "start_cli_run", _fake_starter(calls))
    monkeypatch.setattr(jobs, "start_cli_rescore", _fake_starter(calls))
    for page, params in [
        ("runs", {"start_button": "true", "start_run_name": "x", "start_bench": "bbm"}),
        ("runs", {"run": "run-a", "jg_start": "true", "jg_delete": "true"}),
        ("mistake_finding", {"bbm_start": "true", "submit": "1"}),
        ("import_data", {"do_import": "true"}),
        ("playground", {"pg_send": "true"}),
        ("judge_audit", {"audit": audit.NEW_AUDIT_KEY, "au_draw": "true"}),
    ]:
        at = open_as("viewer", page, **params)
        assert "start_button" not in _keys(at) or at.button(key="start_button").disabled
    assert not calls and log_rows(team_store) == []
    assert audit.list_audits(team_store)["audit"].tolist() == ["aud"]


# -- an annotator: blind queue, own identity -------------------------------------------------


def _page_text(at: AppTest) -> str:
    """Everything the page says around the item (st.text holds the item's prompt and the
    response under audit, which the fixture's fake model signs with its name)."""
    parts: list[Any] = []
    for kind in ("markdown", "caption", "code", "error", "warning", "info", "success"):
        parts += [getattr(e, "value", "") for e in getattr(at, kind)]
    parts += [t.label for t in at.tabs] + [b.label for b in at.button]
    parts += [str(s.options) for s in at.selectbox] + [t.label for t in at.toggle]
    return "\n".join(str(p) for p in parts)


def test_an_annotator_sees_no_model_and_no_verdict_before_labelling(team_store):
    queue = audit.audit_queue(team_store, "aud")
    labels = audit.label_set_of_audit(team_store, "aud").names
    at = open_as("annotator", "judge_audit", audit="aud", au_judge="true", au_view="Results")
    text = _page_text(at)
    assert [t.label for t in at.tabs] == ["Label"]
    assert "Labelling as annotator@lab.test" in text
    for secret in ("model-a", "model-b", "run-a", "run-b", "judge:", "SmolLM2"):
        assert secret not in text, secret
    assert not at.toggle or "Show judge verdict" not in [t.label for t in at.toggle]
    assert not at.text_input or "w_annotator" not in [t.key for t in at.text_input]
    for label in labels:
        at.button(key=f"au_yes_{label}").click().run()
    assert "judge:" not in _page_text(at)  # every label chosen, not saved: still hidden
    at = at.button(key="au_save").click().run()
    assert "judge:" in _page_text(at)  # saved: the verdict is revealed beside the labels
    saved = team_store.df("SELECT DISTINCT annotator FROM human_labels")
    assert saved["annotator"].tolist() == ["annotator@lab.test"]
    assert len(queue) >= 1


# -- the gate ----------------------------------------------------------------------------------


def test_signed_out_sees_the_sign_in_screen_only(team_store):
    at = AppTest.from_file(APP, default_timeout=120)
    at.user = {"is_logged_in": False}
    at.switch_page("pages/runs.py")
    at.run()
    assert not at.exception
    assert [b.label for b in at.button] == ["Sign in"]
    assert "Runs" not in titles(at) and not at.dataframe


def test_a_signed_in_person_without_a_role_gets_nothing(team_store):
    at = AppTest.from_file(APP, default_timeout=120)
    at.user = {"is_logged_in": True, "email": "stranger@else.where", "groups": ["other"]}
    at.run()
    assert any("gives this account no role" in e.value for e in at.error)
    assert [b.label for b in at.button] == ["Log out"] and not at.dataframe


def test_logout_ends_access(team_store):
    at = open_as("admin", "runs")
    assert titles(at) == ["Runs"]
    at = at.button(key="ehw_logout").click().run()
    at.run()
    assert "Runs" not in titles(at) and [b.label for b in at.button] == ["Sign in"]


def test_without_login_the_local_person_may_do_everything(two_runs_store, monkeypatch):
    monkeypatch.delenv("EHW_ACCESS_FILE", raising=False)
    monkeypatch.delenv("EHW_READ_ONLY_FOR_ALL", raising=False)
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/action_log.py")
    at.run()
    assert not at.exception and titles(at) == ["🗒️ Action log"]
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/judge_audit.py")
    at.run()
    assert at.text_input(key="w_annotator") is not None  # a typed name, as before


def test_read_only_for_everyone_is_a_viewer_without_login(initialised_store, monkeypatch):
    monkeypatch.delenv("EHW_ACCESS_FILE", raising=False)
    monkeypatch.setenv("EHW_READ_ONLY_FOR_ALL", "1")
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/runs.py")
    at.run()
    assert titles(at) == ["Runs"] and at.button(key="start_button").disabled
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("pages/import_data.py")
    at.run()
    assert "📥 Import data" not in titles(at)


@pytest.mark.parametrize("address", ["0.0.0.0", "", "192.168.1.20", "lab-box.example.org"])
def test_an_exposed_address_without_login_is_refused(address, initialised_store, monkeypatch):
    monkeypatch.delenv("EHW_ACCESS_FILE", raising=False)
    monkeypatch.delenv("EHW_READ_ONLY_FOR_ALL", raising=False)
    monkeypatch.setattr("pages.ui.access._served_address", lambda: address or None)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not titles(at)
    (error,) = [e.value for e in at.error]
    assert "without login" in error and "EHW_READ_ONLY_FOR_ALL=1" in error
    assert "EHW_ACCESS_FILE" in error and "127.0.0.1" in error
    monkeypatch.setenv("EHW_READ_ONLY_FOR_ALL", "1")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.error and titles(at)


# -- the action log page ------------------------------------------------------------------------


def test_the_action_log_lists_filters_in_the_url_and_downloads(team_store):
    from core.access import log as action_log

    action_log.record(team_store, "ada@lab.test", "runner", "start_run", "run-x", "cmd")
    action_log.record(team_store, "bob@lab.test", "admin", "delete_judging", "run-a/j9")
    at = open_as("admin", "action_log", who="bob@lab.test")
    frame = at.dataframe[0].value
    assert frame["who"].tolist() == ["bob@lab.test"] and frame["target"].tolist() == ["run-a/j9"]
    assert at.query_params["who"] in ("bob@lab.test", ["bob@lab.test"])
    assert at.get("download_button")
    at = open_as("admin", "action_log", on="run-x")
    assert at.dataframe[0].value["action"].tolist() == ["start_run"]


def test_a_run_started_with_a_secret_in_its_url_logs_no_secret(team_store, monkeypatch):
    """The Runs page's custom base URL with credentials: the action log's command has ***."""
    calls: list = []
    monkeypatch.setattr(jobs, "start_cli_run", _fake_starter(calls))
    at = open_as("runner", "runs")
    at.selectbox(key="start_endpoint").select("Custom base URL…").run()
    at.text_input(key="start_base_url").input("https://u:hunter2@llm.lab/v1?code=s3cr3t").run()
    at.text_input(key="start_model").input("m").run()
    at.text_input(key="start_run_name").input("with-secret").run()
    at.button(key="start_button").click().run()
    assert calls and any("hunter2" in a for a in calls[0])  # the run itself gets the URL
    (detail,) = [r[0] for r in team_store.rows("SELECT detail FROM actions")]
    assert "hunter2" not in detail and "s3cr3t" not in detail and "with-secret" in detail
