"""`run errorbench` end to end on the scripted server, with every metric computed by hand.

The scripted model is perfectly "anchorable": told a count M it lists M errors; blind it lists
one error but claims a total of 2; hinted it lists two and gives no TOTAL line. What it lists
is a fixed script per passage (below), so every count and span number follows by hand.
"""

from __future__ import annotations

import io
import json
import re

import pandas as pd
import pytest

from core.cli import main as _cli
from tests.fake_openai import FakeOpenAI
from tests.item_subsets import first_items


def cli(argv: list[str]) -> int:
    """The CLI in a fresh thread: `run` uses asyncio.run, which refuses to start inside a
    running event loop (Playwright's sync API leaves one in the main thread after a browser
    test in the same session)."""
    import threading

    out: list = []

    def call() -> None:
        try:
            out.append(_cli(argv))
        except SystemExit as exc:  # argparse refusing a flag value
            out.append(int(exc.code or 0))

    worker = threading.Thread(target=call)
    worker.start()
    worker.join(300)
    return out[0]


# The first two passages of data/samples/errorbench_sample.m2 (file order):
# p0000 (N = 3): gold (1,2,3 believe) (1,9,11 easier) (3,9,10 games)
# p0001 (N = 4): gold (0,6,8 should) (1,6,7 trees) (2,1,2 causes) (3,3,4 immediately)
SCRIPT = {
    "Nowadays": [
        '"believes" -> "believe"',  # TP everywhere
        "“more easy” → “easier”",  # TP everywhere
        '"technology" should be "the technology"',  # located in a sentence with no gold: FP
        '"game" -> "games"',  # TP everywhere
        '"Nowadays ," -> "Nowadays"',  # FP
    ],
    "In": [
        '"tree" -> "trees"',  # TP everywhere
        '"should to" -> "should"',  # TP everywhere
        '"cause a" -> "causes a"',  # (2,1,3): overlap only
        '"imediately" -> "immedietly"',  # right span, wrong correction
        "Missing comma somewhere",  # unlocated: FP everywhere
        '"cause" -> "causes"',  # (2,1,2) exact
    ],
}


def responder(body: dict) -> str:
    user = body["messages"][-1]["content"]
    passage = user.split("Passage:\n", 1)[1]
    # other passages (a stratified --limit sample) get one generic line
    lines = SCRIPT.get(passage.split()[0], ['"a" -> "an"'])
    stated = re.search(r"contains exactly (\d+) error", user)
    if stated:
        m = int(stated.group(1))
        listed = lines[:m] + [f"Another problem number {k}" for k in range(len(lines) + 1, m + 1)]
        total = f"TOTAL ERRORS FOUND: {m}"
    elif "contains errors" in user:
        listed, total = lines[:2], ""
    else:
        listed, total = lines[:1], "TOTAL ERRORS FOUND: 2"
    body_lines = [f"ERROR {k}: {text}" for k, text in enumerate(listed, start=1)]
    return "\n".join(body_lines + ([total] if total else []))


def f05(p: float, r: float) -> float:
    return 1.25 * p * r / (0.25 * p + r) if p + r else 0.0


def f05_counts(tp: int, fp: int, fn: int) -> float:
    return f05(tp / (tp + fp) if tp + fp else 1.0, tp / (tp + fn) if tp + fn else 1.0)


def f1_counts(tp: int, fp: int, fn: int) -> float:
    return 2 * tp / (2 * tp + fp + fn)


# Per condition, by hand: (count TP, FP, FN), strict, detection, overlap (TP, FP, FN) summed over
# the two passages; CB per passage; ASI per passage.
EXPECTED = {
    #              count        strict      detection   overlap     CB        ASI
    "blind": ((4, 0, 3), (2, 0, 5), (2, 0, 5), (2, 0, 5), (-1, -2), (0, 0)),
    "hinted": ((4, 0, 3), (4, 0, 3), (4, 0, 3), (4, 0, 3), (-1, -2), (0, 0)),
    "anchored": ((7, 0, 0), (4, 3, 3), (5, 2, 2), (6, 1, 1), (0, 0), (1 / 3, 2 / 4)),
    "mislead_high": ((7, 4, 0), (6, 5, 1), (7, 4, 0), (7, 4, 0), (2, 2), (3 / 3, 4 / 4)),
    "mislead_low": ((3, 0, 4), (3, 0, 4), (3, 0, 4), (3, 0, 4), (-2, -2), (1 / 3, 0 / 4)),
}


