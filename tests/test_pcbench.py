"""PCBench (issue 19): the importer's validation, the metrics against hand counts and an
independent Wilson interval (statsmodels), the paired McNemar counts, the published table, the
CLI (import → run with a scripted model and judge → metrics → rescore with a second judge), the
judge audit on its runs, and its results page in AppTest."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint
from streamlit.testing.v1 import AppTest

from core.benchmarks.pcbench import compare as pcc
from core.benchmarks.pcbench import metrics as pcm
from core.benchmarks.pcbench.items import ImportProblem, import_bytes, read_items
from core.benchmarks.pcbench.record import parse_verdict
from core.store import Store
from tests.conftest import ROOT
from tests.core_cli import run_core
from tests.fake_openai import FakeOpenAI

APP = str(ROOT / "app.py")
SAMPLE = ROOT / "data" / "samples" / "pcbench_sample.jsonl"
PUBLISHED = ROOT / "data" / "published" / "pcbench_statistics.csv"
RUN, SET = "pc-run", "pc-set"
HINT = "Check if there are any errors in the question's premises before answering."


def record(pid: object = "p1", **over: object) -> dict:
    base: dict[str, object] = {
        "pid": pid,
        "conflict_type": "contra_premise_insert",
        "difficulty": "normal",
        "normal_query": "Sound problem.",
        "ill_query": "Flawed problem.",
        "conflict": {"conflict_reason": "A contradicts B.", "recomposed_premise": "B"},
        "meta_info": {"final_answer": "4"},
    }
    base.update(over)
    return base


def jsonl(*records: object) -> bytes:
    return ("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n").encode()


# -- the importer ---------------------------------------------------------------------------


def test_every_bad_record_is_named_by_file_and_line():
    data = jsonl(
        record("p1"),
        "{not json",
        record("p3", conflict_type="typo"),
        record("p4", difficulty="easy"),
        record("p5", ill_query="  "),
        record("p6", conflict="text"),
        record("p7", conflict_type="flawed_solution_completion", conflict={"conflict_reason": "x"}),
        record("p1"),
        ["a list"],
    )
    with pytest.raises(ImportProblem) as err:
        read_items(data, "pc.jsonl")
    lines = [p.split(":")[1] for p in err.value.problems]
    assert lines == ["2", "3", "4", "5", "6", "7", "8", "9"]
    text = str(err.value)
    assert "pc.jsonl:3: conflict_type 'typo'" in text
    assert "pc.jsonl:4: difficulty 'easy'" in text
    assert "pc.jsonl:7: conflict.recomposed_premise is empty" in text
    assert "pc.jsonl:8: pid 'p1' repeats line 1" in text


def test_wrong_types_are_refused_with_their_lines_and_nothing_is_written(store):
    """`"pid": null` was stored as item 'None', 12345 as '12345' (colliding with "5"/5 style
    ids), a list as the sound problem, NaN as meta_info: each is refused with its line."""
    data = jsonl(
        record("ok"),
        record(None),
        record(12345),
        record(" "),
        record("p5", normal_query=["list"]),
        record("p6", meta_info=float("nan")),
        record("p7", meta_info=["x"]),
        record("p8", conflict={"conflict_reason": 5}),
        record("p9", ill_query=7),
        '{"pid": "p10", "conflict_type": "contra_premise_insert", "difficulty": "normal", '
        '"ill_query": "Q", "conflict": {"conflict_reason": "r"}, "extra": Infinity}',
        record("p11", normal_query=None, meta_info=None),  # absent-as-null is fine
    )
    with pytest.raises(ImportProblem) as err:
        import_bytes(store, data, "pc.jsonl", "typed")
    text = str(err.value)
    assert [p.split(":")[1] for p in err.value.problems] == [str(n) for n in range(2, 11)]
    assert "pc.jsonl:2: 'pid' must be a non-empty string (got null)" in text
    assert "pc.jsonl:3: 'pid' must be a non-empty string (got a number: 12345)" in text
    assert "pc.jsonl:4: 'pid' must be a non-empty string" in text
    assert "pc.jsonl:5: 'normal_query' must be a string (got a list)" in text
    assert "pc.jsonl:6: NaN or Infinity is not a JSON value" in text
    assert "pc.jsonl:7: 'meta_info' must be an object (got a list)" in text
    assert "pc.jsonl:8: 'conflict.conflict_reason' must be a string (got a number: 5)" in text
    assert "pc.jsonl:9: 'ill_query' must be a string (got a number: 7)" in text
    assert "pc.jsonl:10: NaN or Infinity is not a JSON value" in text
    assert store.scalar("SELECT count(*) FROM items WHERE item_set = 'typed'") == 0
    ok = read_items(jsonl(record("5"), record("05")), "pc.jsonl")
    assert list(ok["item_id"]) == ["5", "05"]


def test_a_json_array_reports_the_line_a_record_starts_on():
    text = json.dumps([record("a"), record("b", difficulty="x")], indent=1).encode()
    with pytest.raises(ImportProblem) as err:
        read_items(text, "pc.json")
    start_of_b = text.decode().split("\n").index(" {", 2) + 1
    assert err.value.problems == [
        f"pc.json:{start_of_b}: difficulty 'x' is not one of normal, medium, hard"
    ]
    assert list(read_items(json.dumps([record("a")]).encode(), "x.json")["item_id"]) == ["a"]


def test_nothing_is_written_when_one_record_is_bad(store):
    with pytest.raises(ImportProblem):
        import_bytes(store, jsonl(record("ok"), record("bad", difficulty="?")), "f.jsonl", "s")
    assert store.scalar("SELECT count(*) FROM items WHERE item_set = 's'") == 0


def test_records_become_items_with_the_flaw_the_paper_tells_its_judge(store):
    data = jsonl(
        record("c", conflict_type="contra_infer_insert"),
        record("f", conflict_type="irr_query_distraction", difficulty="hard"),
    )
    assert import_bytes(store, data, "f.jsonl", "s") == 2
    rows = store.df("SELECT * FROM items WHERE item_set = 's' ORDER BY item_id")
    assert list(rows["gold"]) == ["A contradicts B.", "Step 'B' in partial solution is wrong"]
    assert list(rows["secondary_category"]) == ["normal", "hard"]
    assert json.loads(rows["payload"][0])["normal_query"] == "Sound problem."


def test_the_shipped_sample_covers_every_error_type_and_difficulty():
    items = read_items(SAMPLE.read_bytes(), SAMPLE.name)
    assert 12 <= len(items) <= 20
    assert set(items["primary_category"]) == set(pcm.ERROR_TYPES)
    assert set(items["secondary_category"]) == set(pcm.DIFFICULTIES)


def test_the_judge_reply_is_read_in_the_papers_block_or_as_json():
    assert parse_verdict('```json\n{"if_find_contradiction": "True", "basis": "b"}\n```') == (
        True,
        "b",
    )
    assert parse_verdict('{"if_find_contradiction": "False", "basis": ""}') == (False, "")
    with pytest.raises(ValueError):
        parse_verdict('{"if_find_contradiction": "maybe"}')


# -- metrics on hand cases -------------------------------------------------------------------


def hand_rows() -> pd.DataFrame:
    """Eleven proactive and eleven assisted verdicts (same items)."""
    rows = []
    spec = [  # item, type, difficulty, proactive critique, assisted critique, chars p / a
        ("i1", "contra_premise_insert", "normal", True, True, 10, 30),
        ("i2", "contra_premise_insert", "normal", False, True, 20, 40),
        ("i3", "contra_premise_insert", "hard", False, False, 30, 30),
        ("i4", "contra_infer_insert", "normal", False, True, 40, 80),
        ("i5", "contra_infer_insert", "medium", True, False, 50, 10),
        ("i6", "flawed_solution_completion", "hard", False, True, 60, 60),
        ("i7", "irr_query_distraction", "hard", False, True, 70, 70),
        ("i8", "irr_query_distraction", "hard", False, True, 80, 160),
        ("i9", "irr_query_distraction", "hard", False, False, 90, 90),
        ("i10", "irr_query_distraction", "normal", False, True, 100, 100),
        ("i11", "irr_query_distraction", "normal", False, True, 110, 110),
    ]
    for item, et, diff, pro, ass, cp, ca in spec:
        rows.append(dict(item_id=item, variant="proactive", error_type=et, difficulty=diff,
                         critique=pro, chars=cp, tokens=float("nan")))  # fmt: skip
        rows.append(dict(item_id=item, variant="assisted", error_type=et, difficulty=diff,
                         critique=ass, chars=ca, tokens=float("nan")))  # fmt: skip
    return pd.DataFrame(rows)


def test_rates_intervals_and_lengths_match_hand_counts_and_statsmodels():
    rows = hand_rows()
    table = pcm.cell_table(rows).set_index(["variant", "error_type", "difficulty"])
    # by hand: proactive critiques i1, i5 of 11; assisted all but i3, i5, i9: 8 of 11
    for variant, k in (("proactive", 2), ("assisted", 8)):
        cell = table.loc[[(variant, "all", "all")]].iloc[0]
        assert (cell["n"], cell["critiqued"]) == (11, k)
        assert cell["rate"] == pytest.approx(100 * k / 11)
        low, high = proportion_confint(k, 11, alpha=0.05, method="wilson")
        assert (cell["ci_low"], cell["ci_high"]) == pytest.approx((100 * low, 100 * high))
    # irrelevant query × hard: i7, i8, i9 — assisted critiques 2 of 3, proactive 0 of 3
    cell = table.loc[[("assisted", "irr_query_distraction", "hard")]].iloc[0]
    assert (cell["n"], cell["critiqued"]) == (3, 2)
    assert table.loc[("proactive", "irr_query_distraction", "hard"), "critiqued"] == 0
    # mean length: proactive over all = (10+…+110)/11 = 60; assisted = 780/11
    assert table.loc[("proactive", "all", "all"), "mean_len_chars"] == pytest.approx(60)
    assert table.loc[("assisted", "all", "all"), "mean_len_chars"] == pytest.approx(780 / 11)
    assert table.loc[("assisted", "all", "all"), "len_vs_proactive"] == pytest.approx(780 / 660)
    assert table.loc[("assisted", "irr_query_distraction", "hard"), "len_vs_proactive"] == (
        pytest.approx((70 + 160 + 90) / (70 + 80 + 90))
    )
    # cells without items are absent, not zero
    assert ("proactive", "flawed_solution_completion", "normal") not in table.index


def test_paired_counts_match_a_hand_count_and_statsmodels_mcnemar():
    counts = pcc.pair_counts(hand_rows())
    # b: critiqued proactively only (i5) = 1; c: only when assisted (i2 i4 i6 i7 i8 i10 i11) = 7
    assert (counts["n"], counts["b"], counts["c"]) == (11, 1, 7)
    assert counts["proactive"] == pytest.approx(100 * 2 / 11)
    assert counts["passive"] == pytest.approx(100 * 8 / 11)
    table = [[1, 1], [7, 2]]  # [[both, pro only], [assisted only, neither]]
    assert counts["p_value"] == pytest.approx(mcnemar(table, exact=True).pvalue)


def test_published_rows_are_the_csv(initialised_store):
    csv = pd.read_csv(PUBLISHED)
    table = pcm.published_metrics(initialised_store)
    assert len(table) == len(csv)
    gpt = table[(table["model"] == "gpt-4o") & (table["error_type"] == "all")
                & (table["difficulty"] == "all")].set_index("variant")  # fmt: skip
    src = csv[(csv["model"] == "gpt-4o") & (csv["error_type"] == "all")
              & (csv["difficulty"] == "all")].set_index("variant")  # fmt: skip
    for variant in ("proactive", "assisted"):
        assert gpt["n"][variant] == src["n"][variant]
        assert gpt["rate"][variant] == pytest.approx(100 * src["rate_published"][variant])
        assert gpt["mean_len_tokens"][variant] == src["mean_len_tokens"][variant]
    assert set(table["judging"]) == {pcm.PAPER_JUDGING}
    # the paper's finding, from its own numbers: every model critiques more when asked
    overview = table[(table["error_type"] == "all") & (table["difficulty"] == "all")]
    wide = overview.pivot(index="model", columns="variant", values="rate")
    assert len(wide) == 15 and (wide["assisted"] > wide["proactive"]).all()


# -- the command line, against a scripted model and judge ------------------------------------

SAMPLE_ITEMS = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
PID_OF = {r["ill_query"]: r["pid"] for r in SAMPLE_ITEMS}
# what each judge says: judge-one critiques every assisted answer and the proactive answers of
# the contra_premise_insert problems; judge-two only assisted answers of normal problems
TYPE_OF = {r["pid"]: r["conflict_type"] for r in SAMPLE_ITEMS}
DIFF_OF = {r["pid"]: r["difficulty"] for r in SAMPLE_ITEMS}


def says(judge: str, pid: str, variant: str) -> bool:
    if judge == "judge-one":
        return variant == "assisted" or TYPE_OF[pid] == "contra_premise_insert"
    return variant == "assisted" and DIFF_OF[pid] == "normal"


def responder(body: dict) -> str:
    text = body["messages"][-1]["content"]
    if "response_format" not in body:  # the model under test
        assisted = text.rstrip().endswith("please report them promptly.")
        problem = text.split("\n" + HINT)[0] if assisted else text
        pid = PID_OF[problem]
        variant = "assisted" if assisted else "proactive"
        return f"ANSWER {pid} {variant}" + (" with more words" * (3 if assisted else 1))
    found = re.search(r"ANSWER (\S+) (\w+)", text)
    assert found is not None, text
    pid, variant = found.groups()
    verdict = "True" if says(body["model"], pid, variant) else "False"
    reply = json.dumps({"if_find_contradiction": verdict, "basis": f"basis {pid} {variant}"})
    # judge-one answers like the paper's o3-mini (a ```json block), judge-two plain JSON
    return f"```json\n{reply}\n```" if body["model"] == "judge-one" else reply


@pytest.fixture(scope="module")
def built(tmp_path_factory, _initialised_template) -> dict:
    folder = tmp_path_factory.mktemp("pcbench")
    db = folder / "results.duckdb"
    out: dict = {"db": db}
    shutil.copyfile(_initialised_template, db)  # what `init` makes, made once per process
    out["import"] = run_core("import", "pcbench", str(SAMPLE), "--name", SET, "--db", str(db))
    with FakeOpenAI(responder=responder) as server:
        out["run"] = run_core(
            "run", "pcbench", "--db", str(db), "--items", SET, "--run-name", RUN,
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
    path = tmp_path / "results.duckdb"
    shutil.copyfile(built["db"], path)
    monkeypatch.setenv("EHW_DB", str(path))
    return path


def ok(done) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def metrics_csv(db: Path, *args: str) -> pd.DataFrame:
    done = run_core("metrics", "pcbench", "--source", RUN, "--db", str(db), *args)
    return pd.read_csv(io.StringIO(ok(done)))


def test_run_asks_both_variants_and_the_papers_judge(built):
    n = len(SAMPLE_ITEMS)
    assert f"imported {n} PCBench problems" in ok(built["import"])
    ok(built["run"])
    asked = [b for b in built["run_bodies"] if "response_format" not in b]
    judged = [b for b in built["run_bodies"] if "response_format" in b]
    assert len(asked) == 2 * n and len(judged) == 2 * n
    assert sum(HINT in b["messages"][-1]["content"] for b in asked) == n
    prompt = judged[0]["messages"][-1]["content"]
    assert "**Premise Critique Ability**" in prompt and "if_find_contradiction" in prompt
    # rescore: the second judge only, once per stored response
    assert [b["model"] for b in built["rescore_bodies"]] == ["judge-two"] * (2 * n)


def hand_rates(judge: str) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(variant, type, difficulty) -> (n, critiqued) counted from the script, 'all' included."""
    out: dict[tuple[str, str, str], list[int]] = {}
    for r in SAMPLE_ITEMS:
        for variant in ("proactive", "assisted"):
            for et in ("all", r["conflict_type"]):
                for d in ("all", r["difficulty"]):
                    cell = out.setdefault((variant, et, d), [0, 0])
                    cell[0] += 1
                    cell[1] += says(judge, r["pid"], variant)
    return {k: (v[0], v[1]) for k, v in out.items()}


