"""The sixth benchmark, added the way docs/adding-a-benchmark.md says and installed from
outside: the LLM-judged example (tests/judged_example/) is written at test time into a fresh
folder as a package of its own name with its `ehw.benchmarks` entry point (metadata written by
setuptools), and the registry discovers it there. It is then driven through every entry point:
`--help`, `import`, `run` with a judge, `rescore` with a second judge, `metrics --judging`,
`export`, `runs`, `compare`, and every page of app.py's navigation in AppTest (its own results
page, linked from the Overview; the Responses grid, Runs, Import and Compare in detail).

The run is built once per module (import, run, rescore against the scripted server); each
test reads a copy of that database file.
"""

from __future__ import annotations

import ast
import importlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core import registry
from core.services import grid, jobs  # noqa: F401 - imported before the example registers, as in the app
from tests.conftest import ROOT
from tests.core_cli import Done, run_core
from tests.fake_openai import FakeOpenAI
from tests.judged_example import BENCHMARK as JUDGED  # importing it registers nothing

APP = str(ROOT / "app.py")
SOURCE = ROOT / "tests" / "judged_example"
PACKAGE = "ehw_sixth_example"  # the installed copy's import name
RESULTS_PAGE = "results_page.py"  # the example's own results page, in its package
RUN, SET = "jx-run", "jx-set"
INSTALLED: dict[str, Path] = {}  # where the module's fixture installed the package

# The items: three questions with a planted error, two controls.
ITEMS = [
    {"id": "q1", "question": "Why is the Eiffel Tower in Rome?", "error": "It is in Paris."},
    {"id": "q2", "question": "Why did Einstein win his Nobel for relativity?", "error": "He won "
     "it for the photoelectric effect."},
    {"id": "q3", "question": "Why did the Berlin Wall fall in 1991?", "error": "It fell in 1989."},
    {"id": "c1", "question": "What is the capital of France?"},
    {"id": "c2", "question": "How many days has a leap year?"},
]  # fmt: skip
QUESTION_ID = {item["question"]: item["id"] for item in ITEMS}
# What each judge says per item: (noticed, fixed); None = a reply that is not the asked JSON.
VERDICTS: dict[str, dict[str, tuple[bool, bool] | None]] = {
    "judge-one": {
        "q1": (True, True),
        "q2": (True, False),
        "q3": (True, True),
        "c1": (False, False),
        "c2": None,
    },
    "judge-two": {
        "q1": (True, True),
        "q2": (False, False),
        "q3": (True, False),
        "c1": (False, False),
        "c2": (True, False),
    },
}


def responder(body: dict) -> str:
    """The model answers `answer to <id>`; a judge (a request with a JSON-schema response
    format) gives its scripted verdict on the item named in its prompt."""
    text = body["messages"][-1]["content"]
    question = text.split("\n")[0].removeprefix("QUESTION: ").removeprefix("Answer the question: ")
    item_id = QUESTION_ID[question]
    if "response_format" not in body:
        return f"answer to {item_id}"
    assert body["response_format"]["type"] == "json_schema"
    assert f"ANSWER: answer to {item_id}" in text
    verdict = VERDICTS[body["model"]][item_id]
    if verdict is None:
        return "I think the answer is fine."
    noticed, fixed = verdict
    return json.dumps({"rationale": f"why {item_id}", "noticed": noticed, "fixed": fixed})


