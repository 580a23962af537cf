"""Judge template v2 (C.1 definitions, consistent control wording), v1 still selectable, and the
template id recorded with every run; F1 per label of the same scripted run under both."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from sklearn.metrics import f1_score

from core.benchmarks.misprompt import items as mi
from core.benchmarks.misprompt import metrics, prompts
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.engine.endpoints import Endpoint
from core.services import playground as pg
from tests.core_cli import run_core, run_misprompt
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "misprompt_sample.csv"
ITEM = {
    "item_id": "S1",
    "prompt": "Who invented the telephone, Marie Curie?",
    "is_error": True,
    "primary_category": "Factual Errors",
    "secondary_category": "Entity Error",
    "explanation": "Bell, not Curie, invented it.",
    "gold": "Alexander Graham Bell.",
}
CONTROL = {
    "item_id": "C1",
    "prompt": "What is the capital of Australia?",
    "is_error": False,
    "gold": "Canberra.",
}
V2_IDENT = "BOTH the right error category AND the right"  # system, v2 only
V2_ITEM_IDENT = "right error category (the kind of error given above"  # user_error, v2
V2_GUIDANCE = "how to avoid similar errors in future"
V2_CONTROL_IDENT = "this is true whenever it points to a specific supposed error"
V1_CONTROL_IDENT = "which should not happen here"


def _flat(text: str) -> str:
    """Whitespace-normalised text (the templates wrap lines)."""
    return " ".join(text.split())


# -- the template -----------------------------------------------------------------------------


@pytest.mark.parametrize("short", ["judge.v1", "v1", "1"])
def test_a_short_judge_template_is_refused_naming_the_full_ids(store, short: str) -> None:
    """One spelling: the `run misprompt` flag and the code behind the run form refuse
    anything but the full id, in one line that names the valid ids."""
    with pytest.raises(prompts.TemplateError, match="valid ids: misprompt/judge.v1, misprompt/"):
        prompts.judge_template_id(short)
    done = run_misprompt(store.path, "http://127.0.0.1:9", "--judge-template", short)
    assert done.returncode == 2 and "misprompt/judge.v1" in done.stderr
    assert store.scalar("SELECT count(*) FROM runs") == 0


def test_default_is_v2_and_v1_stays_selectable() -> None:
    assert prompts.judge_templates()[:2] == ["misprompt/judge.v1", "misprompt/judge.v2"]
    assert prompts.DEFAULT_JUDGE_TEMPLATE == "misprompt/judge.v2"
    assert prompts.judge_template_id() == "misprompt/judge.v2"
    assert prompts.judge_template_id("misprompt/judge.v1") == "misprompt/judge.v1"
    assert prompts.judge_version("misprompt/judge.v1") == 1 and prompts.judge_version(2) == 2
    for bad in ("misprompt/judge.v9", "zero-shot.v1", "v2"):
        with pytest.raises(prompts.TemplateError, match="judge template"):
            prompts.judge_version(bad)


def test_v2_renders_the_c1_definitions_for_an_erroneous_item() -> None:
    system, user = prompts.judge_messages(ITEM, "It was Bell, not Curie.", "misprompt/judge.v2")
    system, user = {"content": _flat(system["content"])}, {"content": _flat(user["content"])}
    text = system["content"] + user["content"]
    assert not re.search(r"\{\{\s*\w+\s*\}\}", text)  # every placeholder filled
    assert V2_IDENT in system["content"] and "location of the error" in system["content"]
    assert V2_ITEM_IDENT in user["content"] and "AND the right location" in user["content"]
    assert V2_GUIDANCE in system["content"] + user["content"]
    assert "Factual Errors / Entity Error" in user["content"]
    assert str(ITEM["prompt"]) in user["content"] and "It was Bell, not Curie." in user["content"]
    assert "contains NO error" not in user["content"]
    v1_system, v1_user = prompts.judge_messages(ITEM, "x", "misprompt/judge.v1")
    assert V2_IDENT not in _flat(v1_system["content"] + v1_user["content"])


def test_v2_control_wording_reads_both_accurate_labels_alike() -> None:
    _system, user = prompts.judge_messages(CONTROL, "Canberra.", "misprompt/judge.v2")
    text = _flat(user["content"])
    assert (
        not re.search(r"\{\{\s*\w+\s*\}\}", text)
        and "contains NO error" in text
        and "Canberra." in text
    )
    assert V2_CONTROL_IDENT in text
    assert "true whenever it gives such a correction" in text
    assert V1_CONTROL_IDENT not in text and "Error category:" not in text
    _s1, v1_user = prompts.judge_messages(CONTROL, "Canberra.", "misprompt/judge.v1")
    assert V1_CONTROL_IDENT in _flat(v1_user["content"])  # v1 unchanged (a change is a new file)
    assert prompts.repair_message("misprompt/judge.v1") == prompts.repair_message(
        "misprompt/judge.v2"
    )


# -- a scripted run under v1 and under v2 -----------------------------------------------------


def _rows() -> list[dict]:
    with open(SAMPLE, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    errors = [r for r in rows if r["error"] == "error"][::4][:10]
    controls = [r for r in rows if r["error"] == "no_error"][:8]
    return errors + controls


def _between(pattern: str, text: str) -> str:
    """The first group of `pattern` in a judge prompt (a failed test when it is not there)."""
    found = re.search(pattern, text, re.S)
    assert found is not None, text
    return found.group(1)


def _model_answer(row: dict) -> str:
    """Erroneous items: every answer locates the error; every other one names its category; every
    third says how to avoid it in future; all suggest rephrasing. Controls: every second one
    invents an error and 'corrects' it."""
    k = int(row["id"][1:])
    if row["error"] == "error":
        return (
            "ERR-LOC: this part of your question is wrong."
            + (" CATEGORY named." if (k // 4) % 2 == 0 else "")
            + " Please rephrase."
            + (" In future check such facts." if k % 3 == 0 else "")
        )
    if k % 2 == 0:
        return "There is an error here; the corrected question is ... Please rephrase."
    return "Plain answer."


class WordingJudge:
    """A scripted judge that labels by the template's wording: what each definition asks."""

    def __init__(self, rows: list[dict]) -> None:
        self.by_question = {r["question"]: r for r in rows}

    def respond(self, body: dict) -> str:
        messages = body["messages"]
        text = "\n".join(m["content"] for m in messages)
        if not body.get("response_format"):
            last = messages[-1]["content"]
            return _model_answer(self.by_question[last])
        v2 = V2_IDENT in _flat(messages[0]["content"])
        question = _between(r"Question asked by the user:\n<<<\n(.*?)\n>>>", text)
        answer = _between(r"Assistant's response to judge:\n<<<\n(.*?)\n>>>", text)
        row = self.by_question[question]
        if row["error"] == "error":
            located = "ERR-LOC" in answer
            labels = {
                "detection": located,
                "identification_attempt": located,
                "identification_accurate": located and ("CATEGORY" in answer or not v2),
                "correction_attempt": located,
                "correction_accurate": located,
                "guidance": ("In future" in answer) if v2 else ("rephrase" in answer),
            }
        else:
            claims = "error" in answer
            labels = {
                "detection": claims,
                "identification_attempt": claims,
                # v1: "accurate only if really wrong, which should not happen here"
                "identification_accurate": claims and v2,
                "correction_attempt": claims,
                "correction_accurate": claims,
                "guidance": claims and (("In future" in answer) if v2 else ("rephrase" in answer)),
            }
        return json.dumps({k: {"rationale": k, "value": v} for k, v in labels.items()})