@pytest.fixture
def finished_run(initialised_store):
    store = initialised_store
    with FakeOpenAI(responder=responder) as server:
        rc = cli(
            [
                "run",
                "errorbench",
                "--items",
                first_items(store, "errorbench-sample", 2),
                "--base-url",
                server.url,
                "--model",
                "scripted",
                "--run-name",
                "eb-e2e",
                "--quiet",
            ]
        )
        requests = server.chat_requests
    assert rc == 0
    return initialised_store, requests


def test_requests_follow_the_protocol(finished_run):
    store, requests = finished_run
    assert len(requests) == 2 * 5
    systems = {r["body"]["messages"][0]["content"] for r in requests}
    assert len(systems) == 1 and "TOTAL ERRORS FOUND" in systems.pop()
    for r in requests:
        assert r["body"]["temperature"] == 0 and r["body"]["max_tokens"] == 800
    users = [r["body"]["messages"][-1]["content"] for r in requests]
    stated = sorted(int(m.group(1)) for u in users if (m := re.search(r"exactly (\d+) error", u)))
    # anchored 3, 4; mislead_high 5, 6; mislead_low max(1, N-2) = 1, 2
    assert stated == [1, 2, 3, 4, 5, 6]
    run = store.df("SELECT * FROM runs WHERE run_id = 'eb-e2e'").iloc[0]
    assert run["benchmark"] == "errorbench" and run["template_id"] == "errorbench/quoted.v1"
    assert run["status"] == "done" and run["n_planned"] == 10


def test_scores_are_stored_per_response(finished_run):
    store, _ = finished_run
    rows = store.df("SELECT item_id, variant, scores FROM responses WHERE run_id = 'eb-e2e'")
    scores = {(r.item_id, r.variant): json.loads(r.scores) for r in rows.itertuples()}
    blind = scores[("p0000", "blind")]
    assert (blind["reported"], blind["how"], blind["disagree"]) == (2, "total", True)
    hinted = scores[("p0001", "hinted")]
    assert (hinted["reported"], hinted["how"], hinted["total_line"]) == (2, "error_lines", None)
    high = scores[("p0001", "mislead_high")]
    assert [e["located"] for e in high["edits"]] == [True, True, True, True, False, True]
    assert high["edits"][3]["match"]["strict"] is None
    assert high["edits"][3]["match"]["detection"] == [3, 3, 4, "immediately"]
    third = high["edits"][2]
    assert (third["sentence"], third["start"], third["end"]) == (2, 1, 3)
    assert third["match"]["detection"] is None
    # line 3 and line 6 both overlap gold (2,1,2); one-to-one gives it to exactly one of them
    assert [third["match"]["overlap"], high["edits"][5]["match"]["overlap"]].count(
        [2, 1, 2, "causes"]
    ) == 1