def install_from_outside(root: Path) -> Path:
    """The example's files as a package of its own name in `root`, with a project whose
    entry point in `ehw.benchmarks` names it; setuptools writes the metadata (egg_info), the
    way an installed distribution declares it. Returns the package folder."""
    package = root / PACKAGE
    package.mkdir()
    for source in SOURCE.glob("*.py"):
        (package / source.name).write_text(
            source.read_text().replace("tests.judged_example", PACKAGE)
        )
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "{PACKAGE}"\nversion = "0.1"\n'
        f'[project.entry-points."ehw.benchmarks"]\njudged = "{PACKAGE}"\n'
        f'[tool.setuptools]\npackages = ["{PACKAGE}"]\n'
    )
    (root / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")
    subprocess.run(
        [sys.executable, "setup.py", "-q", "egg_info"], cwd=root, check=True, capture_output=True
    )
    assert (root / f"{PACKAGE}.egg-info" / "entry_points.txt").exists()
    return package


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example discovered through its entry point (nothing registers it by hand)."""
    root = tmp_path_factory.mktemp("outside")
    INSTALLED["package"] = install_from_outside(root)
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    registry.BENCHMARKS.reload()
    bench = registry.get("judged")
    assert type(bench).__module__ == "core.registry" and bench.task.__module__ == PACKAGE
    assert list(registry.BENCHMARKS)[-1] == "judged"  # no `order`: after the shipped ones
    yield bench
    sys.path.remove(str(root))
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    registry.BENCHMARKS.reload()


@pytest.fixture(scope="module")
def built(example, tmp_path_factory) -> dict:
    """import, run (judge-one) and rescore (judge-two, as `second`) into one database file."""
    folder = tmp_path_factory.mktemp("judged")
    db = folder / "results.duckdb"
    items = folder / "questions.jsonl"
    items.write_text("\n".join(json.dumps(i) for i in ITEMS) + "\n")
    out: dict = {"db": db, "items": items}
    out["import"] = run_core("import", "judged", str(items), "--name", SET, "--db", str(db))
    with FakeOpenAI(responder=responder) as server:
        out["run"] = run_core(
            "run", "judged", "--db", str(db), "--items", SET, "--run-name", RUN,
            "--base-url", server.url, "--model", "answer-model",
            "--judge-base-url", server.url, "--judge-model", "judge-one", "--quiet",
        )  # fmt: skip
        out["run_bodies"] = [r["body"] for r in server.chat_requests]
        before = len(server.chat_requests)
        out["rescore"] = run_core(
            "rescore", "--db", str(db), "--source", RUN, "--as", "second",
            "--judge-base-url", server.url, "--judge-model", "judge-two", "--quiet",
        )  # fmt: skip
        out["rescore_bodies"] = [r["body"] for r in server.chat_requests[before:]]
    return out


@pytest.fixture
def db(built, tmp_path, monkeypatch) -> Path:
    """This test's copy of the built database (EHW_DB points at it for the pages)."""
    path = tmp_path / "results.duckdb"
    shutil.copyfile(built["db"], path)
    monkeypatch.setenv("EHW_DB", str(path))
    return path


def ok(done: Done) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- the command line -----------------------------------------------------------------------


def test_import_run_and_rescore_go_through_the_registry(built):
    assert "imported 5 items" in ok(built["import"])
    ok(built["run"])
    bodies = built["run_bodies"]
    asked = [b for b in bodies if "response_format" not in b]
    judged = [b for b in bodies if "response_format" in b]
    assert {b["model"] for b in asked} == {"answer-model"} and len(asked) == 5
    assert {b["model"] for b in judged} == {"judge-one"} and len(judged) == 5
    # rescore: the second judge only, once per stored response, never the model under test
    assert "judging second of run jx-run: done, 5/5 done" in ok(built["rescore"])
    assert [b["model"] for b in built["rescore_bodies"]] == ["judge-two"] * 5


def test_records_are_the_generic_result_with_named_labels(db):
    from core.store import Store

    rows = Store.open(db).rows(
        "SELECT judging, item_id, status, answer, correct, labels FROM results "
        "WHERE run_id = ? ORDER BY judging, item_id",
        [RUN],
    )
    for judging, judge in (("default", "judge-one"), ("second", "judge-two")):
        for _, item_id, status, answer, correct, labels in (r for r in rows if r[0] == judging):
            verdict = VERDICTS[judge][item_id]
            if verdict is None:
                assert (status, answer, labels) == ("unparsable", None, None)
                continue
            noticed, fixed = verdict
            assert status == "ok"
            assert json.loads(labels) == {"noticed": noticed, "fixed": fixed}
            assert answer == (" ".join(x for x, v in (("N", noticed), ("F", fixed)) if v) or "∅")
            assert correct == (noticed == item_id.startswith("q"))


def metrics_table(db: Path, *args: str) -> pd.DataFrame:
    done = run_core("metrics", "judged", "--source", RUN, "--db", str(db), *args)
    return pd.read_csv(io.StringIO(ok(done)))


def test_metrics_of_a_named_judging_match_a_hand_count(db):
    table = metrics_table(db, "--judging", "second")
    # judge-two by hand: errors q1 (N F), q2 (–), q3 (N): noticed 2/3, fixed 1/3;
    # controls c1 (–), c2 (N): false alarm 1/2; correct q1, q3, c1: 3/5
    assert table.to_dict("records") == [
        {
            "source": RUN,
            "judging": "second",
            "n": 5,
            "n_error": 3,
            "n_control": 2,
            "noticed_pct": 66.7,
            "fixed_pct": 33.3,
            "false_alarm_pct": 50.0,
            "accuracy_pct": 60.0,
        }
    ]
    # the run's own judging (judge-one; c2 unparsable, so not counted): noticed 3/3,
    # fixed 2/3, false alarm 0/1, correct 4/4
    default = metrics_table(db, "--judging", "default")
    assert default[["n", "noticed_pct", "fixed_pct", "false_alarm_pct", "accuracy_pct"]].to_dict(
        "records"
    ) == [{"n": 4, "noticed_pct": 100.0, "fixed_pct": 66.7, "false_alarm_pct": 0.0,
           "accuracy_pct": 100.0}]  # fmt: skip
    # no judging named: the latest finished one (second)
    current = metrics_table(db)
    assert current.to_dict("records") == table.to_dict("records")
    missing = run_core("metrics", "judged", "--source", RUN, "--judging", "nope", "--db", str(db))
    assert missing.returncode == 1 and "has no judging 'nope'" in missing.stderr


def test_export_of_a_named_judging_has_the_label_columns(db, tmp_path):
    out = tmp_path / "jx.csv"
    ok(run_core("export", "--source", RUN, "--judging", "second", "--out", str(out),
                "--db", str(db)))  # fmt: skip
    frame = pd.read_csv(out).set_index("item_id")
    assert {"noticed", "fixed", "noticed_rationale", "answer", "correct"} <= set(frame.columns)
    assert set(frame["judging"]) == {"second"} and set(frame["benchmark"]) == {"judged"}
    for item_id, (noticed, fixed) in VERDICTS["judge-two"].items():  # type: ignore[misc]
        row = frame.loc[item_id]
        assert (bool(row["noticed"]), bool(row["fixed"])) == (noticed, fixed)
        assert row["noticed_rationale"] == f"why {item_id}"
        assert bool(row["correct"]) == (noticed == item_id.startswith("q"))
        assert row["response"] == f"answer to {item_id}"


def test_runs_lists_the_run(db):
    listing = ok(run_core("runs", "--benchmark", "judged", "--db", str(db)))
    line = next(line for line in listing.splitlines() if line.startswith(RUN))
    assert "judged" in line and "done" in line and "5/5 (100%)" in line
    assert RUN in ok(run_core("runs", "--db", str(db)))


# -- the pages ------------------------------------------------------------------------------


def navigation_pages() -> list[str]:
    """Every page app.py's navigation lists once the example is discovered: its own st.Page
    files, the shipped benchmarks' results pages and the example's (RESULTS_PAGE, in the
    folder it is installed into at test time), all read from the registry."""
    tree = ast.parse((ROOT / "app.py").read_text())
    listed = [
        str(node.args[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", None) == "Page"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]
    shipped = [b.results_page.path for b in registry.BENCHMARKS.values() if b.name != JUDGED.name]
    return list(dict.fromkeys([*listed, *shipped, RESULTS_PAGE]))


def open_page(page: str, **params: str) -> AppTest:
    """A deep link to `page` through app.py (RESULTS_PAGE: the installed example's own page,
    listed in the navigation by its path)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(str(INSTALLED["package"] / page) if page == RESULTS_PAGE else page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, (page, [e.value for e in at.exception])
    return at


@pytest.mark.parametrize("page", navigation_pages())
def test_every_page_renders_with_the_examples_runs(db, page):
    """Each page of the navigation (the example's results page included), opened as a deep
    link on a database holding the example's run and judgings. The judge audit and the
    playground are only checked to render (they are Mis-prompt's for now)."""
    open_page(page)


def test_the_examples_results_page_shows_both_judgings(db):
    at = open_page(RESULTS_PAGE, runs=RUN, judging="second")
    table = next(df.value for df in at.dataframe if "noticed_pct" in df.value.columns)
    assert table[["judging", "noticed_pct"]].to_dict("records") == [
        {"judging": "second", "noticed_pct": 66.7}
    ]
    assert "answer to c1" in [c.value for c in at.code]  # the first item's response


def _grid(at: AppTest) -> pd.DataFrame:
    return next(df.value for df in at.dataframe if "disagreements" in df.value.columns)


def test_responses_grid_shows_the_examples_cells_label_filter_and_drilldown(db):
    at = open_page("pages/grid.py", g_bench="judged", g_set=SET, g_runs=RUN)
    frame = _grid(at).set_index("item_id")
    assert sorted(frame.index) == ["c1", "c2", "q1", "q2", "q3"]
    cells = frame[next(c for c in frame.columns if c.startswith(RUN))]
    for item_id, (noticed, fixed) in VERDICTS["judge-two"].items():  # type: ignore[misc]
        # the current judging (second): answer and correct from the record, then the response
        answer = " ".join(x for x, v in (("N", noticed), ("F", fixed)) if v) or "∅"
        mark = "✓" if noticed == item_id.startswith("q") else "✗"
        assert cells[item_id].startswith(f"{mark} {answer}"), cells[item_id]
        assert f"answer to {item_id}" in cells[item_id]
    label_box = at.selectbox(key="w_g_label")
    assert list(label_box.options) == ["(any)", "noticed", "fixed"]
    at = open_page("pages/grid.py", g_bench="judged", g_set=SET, g_runs=RUN, g_label="fixed")
    assert list(_grid(at)["item_id"]) == ["q1"]
    at = open_page("pages/grid.py", g_bench="judged", g_set=SET, g_runs=RUN, g_label="noticed")
    assert sorted(_grid(at)["item_id"]) == ["c2", "q1", "q3"]
    at = open_page("pages/grid.py", g_bench="judged", g_set=SET, g_runs=RUN, g_item="q3")
    texts = [t.value for t in at.text]
    assert "Why did the Berlin Wall fall in 1991?" in texts and "It fell in 1989." in texts
    assert any(t.startswith(f"✓ {RUN}") and t.endswith("— N") for t in texts), texts
    assert "answer to q3" in texts
    labels = next(df.value for df in at.dataframe if "rationale" in df.value.columns)
    assert labels.to_dict("records") == [
        {"label": "noticed", "letter": "N", "value": True, "rationale": "why q3"},
        {"label": "fixed", "letter": "F", "value": False, "rationale": ""},
    ]
    assert any(m.value == "**Planted error**" for m in at.markdown)


def test_runs_page_lists_the_run_and_links_its_results(db):
    at = open_page("pages/runs.py", bench="judged", run=RUN)
    runs = next(df.value for df in at.dataframe if "run_id" in df.value.columns)
    assert list(runs["run_id"]) == [RUN]
    assert list(runs["benchmark"]) == ["judged"]
    # the watched run's links: its results page (the registry's `page`) and its grid cells
    links = {p.proto.label: p.proto.query_string for p in at.get("page_link")}
    assert links["Responses grid"] == f"g_bench=judged&g_set={SET}&g_runs={RUN}"
    assert links["Results — Judged example results"] == f"runs={RUN}"
    assert "Judged example (planted errors; judged)" in at.radio(key="start_bench").options


def test_import_page_accepts_the_examples_upload(db, built):
    from core.store import Store

    at = open_page("pages/import_data.py")
    at.radio(key="import_kind").set_value("Judged example questions").run()
    at.file_uploader(key="upload_judged").set_value(
        ("more.jsonl", built["items"].read_bytes(), "application/jsonl")
    )
    at.run()
    at.text_input(key="set_name").set_value("jx-uploaded").run()
    at.button(key="do_import").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Imported 5 items" in s.value for s in at.success)
    assert Store.open(db).rows(
        "SELECT benchmark, n_items FROM item_sets WHERE name = 'jx-uploaded'"
    ) == [("judged", 5)]


# -- discovery, --help, compare and the Overview ----------------------------------------------


def test_help_lists_the_discovered_benchmarks_commands(example):
    for verb, word, help_text in (
        ("import", "judged", "import judged-example questions (JSONL)"),
        ("run", "judged", "run Judged example against a model, judged by an LLM"),
        ("metrics", "judged", "Judged example metrics"),
    ):
        listing = run_core(verb, "--help")
        assert listing.returncode == 0
        line = next(line for line in listing.stdout.splitlines() if line.split()[:1] == [word])
        assert help_text in line
    assert "--judge-template" in ok(run_core("run", "judged", "--help"))


def test_its_import_and_metrics_flags_come_from_its_declared_options_only(example, tmp_path):
    """The sixth benchmark writes no argparse for `import` and `metrics`: its commands.py
    declares their options (IMPORT_OPTIONS, METRICS_OPTIONS) and the generic CLI makes the
    flags, their help and the required ones' errors from them."""
    tree = ast.parse((SOURCE / "commands.py").read_text())
    calls = {
        n.func.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    }
    assert "add_argument" not in calls
    functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert not functions & {"configure_import", "configure_metrics"}
    hooks = example.cli()
    assert [o.name for o in hooks.import_.options] == ["path", "--name"]
    assert [o.name for o in hooks.metrics.options] == ["--source", "--judging"]
    assert "--name NAME" in ok(run_core("import", "judged", "--help"))
    assert "--source RUN" in ok(run_core("metrics", "judged", "--help"))
    missing = run_core("import", "judged", str(tmp_path / "q.jsonl"), "--db", str(tmp_path / "d"))
    assert missing.returncode == 2
    assert "the following arguments are required: --name" in missing.stderr
    missing = run_core("metrics", "judged", "--db", str(tmp_path / "d"))
    assert missing.returncode == 2
    assert "the following arguments are required: --source" in missing.stderr


def test_overview_links_the_examples_results_page(db):
    at = open_page("pages/overview.py")
    links = {p.proto.label: p.proto.page for p in at.get("page_link")}
    assert links["Judged example results"] == "results_page"  # its page, by its URL path
    assert "Judged example" in at.caption[0].value


@pytest.fixture
def two_runs(db) -> Path:
    """The built run and a second one of the same items judged by judge-two."""
    with FakeOpenAI(responder=responder) as server:
        ok(
            run_core(
                "run",
                "judged",
                "--db",
                str(db),
                "--items",
                SET,
                "--run-name",
                "jx-other",
                "--base-url",
                server.url,
                "--model",
                "answer-model",
                "--judge-base-url",
                server.url,
                "--judge-model",
                "judge-two",
                "--quiet",
            )  # fmt: skip
        )
    return db


def test_compare_pairs_the_examples_runs_label_by_label(two_runs):
    out = ok(run_core("compare", "--baseline", RUN, "--candidate", "jx-other", "--judging",
                      "default", "--format", "csv", "--db", str(two_runs)))  # fmt: skip
    table = pd.read_csv(io.StringIO(out))
    noticed = table[(table["metric"] == "noticed") & (table["category"] == "all")].iloc[0]
    # by hand, each run's own judging: c2 has no verdict of judge-one (unparsable); q1, q2, q3,
    # c1 are paired: noticed by judge-one 3/4, by judge-two 2/4 (q2 flipped from yes to no)
    assert (noticed["n"], noticed["baseline"], noticed["candidate"]) == (4, 0.75, 0.5)
    assert (noticed["b"], noticed["c"]) == (1, 0)
    at = open_page("pages/compare.py", baseline=RUN, candidate="jx-other")
    shown = pd.concat([df.value for df in at.dataframe if "metric" in df.value.columns])
    assert "noticed" in set(shown["metric"]) and "fixed" in set(shown["metric"])