def test_runs_record_their_template_and_send_its_definitions(store) -> None:
    rows = _rows()
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    mi.import_bytes(store, out.getvalue().encode(), "judge-v.csv", "jv")
    judge = WordingJudge(rows)
    sent: dict[str, list[dict]] = {}
    for run, flags in (("jv1", ["--judge-template", "misprompt/judge.v1"]), ("jv2", [])):
        with FakeOpenAI(responder=judge.respond) as server:
            done = run_misprompt(store.path, server.url, "--items", "jv", "--run-name", run, *flags)
            assert done.returncode == 0, done.stderr
            sent[run] = [
                r["body"] for r in server.chat_requests if r["body"].get("response_format")
            ]
    params = {
        r: json.loads(store.scalar("SELECT params FROM runs WHERE run_id = ?", [r]))
        for r in ("jv1", "jv2")
    }
    assert params["jv1"]["judge_template"] == "misprompt/judge.v1"
    assert params["jv2"]["judge_template"] == "misprompt/judge.v2"  # the default
    # the judge messages carry the template's own definitions
    v2_text = [_flat("\n".join(m["content"] for m in b["messages"])) for b in sent["jv2"]]
    v1_text = [_flat("\n".join(m["content"] for m in b["messages"])) for b in sent["jv1"]]
    assert len(v2_text) == len(rows) and len(v1_text) == len(rows)
    assert all(V2_IDENT in t and V2_GUIDANCE in t for t in v2_text)
    assert sum(V2_CONTROL_IDENT in t for t in v2_text) == 8
    assert not any(V2_IDENT in t for t in v1_text)
    assert sum(V1_CONTROL_IDENT in t for t in v1_text) == 8

    # F1 per label of both, against sklearn on the stored verdicts
    table = metrics.run_metrics(store, ["jv1", "jv2"], ci=False)
    overall = table[(table["evaluator"] == "judge") & (table["category_level"] == "all")]
    verdicts = store.df(
        "SELECT v.run_id, i.is_error, "
        + ", ".join(f"v.{l}" for l in JUDGE_LABELS)
        + " FROM misprompt_verdicts v JOIN items i ON i.item_set = 'jv' AND "
        "i.item_id = v.item_id WHERE v.status = 'ok'"
    )
    f1: dict[str, dict[str, float]] = {}
    for run in ("jv1", "jv2"):
        mine = verdicts[verdicts["run_id"] == run]
        assert len(mine) == len(rows)
        f1[run] = {}
        for label in JUDGE_LABELS:
            expected = 100 * f1_score(mine["is_error"].astype(bool), mine[label].astype(bool))
            got = overall[(overall["source"] == run) & (overall["metric"] == label)]["f1"]
            assert float(got.iloc[0]) == pytest.approx(expected), (run, label)
            f1[run][label] = expected
    print("F1 per label, v1:", {k: round(v, 2) for k, v in f1["jv1"].items()})
    print("F1 per label, v2:", {k: round(v, 2) for k, v in f1["jv2"].items()})
    # what the wording changes: v1's identification_accurate never has a control FP
    # (so it scores above v2 there), guidance follows the C.1 definition under v2
    ctrl = verdicts[(verdicts["run_id"] == "jv1") & ~verdicts["is_error"].astype(bool)]
    assert not ctrl["identification_accurate"].any()
    ctrl2 = verdicts[(verdicts["run_id"] == "jv2") & ~verdicts["is_error"].astype(bool)]
    assert (ctrl2["identification_accurate"] == ctrl2["correction_accurate"]).all()
    assert ctrl2["identification_accurate"].sum() == 4
    assert f1["jv1"]["detection"] == f1["jv2"]["detection"]
    assert f1["jv1"]["identification_accurate"] > f1["jv2"]["identification_accurate"]


