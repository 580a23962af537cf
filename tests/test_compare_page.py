"""AppTest: the Compare runs page (runs from the URL, table with its download, flipped items
linked to the Responses grid, refusals, empty database)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT
from tests.grid_fixtures import LETTER, MP_ITEMS, all_runs

APP = str(ROOT / "app.py")
PAGE = "pages/compare.py"


def _page(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(PAGE)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _frame(at: AppTest, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_empty_database_says_how_to_get_runs(store):
    at = _page()
    assert any("two runs of one benchmark" in i.value for i in at.info)


def test_table_and_flipped_items_of_the_runs_in_the_url(store):
    all_runs(store)
    at = _page(baseline="r1", candidate="r2")
    chosen = {s.label: s.value for s in at.selectbox}
    assert (chosen["Baseline"], chosen["Candidate"]) == ("r1", "r2")  # read from the URL
    at = _page(baseline="r1", candidate="r3")
    assert {s.label: s.value for s in at.selectbox}["Candidate"] == "r3"
    at = _page(baseline="r1", candidate="r2")
    result = _frame(at, "p_holm")
    detection = result[(result["metric"] == "detection") & (result["category"] == "all")].iloc[0]
    detection = detection.replace("", "0").astype(str)  # shown as text (issue 31)
    # by hand from the fixture's patterns: detection true in r1 only / in r2 only
    b = sum(1 for *_, (p1, p2, _p3) in MP_ITEMS.values() if "D" in p1 and "D" not in p2)
    c = sum(1 for *_, (p1, p2, _p3) in MP_ITEMS.values() if "D" not in p1 and "D" in p2)
    assert (detection["n"], detection["b"], detection["c"]) == tuple(
        map(str, (len(MP_ITEMS), b, c))
    )
    assert any(b.label == "Download CSV" for b in at.download_button)

    flipped = _frame(at, "responses")
    expected = {
        (item, LETTER[letter])
        for item, (_, _, (p1, p2, _p3)) in MP_ITEMS.items()
        for letter in p1 ^ p2
    }
    got = {(i, m) for i, m in zip(flipped["item_id"], flipped["metric"]) if m in LETTER.values()}
    assert got == expected
    url = flipped["responses"].iloc[0]
    query = parse_qs(urlparse(url).query)
    assert urlparse(url).path.endswith("grid")
    assert query["g_runs"] == ["r1,r2"] and query["g_bench"] == ["misprompt"]
    assert query["g_item"] == [flipped["item_id"].iloc[0]] and query["g_set"] == ["gs"]


def test_candidate_list_holds_only_the_baselines_benchmark(store):
    all_runs(store)
    at = _page(baseline="r1", candidate="r2")
    candidates = next(s for s in at.selectbox if s.label == "Candidate").options
    assert candidates and all(o.startswith(("r2", "r3")) for o in candidates)


# -- issue 31: presentation (points 6, 7) and bad parameters (point 15) ----------------------


def _shown(at: AppTest):
    """The comparison table as shown (the first dataframe with p_holm)."""
    return _frame(at, "p_holm")


def test_empty_cells_are_blank_and_p_values_read_as_text(all_runs_store):
    at = _page(baseline="r1", candidate="r2")
    shown = _shown(at)
    # detection scores (F1, recall, the controls' false-positive rate) have no McNemar test
    scores = shown["metric"].str.endswith(("_f1", "_recall", "_fpr"))
    f1 = shown[scores]
    assert len(f1) and not f1[["b", "c", "p_value", "p_holm"]].isna().to_numpy().any()
    assert set(f1["b"]) == {""} and set(f1["p_value"]) == {""}
    for p in shown.loc[~scores, "p_value"]:
        assert p == "< 0.001" or (0.001 <= float(p) <= 1 and len(p) == 5), p
    # the download keeps the numbers (the CSV equals `python -m core compare`)
    assert any(b.label == "Download CSV" for b in at.download_button)


def test_p_below_a_thousandth_reads_below_not_zero():
    from pages.ui.formats import p_text

    assert p_text(0.0004) == "< 0.001" and p_text(0.0) == "< 0.001"
    assert p_text(0.001) == "0.001" and p_text(0.04567) == "0.046" and p_text(1.0) == "1.000"
    assert p_text(float("nan")) == "" and p_text(None) == ""


def test_control_rows_show_no_f1_and_holm_marks_with_a_chart(all_runs_store):
    at = _page(baseline="r1", candidate="r2")
    shown = _shown(at)
    controls = shown[shown["category"] == "(none)"]
    assert len(controls) and not controls["metric"].str.endswith("_f1").any()
    assert "holds after Holm" in shown.columns
    marked = shown["holds after Holm"] != ""
    assert (shown.loc[marked, "p_holm"].map(lambda p: p == "< 0.001" or float(p) < 0.05)).all()
    assert any("Holm" in c.value and "(none)" in c.value for c in at.caption)
    charts = at.get("plotly_chart")
    assert charts, "a chart of the differences with their intervals"
    import json

    spec = json.loads(charts[0].proto.spec)
    assert any(trace.get("error_x") for trace in spec["data"])


def test_holm_mark_follows_p_holm(store):
    """Two runs far apart on 60 items: detection differs for every error item, so it holds."""
    from tests.misprompt_fixtures import insert_run, random_verdicts

    base = random_verdicts(50, 10, seed=1)
    cand = base.copy()
    cand["detection"] = ~cand["is_error"].astype(bool)  # detection flipped to the opposite
    base["detection"] = cand["is_error"].astype(bool)
    insert_run(store, "a", base, model="m", item_set="s")
    insert_run(store, "b", cand, model="m", item_set="s", judge_model="other-judge")
    at = _page(baseline="a", candidate="b")
    shown = _shown(at)
    row = shown[(shown["metric"] == "detection") & (shown["category"] == "all")].iloc[0]
    assert row["p_holm"] == "< 0.001" and row["holds after Holm"] == "yes"
    # one model, two judges: the labels tell the runs apart
    options = {s.label: s.options for s in at.selectbox}
    assert any("judge test-judge" in o for o in options["Baseline"])
    assert any("judge other-judge" in o for o in options["Candidate"])


def test_bad_parameters_are_named_not_replaced(all_runs_store):
    for params, words in (
        ({"baseline": "nope", "candidate": "r2"}, ["baseline", "nope"]),
        ({"baseline": "r1", "candidate": "r1' OR 1=1 --"}, ["candidate", "r1' OR 1=1 --"]),
        ({"baseline": "r1", "candidate": "r1"}, ["candidate", "baseline"]),
    ):
        at = _page(**params)
        errors = " ".join(e.value for e in at.error)
        assert all(w in errors for w in words), (params, errors)
        assert not any("p_holm" in df.value.columns for df in at.dataframe), params
    bbm = next(
        r for r, b in all_runs_store.rows("SELECT run_id, benchmark FROM runs") if b == "bbm"
    )
    at = _page(baseline="r1", candidate=bbm)
    errors = " ".join(e.value for e in at.error)
    assert bbm in errors and "benchmark" in errors
    assert not any("p_holm" in df.value.columns for df in at.dataframe)


def test_cli_compare_prints_no_numpy_warning(store, db_path):
    """A label neither run ever sets on a control item: its F1 on the controls is 0/0 in every
    bootstrap draw, which made numpy warn 'All-NaN slice encountered' on stderr."""
    import subprocess
    import sys

    from tests.misprompt_fixtures import insert_run, random_verdicts

    for run, seed in (("a", 1), ("b", 2)):
        verdicts = random_verdicts(30, 10, seed=seed)
        verdicts.loc[~verdicts["is_error"], "guidance"] = False
        insert_run(store, run, verdicts, item_set="s")
    done = subprocess.run(
        [sys.executable, "-m", "core", "compare", "--db", str(db_path)]
        + ["--baseline", "a", "--candidate", "b"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "detection" in done.stdout
    assert done.stderr == "", done.stderr