@pytest.mark.parametrize("judging,judge", [("default", "judge-one"), ("second", "judge-two")])
def test_metrics_of_each_judging_match_the_script(db, judging, judge):
    table = metrics_csv(db, "--judging", judging)
    assert list(table.columns) == pcm.COLUMNS
    assert set(table["judging"]) == {judging}
    assert set(table["judge_template"]) == {"pcbench/judge.v2"}
    got = {(r.variant, r.error_type, r.difficulty): (r.n, r.critiqued) for r in table.itertuples()}
    assert got == hand_rates(judge)
    for r in table.itertuples():
        low, high = proportion_confint(r.critiqued, r.n, alpha=0.05, method="wilson")
        assert (r.ci_low, r.ci_high) == pytest.approx((100 * low, 100 * high))
    # the assisted answers are longer by construction: " with more words" three times, not once
    overall = table[(table["error_type"] == "all") & (table["difficulty"] == "all")]
    lengths = overall.set_index("variant")["mean_len_chars"]
    pid_len = sum(len(f"ANSWER {r['pid']} ") for r in SAMPLE_ITEMS) / len(SAMPLE_ITEMS)
    assert lengths["proactive"] == pytest.approx(pid_len + len("proactive with more words"))
    assert lengths["assisted"] == pytest.approx(pid_len + len("assisted") + 3 * 16)