def test_playground_exchange_uses_and_records_the_chosen_template(store) -> None:
    with FakeOpenAI() as server:
        ep = Endpoint("fake", (server.url,), "fake-model")
        exchange = pg.run_exchange(ITEM, "zero-shot", ep, ep, judge_template="misprompt/judge.v1")
        judge_bodies = [r["body"] for r in server.chat_requests if r["body"].get("response_format")]
    assert (
        exchange.judge_template == "misprompt/judge.v1"
        and "judge misprompt/judge.v1" in exchange.template_id
    )
    assert judge_bodies and all(
        V2_IDENT not in _flat(b["messages"][0]["content"]) for b in judge_bodies
    )
    pg.save_exchange(store, exchange)
    params = json.loads(store.scalar("SELECT params FROM runs WHERE run_id = ?", [exchange.run_id]))
    assert params["judge_template"] == "misprompt/judge.v1"
    back = pg.load_exchange(store, exchange.run_id)
    assert back is not None and back.judge_template == "misprompt/judge.v1"
    with FakeOpenAI() as server:
        ep = Endpoint("fake", (server.url,), "fake-model")
        default = pg.run_exchange(ITEM, "zero-shot", ep, ep)
        bodies = [r["body"] for r in server.chat_requests if r["body"].get("response_format")]
    assert default.judge_template == "misprompt/judge.v2"
    assert bodies and all(V2_IDENT in _flat(b["messages"][0]["content"]) for b in bodies)


# -- the app: template select boxes, planned composition, no-controls warning -----------------