def test_metrics_by_hand(finished_run, capsys):
    capsys.readouterr()
    assert cli(["metrics", "errorbench", "--source", "eb-e2e", "--no-errant"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    # mode: ErrorBench asks the model to find the errors (passive), as `metrics misprompt` says
    assert set(table["mode"]) == {"passive"}
    assert list(table.columns) == [
        "model",
        "mode",
        "condition",
        "passages",
        "count_f1",
        "strict_f05",
        "detection_f05",
        "overlap_f05",
        "inflation",
        "mean_count_bias",
        "mean_asi",
        "unparsed",
        "n",
        "ci_of",
        "ci_low",
        "ci_high",
        "judging",
    ]
    # issue 18: n passages, the interval of overlap F0.5 (the default --ci-of), the judging
    assert set(table["n"]) == {2} and set(table["ci_of"]) == {"overlap_f05"}
    assert (table["ci_low"] <= table["overlap_f05"] + 1e-12).all()
    assert (table["overlap_f05"] <= table["ci_high"] + 1e-12).all()
    assert set(table["judging"]) == {"default (errorbench/quoted.v1)"}
    assert list(table["condition"]) == list(EXPECTED)
    for row in table.itertuples():
        count, strict, detection, overlap, cb, asi = EXPECTED[str(row.condition)]
        assert row.model == "scripted" and row.passages == 2 and row.unparsed == 0
        assert row.count_f1 == pytest.approx(f1_counts(*count))
        assert row.strict_f05 == pytest.approx(f05_counts(*strict))
        assert row.detection_f05 == pytest.approx(f05_counts(*detection))
        assert row.overlap_f05 == pytest.approx(f05_counts(*overlap))
        assert row.inflation == pytest.approx(f1_counts(*count) - f05_counts(*overlap))
        assert row.mean_count_bias == pytest.approx(sum(cb) / 2)
        assert row.mean_asi == pytest.approx(sum(asi) / 2)
    # spot checks in closed form: anchored Count-F1 1, overlap 6/7; blind 8/11 and 2/3
    anchored = table.set_index("condition").loc["anchored"]
    assert anchored["count_f1"] == pytest.approx(1.0)
    assert anchored["overlap_f05"] == pytest.approx(6 / 7)
    blind = table.set_index("condition").loc["blind"]
    assert (blind["count_f1"], blind["overlap_f05"]) == (
        pytest.approx(8 / 11),
        pytest.approx(2 / 3),
    )


def test_metrics_json_and_bootstrap(finished_run, capsys):
    capsys.readouterr()
    assert (
        cli(
            [
                "metrics",
                "errorbench",
                "--source",
                "eb-e2e",
                "--bootstrap",
                "--draws",
                "500",
                "--format",
                "json",
            ]
        )
        == 0
    )
    (row,) = json.loads(capsys.readouterr().out)
    assert row["model"] == "scripted" and row["passages"] == 2
    assert row["delta_count_f1"] == pytest.approx(1 - 8 / 11)
    assert row["delta_overlap_f05"] == pytest.approx(6 / 7 - 2 / 3)
    assert row["difference"] == pytest.approx((1 - 8 / 11) - (6 / 7 - 2 / 3))
    assert row["ci_low"] <= row["difference"] + 1e-9 and row["ci_high"] >= row["ci_low"]


def test_metrics_with_errant(finished_run, capsys):
    from core.benchmarks.errorbench.errant_scoring import available

    assert available(), "errant and its spaCy model are test dependencies (requirements-dev.txt)"
    capsys.readouterr()
    assert cli(["metrics", "errorbench", "--source", "eb-e2e"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table.columns)[-6:] == ["errant_f05", "n", "ci_of", "ci_low", "ci_high", "judging"]
    # hinted lists only gold-correct edits: ERRANT P = 1, R = 4/7 → F0.5 = 20/23
    hinted = table.set_index("condition").loc["hinted"]
    assert hinted["errant_f05"] == pytest.approx(f05(1.0, 4 / 7), abs=1e-4)


def test_resume_asks_nothing_again_and_unknown_source(finished_run, capsys):
    store, _ = finished_run
    stored_url = json.loads(store.scalar("SELECT params FROM runs WHERE run_id = 'eb-e2e'"))[
        "endpoint"
    ]["base_urls"][0]  # a resume must use the same endpoint URL
    with FakeOpenAI(
        responder=responder, port=int(stored_url.split(":")[-1].split("/")[0])
    ) as server:
        rc = cli(
            [
                "run",
                "errorbench",
                "--items",
                first_items(store, "errorbench-sample", 2),
                "--base-url",
                server.url,
                "--model",
                "scripted",
                "--run-name",
                "eb-e2e",
                "--quiet",
            ]
        )
        assert rc == 0 and server.chat_requests == []
    capsys.readouterr()
    assert cli(["metrics", "errorbench", "--source", "nope"]) == 2
    assert "no ErrorBench run nope" in capsys.readouterr().err


def test_failed_calls_are_left_out_and_retried(initialised_store, capsys):
    store = initialised_store

    def fault(body):
        if "exactly 6 errors" in body["messages"][-1]["content"]:
            return {"status": 400, "message": "scripted refusal"}
        return None

    with FakeOpenAI(responder=responder, fault_fn=fault) as server:
        rc = cli(
            [
                "run",
                "errorbench",
                "--items",
                first_items(store, "errorbench-sample", 2),
                "--conditions",
                "blind,mislead_high",
                "--base-url",
                server.url,
                "--model",
                "scripted",
                "--run-name",
                "eb-fail",
                "--quiet",
            ]
        )
        port = server.port  # a resume must use the same endpoint URL
    assert rc == 1
    capsys.readouterr()
    assert cli(["metrics", "errorbench", "--source", "eb-fail", "--no-errant"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("condition")
    assert list(table.index) == ["blind", "mislead_high"]
    assert table.loc["mislead_high", "passages"] == 1  # p0001's call failed
    assert table.loc["mislead_high", "count_f1"] == pytest.approx(f1_counts(3, 2, 0))
    with FakeOpenAI(responder=responder, port=port) as server:
        rc = cli(
            [
                "run",
                "errorbench",
                "--items",
                first_items(store, "errorbench-sample", 2),
                "--conditions",
                "blind,mislead_high",
                "--base-url",
                server.url,
                "--model",
                "scripted",
                "--run-name",
                "eb-fail",
                "--quiet",
                "--no-cache",
            ]
        )
        assert rc == 0 and len(server.chat_requests) == 1


def test_unknown_condition_and_set(initialised_store, capsys):
    assert (
        cli(
            [
                "run",
                "errorbench",
                "--items",
                "errorbench-sample",
                "--conditions",
                "loud",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "x",
            ]
        )
        == 2
    )
    assert "unknown condition(s) loud" in capsys.readouterr().err
    assert (
        cli(
            [
                "run",
                "errorbench",
                "--items",
                "misprompt-sample",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "x",
            ]
        )
        == 2
    )
    assert "is not an ErrorBench set" in capsys.readouterr().err


def test_export_carries_condition_count_and_edits(finished_run, tmp_path):
    out = tmp_path / "eb.jsonl"
    assert cli(["export", "--source", "eb-e2e", "--format", "jsonl", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 10
    row = next(r for r in rows if r["item_id"] == "p0001" and r["variant"] == "anchored")
    text = json.dumps(row)
    assert "reported" in text and "immedietly" in text and '"located"' in text


def test_free_description_template_is_selectable(initialised_store):
    """`--template errorbench/free.v1`: its own system prompt (free ERROR descriptions), the same
    user prompts, and its id stored with the run and in every response's scores."""
    from core.engine.templates import load

    free = load("errorbench/free.v1")
    with FakeOpenAI(responder=responder) as server:
        rc = cli(
            [
                "run",
                "errorbench",
                "--items",
                "errorbench-sample",
                "--limit",
                "1",
                "--conditions",
                "blind,anchored",
                "--template",
                "errorbench/free.v1",
                "--base-url",
                server.url,
                "--model",
                "scripted",
                "--run-name",
                "eb-free",
                "--quiet",
            ]
        )
        requests = server.chat_requests
    assert rc == 0 and len(requests) == 2
    systems = {r["body"]["messages"][0]["content"] for r in requests}
    assert systems == {free.sections["system"]}
    assert "ERROR k: <description of the error>" in systems.pop()
    assert not any('"<the wrong words' in r["body"]["messages"][0]["content"] for r in requests)
    store = initialised_store
    assert (
        store.scalar("SELECT template_id FROM runs WHERE run_id = 'eb-free'")
        == "errorbench/free.v1"
    )
    tids = {
        json.loads(s)["template_id"]
        for (s,) in store.rows("SELECT scores FROM responses WHERE run_id = 'eb-free'")
    }
    assert tids == {"errorbench/free.v1"}


@pytest.mark.parametrize("asked", ["errorbench/nope.v1", "quoted.v1", "errorbench-v1"])
def test_unknown_template_is_refused(initialised_store, capsys, asked):
    """Only a full id from the choices: a typo, a short name or the old stored alias
    (`errorbench-v1`, still read from old runs) is refused naming the valid ids."""
    rc = cli(
        [
            "run",
            "errorbench",
            "--items",
            "errorbench-sample",
            "--template",
            asked,
            "--base-url",
            "http://127.0.0.1:9",
            "--model",
            "x",
            "--quiet",
        ],
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert asked in err and "errorbench/quoted.v1" in err and "errorbench/free.v1" in err
    assert initialised_store.scalar("SELECT count(*) FROM runs") == 0


def test_metrics_resample_essays_when_the_item_set_records_them(finished_run, capsys):
    """Passages of one essay are one cluster: with both passages in one essay every bootstrap
    draw is that essay, so each interval is the value itself; without essays, passages."""
    store, _ = finished_run
    capsys.readouterr()
    assert cli(["metrics", "errorbench", "--source", "eb-e2e", "--no-errant"]) == 0
    done = capsys.readouterr()
    assert "over passages (the item set records no essays)" in done.err
    plain = pd.read_csv(io.StringIO(done.out))
    assert (plain["ci_low"] < plain["ci_high"]).any()
    item_set = store.scalar("SELECT item_set FROM runs WHERE run_id = 'eb-e2e'")
    store.execute(
        "UPDATE items SET secondary_category = 'essay-7' WHERE item_set = ? "
        "AND item_id IN (SELECT item_id FROM responses WHERE run_id = 'eb-e2e')",
        [item_set],
    )
    assert (
        cli(["metrics", "errorbench", "--source", "eb-e2e", "--no-errant", "--ci-of", "count_f1"])
        == 0
    )
    done = capsys.readouterr()
    assert "over essays" in done.err
    one = pd.read_csv(io.StringIO(done.out))
    assert set(one["ci_of"]) == {"count_f1"}
    assert list(one["ci_low"]) == pytest.approx(list(one["count_f1"]))
    assert list(one["ci_high"]) == pytest.approx(list(one["count_f1"]))