def test_metrics_default_to_the_current_judging_and_other_formats(db):
    assert metrics_csv(db).equals(metrics_csv(db, "--judging", "second"))
    js = json.loads(ok(run_core("metrics", "pcbench", "--source", RUN, "--format", "json",
                                "--db", str(db))))  # fmt: skip
    assert {"n", "ci_low", "ci_high", "judging", "judge_template"} <= set(js[0])
    table = ok(run_core("metrics", "pcbench", "--source", "published", "--format", "table",
                        "--db", str(db)))  # fmt: skip
    assert "gpt-4o" in table and "paper (o3-mini judge)" in table
    missing = run_core("metrics", "pcbench", "--source", RUN, "--judging", "nope", "--db", str(db))
    assert missing.returncode == 2 and "has no judging 'nope'" in missing.stderr


def test_the_judge_audit_samples_its_runs_with_its_label(db):
    from core.services import audit

    store = Store.open(db)
    assert "pcbench" in audit.auditable_benchmarks()
    assert RUN in set(audit.auditable_runs(store)["run_id"])
    info = audit.create_audit(store, "pc-audit", [RUN], fraction=0.25, seed=1)
    queue = audit.audit_queue(store, "pc-audit")
    assert len(queue) >= 4 and info is not None
    first = queue.iloc[0]
    audit.save_labels(store, RUN, first["item_id"], first["variant"], "ann", {"critique": True})
    labels = audit.audit_labels(store, "pc-audit")
    assert list(labels["label"]) == ["critique"]