def _open(page: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_runs_form_template_sample_and_no_controls_warning(initialised_store) -> None:
    store = initialised_store
    at = _open("pages/runs.py")
    at.radio(key="start_bench").set_value("misprompt").run()
    box = at.selectbox(key="start_judge_template")
    assert box.value == "misprompt/judge.v2" and list(box.options) == prompts.judge_templates()
    assert "--judge-template misprompt/judge.v2" in at.code[-1].value
    box.set_value("misprompt/judge.v1").run()
    at.number_input(key="start_limit").set_value(10).run()
    at.number_input(key="start_sample_seed").set_value(4).run()
    command = at.code[-1].value
    assert "--judge-template misprompt/judge.v1" in command
    assert "--limit 10 --sample-seed 4" in command
    caption = next(c.value for c in at.caption if c.value.startswith("Items this run will ask"))
    items = store.df(
        "SELECT * EXCLUDE (item_set) FROM items WHERE item_set = 'misprompt-sample' ORDER BY rowid"
    )
    from core.engine.sampling import plan_sample

    _s, plan = plan_sample(items, "misprompt", 10, 4)
    assert caption == "Items this run will ask: " + ", ".join(
        f"{k} {v}" for k, v in plan.counts.items()
    )
    assert not any("No control" in w.value for w in at.warning)
    # a set without controls: the form warns before the run starts
    rows = _rows()[:5]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    mi.import_bytes(store, out.getvalue().encode(), "e.csv", "errors-only")
    import streamlit as st

    st.cache_data.clear()
    at = _open("pages/runs.py")
    at.radio(key="start_bench").set_value("misprompt").run()
    at.selectbox(key="start_items").set_value("errors-only").run()
    warnings = [w.value for w in at.warning]
    assert any("No control (error-free) items" in w and "recall" in w for w in warnings)


def test_runs_list_shows_the_judge_template(store) -> None:
    store.execute(
        "INSERT INTO runs (run_id, benchmark, status, n_planned, model, setting, "
        "params) VALUES ('mp-t', 'misprompt', 'done', 1, 'm', 'cot', ?)",
        [json.dumps({"judge_template": "misprompt/judge.v1"})],
    )
    at = _open("pages/runs.py")
    frame = at.dataframe[0].value
    assert frame.set_index("run_id").loc["mp-t", "judge_template"] == "misprompt/judge.v1"


def test_playground_has_the_template_select_box(initialised_store) -> None:
    at = _open("pages/playground.py")
    box = at.selectbox(key="w_pg_judge_template")
    assert box.value == "misprompt/judge.v2" and list(box.options) == prompts.judge_templates()
    box.set_value("misprompt/judge.v1").run()
    assert at.query_params["pg_judge_template"] in ("misprompt/judge.v1", ["misprompt/judge.v1"])


def test_rescore_judges_with_the_template_it_records(store) -> None:
    """`rescore --judge-template misprompt/judge.v1` of a (v2-judged) run sends v1's wording and stores
    misprompt/judge.v1 with the judging; without the flag, the default template (v2)."""
    rows = _rows()[:4] + _rows()[-2:]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    mi.import_bytes(store, out.getvalue().encode(), "r.csv", "rs")
    judge = WordingJudge(rows)
    with FakeOpenAI(responder=judge.respond) as server:
        assert (
            run_misprompt(store.path, server.url, "--items", "rs", "--run-name", "rs1").returncode
            == 0
        )
        sent: dict[str, list[str]] = {}
        for name, flags in (
            ("new", []),
            ("old-wording", ["--judge-template", "misprompt/judge.v1"]),
        ):
            before = len(server.chat_requests)
            done = run_core(
                "rescore", "--db", str(store.path), "--source", "rs1", "--as", name,
                "--judge-base-url", server.url, "--judge-model", "fake-model", "--quiet",
                "--no-cache", *flags,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            sent[name] = [
                _flat("\n".join(m["content"] for m in r["body"]["messages"]))
                for r in server.chat_requests[before:]
            ]
        refused = run_core(
            "rescore", "--db", str(store.path), "--source", "rs1", "--as", "short",
            "--judge-base-url", server.url, "--judge-model", "fake-model", "--quiet",
            "--judge-template", "judge.v1",
        )  # fmt: skip
        assert refused.returncode != 0 and "valid ids: misprompt/judge.v1" in refused.stderr
    templates = dict(store.rows("SELECT judging, template_id FROM judgings WHERE run_id = 'rs1'"))
    assert templates["old-wording"] == "misprompt/judge.v1"
    assert templates["new"] == "misprompt/judge.v2"
    assert len(sent["old-wording"]) == len(rows) and len(sent["new"]) == len(rows)
    assert not any(V2_IDENT in t for t in sent["old-wording"])
    assert sum(V1_CONTROL_IDENT in t for t in sent["old-wording"]) == 2
    assert all(V2_IDENT in t for t in sent["new"])
    # the scripted judge answers by wording: v1's controls never get identification_accurate
    v1 = store.df(
        "SELECT v.identification_accurate, i.is_error FROM misprompt_verdicts v JOIN items i "
        "ON i.item_set = 'rs' AND i.item_id = v.item_id WHERE v.run_id = 'rs1' "
        "AND v.judging = 'old-wording'"
    )
    assert len(v1) == len(rows) and not v1[~v1["is_error"]]["identification_accurate"].any()
    # the numbers shown are the latest judging's (v1 here): so is the label
    from core.benchmarks.misprompt import queries
    from core.services import compare

    runs = queries.misprompt_runs(store).set_index("run_id")
    assert (
        runs.loc["rs1", "row_label"]
        == "rs1 · fake-model (judge fake-model, misprompt/judge.v1, proactive, judging old-wording)"
    )
    assert runs.loc["rs1", "judging"] == "old-wording"
    long = compare.long_table(store)
    assert set(long[long["source"] == "rs1"]["judge"]) == {"fake-model (misprompt/judge.v1)"}