def test_the_paired_comparison_of_the_run(db):
    store = Store.open(db)
    rows = pcc.paired_rows(store)
    assert rows is not None and list(rows["source"]) == [RUN]
    r = rows.iloc[0]
    n = len(SAMPLE_ITEMS)
    # current judging = judge-two: critiques only assisted answers of normal problems
    normal = sum(1 for x in SAMPLE_ITEMS if x["difficulty"] == "normal")
    assert (r["n"], r["b"], r["c"]) == (n, 0, normal)
    assert r["p_value"] == pytest.approx(mcnemar([[0, 0], [normal, n - normal]], exact=True).pvalue)


# -- pages ------------------------------------------------------------------------------------


def test_results_page_shows_published_and_run_heatmaps_and_a_drill_down(db):
    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page("pages/pcbench_results.py")
    at.query_params["pc_model"] = "gpt-4o"
    at.query_params["pc_item"] = "s-cpi-1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    overview = at.dataframe[0].value.set_index("model")
    assert overview.loc["gpt-4o", "proactive_rate"] == pytest.approx(round(100 * 132 / 1200, 1))
    assert overview.loc["gpt-4o", "assisted_rate"] == pytest.approx(round(100 * 689 / 1200, 1))
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    titles = [c["layout"]["title"]["text"] for c in charts]
    assert "gpt-4o — proactive: critique rate" in titles
    assert "Every model — proactive: critique rate by error type (all difficulties)" in titles
    assert f"{RUN} — proactive: critique rate" in titles
    codes = [c.value for c in at.code]
    assert "ANSWER s-cpi-1 proactive with more words" in codes
    assert "ANSWER s-cpi-1 assisted" + " with more words" * 3 in codes
    assert "basis s-cpi-1 assisted" in codes  # the judge's basis, as text
    assert any("critiques the premise" in c.value for c in at.caption)
    # the variant is a URL filter
    at.radio(key="w_pc_variant").set_value("assisted").run()
    assert not at.exception
    assert at.query_params["pc_variant"] in ("assisted", ["assisted"])
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert f"{RUN} — assisted: critique rate" in titles


def test_proactive_passive_page_shows_pcbench_published_both_ways_and_the_paired_run(db):
    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page("pages/proactive_passive.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    wide = at.dataframe[0].value.set_index("model")  # shown as text, "–" blank (issue 31)
    wide = wide.apply(lambda col: pd.to_numeric(col.replace("–", None)) if col.name else col)
    pro = f"{pcc.LABELS['proactive']} [published]"
    ass = f"{pcc.LABELS['assisted']} [published]"
    assert wide.loc["gpt-4o", pro] == pytest.approx(11.0)
    assert wide.loc["o4-mini-medium", ass] == pytest.approx(100 * 891 / 1200, abs=0.05)
    assert (wide[ass].dropna() > wide[pro].dropna()).all()
    assert f"{pcc.LABELS['assisted']} [runs]" in wide.columns
    paired = [d.value for d in at.dataframe if "b" in d.value.columns]
    assert paired and list(paired[0]["source"]) == [RUN]
    assert any("PCBench asks every problem both ways" in c.value for c in at.caption)
    notes = " ".join(i.value for i in at.info)
    assert "gpt-4o" in notes  # a name with values on both sides


def test_a_user_starts_a_pcbench_run_from_the_runs_page(initialised_store):
    """The registry's run form: the sample is there after `init`, both variants by default."""
    import time

    from core.services import jobs
    from tests.fake_openai import FakeProcess

    store = initialised_store
    with FakeProcess({"latency": 0.01}) as server:
        at = AppTest.from_file(APP, default_timeout=60)
        at.switch_page("pages/runs.py")
        at.run()
        at.radio(key="start_bench").set_value("pcbench").run()
        assert at.selectbox(key="start_items").value == "pcbench-sample"
        at.selectbox(key="start_endpoint").set_value("Custom base URL…").run()
        at.text_input(key="start_base_url").input(server.url).run()
        at.text_input(key="start_model").input("fake-model").run()
        at.number_input(key="start_limit").set_value(4).run()
        at.text_input(key="start_run_name").input("pc-from-page").run()
        command = at.code[-1].value
        assert command.startswith("python -m core run pcbench --items pcbench-sample")
        assert "--variants proactive,assisted" in command
        at.button(key="start_button").click().run()
        assert not at.exception, at.exception
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            progress = jobs.run_progress(store, "pc-from-page")
            if progress and progress["status"] != "running":
                break
            time.sleep(0.3)
        assert progress["status"] == "done", jobs.read_log(store.path, "pc-from-page")
    table = pcm.run_metrics(store, "pc-from-page")
    overall = table[(table["error_type"] == "all") & (table["difficulty"] == "all")]
    # the fake judge answers the schema's first enum value, "True": every answer critiqued
    assert list(overall["n"]) == [4, 4] and list(overall["rate"]) == [100.0, 100.0]


@pytest.mark.parametrize(
    "page,params",
    [
        ("pages/overview.py", {}),
        ("pages/grid.py", {"g_bench": "pcbench", "g_set": SET, "g_runs": RUN}),
        ("pages/runs.py", {}),
        ("pages/import_data.py", {}),
        ("pages/judge_audit.py", {}),
        ("pages/compare.py", {}),
    ],
)
def test_the_shared_pages_render_its_run(db, page, params):
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, (page, [e.value for e in at.exception])
    if page == "pages/grid.py":
        grid = next(df.value for df in at.dataframe if "disagreements" in df.value.columns)
        assert len(grid) == len(SAMPLE_ITEMS)
        cells = " ".join(str(v) for v in grid.to_numpy().ravel())
        assert "ANSWER s-cpi-1 assisted" in cells


def test_export_has_the_critique_label_and_the_judges_basis(db, tmp_path):
    out = tmp_path / "pc.csv"
    ok(run_core("export", "--source", RUN, "--judging", "default", "--out", str(out),
                "--db", str(db)))  # fmt: skip
    frame = pd.read_csv(out)
    assert {"critique", "critique_rationale", "variant", "response"} <= set(frame.columns)
    assert len(frame) == 2 * len(SAMPLE_ITEMS)
    for row in frame.itertuples():
        assert bool(row.critique) == says("judge-one", str(row.item_id), str(row.variant))
        assert row.critique_rationale == f"basis {row.item_id} {row.variant}"


def test_results_page_reads_the_judging_named_in_the_url(db):
    def overall(at: AppTest) -> pd.DataFrame:
        return next(d.value for d in at.dataframe if "critiqued" in d.value.columns)

    at = AppTest.from_file(APP, default_timeout=90)
    at.switch_page("pages/pcbench_results.py")
    at.run()
    assert not at.exception
    assert set(overall(at)["judging"]) == {"second"}  # the current one: the latest finished
    at.selectbox(key="w_pc_judging").set_value("default").run()
    assert not at.exception
    table = overall(at).set_index("variant")
    assert set(table["judging"]) == {"default"}
    counts = hand_rates("judge-one")
    assert table.loc["proactive", "critiqued"] == counts[("proactive", "all", "all")][1]
    assert at.query_params["pc_judging"] in ("default", ["default"])
