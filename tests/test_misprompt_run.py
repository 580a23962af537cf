"""`run misprompt` end to end against the scripted server (and, marked slow, the local SmolLM2)."""

from __future__ import annotations

import csv
import io
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from core.benchmarks.misprompt import items as mi
from core.benchmarks.misprompt import prompts
from core.benchmarks.misprompt.taxonomy import JUDGE_LABELS
from core.services import export
from core.store import Store
from tests.core_cli import run_core, run_misprompt
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "misprompt_sample.csv"


def _subset(n_error: int, n_control: int) -> tuple[bytes, list[dict]]:
    with open(SAMPLE, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    errors = [r for r in rows if r["error"] == "error"]
    controls = [r for r in rows if r["error"] == "no_error"]
    # spread over categories: every 3rd erroneous item
    chosen = errors[::3][:n_error] + controls[:n_control]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(chosen)
    return out.getvalue().encode(), chosen


def _labels_for(row: dict) -> dict[str, bool]:
    """The scripted judge's verdict for an item: a pattern that depends on the item."""
    if row["error"] == "no_error":
        return {k: False for k in JUDGE_LABELS}
    k = int(row["id"][1:])
    return {
        "detection": True,
        "identification_attempt": True,
        "identification_accurate": k % 2 == 0,
        "correction_attempt": k % 3 != 0,
        "correction_accurate": k % 3 == 1,
        "guidance": k % 4 != 0,
    }


class Script:
    """Model replies and judge JSON for the fake server, plus per-item faults."""

    def __init__(
        self,
        rows: list[dict],
        malformed_for: Iterable[str] = frozenset(),
        judge_fail_for: Iterable[str] = frozenset(),
    ) -> None:
        self.by_question = {r["question"]: r for r in rows}
        self.malformed_for = set(malformed_for)
        self.judge_fail_for = set(judge_fail_for)
        self.lock = threading.Lock()
        self.model_calls: dict[str, int] = {}
        self.judge_calls: dict[str, int] = {}
        self.faults_given: dict[tuple[str, str], int] = {}

    def item_of(self, body: dict) -> tuple[str, dict]:
        text = "\n".join(m["content"] for m in body["messages"])
        if body.get("response_format") or "could not be read" in text:
            match = re.search(r"Question asked by the user:\n<<<\n(.*?)\n>>>", text, re.S)
            assert match is not None, text
            return "judge", self.by_question[match.group(1)]
        last = body["messages"][-1]["content"]
        hits = [r for q, r in self.by_question.items() if q in last]
        # few-shot messages hold exemplars too: the item is the question asked last
        hits.sort(key=lambda r: last.rindex(r["question"]))
        return "model", hits[-1]

    def respond(self, body: dict) -> str:
        role, row = self.item_of(body)
        if role == "model":
            with self.lock:
                self.model_calls[row["id"]] = self.model_calls.get(row["id"], 0) + 1
            return f"MODEL ANSWER for {row['id']}"
        with self.lock:
            self.judge_calls[row["id"]] = self.judge_calls.get(row["id"], 0) + 1
        repair = any("could not be read" in m["content"] for m in body["messages"])
        if row["id"] in self.malformed_for and not repair:
            return "I think the answer detects the error. {detection: yes"
        labels = _labels_for(row)
        return (
            "```json\n"
            + json.dumps(
                {k: {"rationale": f"{k} for {row['id']}", "value": v} for k, v in labels.items()}
            )
            + "\n```"
        )

    def fault(self, body: dict) -> dict | None:
        role, row = self.item_of(body)
        key = (role, row["id"])
        with self.lock:
            given = self.faults_given.get(key, 0)
            self.faults_given[key] = given + 1
        if role == "judge" and row["id"] in self.judge_fail_for:
            return {"status": 503}
        if given == 0 and role == "model" and row["id"].endswith("1"):
            return {"status": 429, "retry_after": 0.05}
        if given == 0 and role == "model" and row["id"].endswith("2"):
            return {"malformed": True}
        if given == 0 and role == "judge" and row["id"].endswith("3"):
            return {"status": 500}
        return None


@pytest.fixture
def small_set(store: Store) -> tuple[Store, list[dict]]:
    data, rows = _subset(8, 6)
    mi.import_bytes(store, data, "small.csv", "small")
    return store, rows


def test_run_with_faults_one_response_and_verdict_per_item(small_set) -> None:
    store, rows = small_set
    script = Script(rows, malformed_for={rows[0]["id"], rows[9]["id"]})
    with FakeOpenAI(responder=script.respond, fault_fn=script.fault) as server:
        done = run_misprompt(
            store.path, server.url, "--items", "small", "--run-name", "r1", "--concurrency", "4"
        )
        assert done.returncode == 0, done.stderr + done.stdout
        requests = server.chat_requests
    assert "inconsistent verdicts" in done.stdout
    responses = store.df("SELECT * FROM responses WHERE run_id='r1'")
    verdicts = store.df("SELECT * FROM misprompt_verdicts WHERE run_id='r1'")
    assert len(responses) == len(rows) == responses["item_id"].nunique()
    assert len(verdicts) == len(rows) == verdicts["item_id"].nunique()
    assert (responses["status"] == "ok").all() and (verdicts["status"] == "ok").all()
    assert set(responses["variant"]) == {"zero-shot"}
    by_id = {r["id"]: r for r in rows}
    for v in verdicts.to_dict("records"):
        expected = _labels_for(by_id[v["item_id"]])
        assert {k: v[k] for k in JUDGE_LABELS} == expected, v["item_id"]
        assert v["inconsistent"] == (
            expected["identification_accurate"]
            and not expected["identification_attempt"]
            or expected["correction_accurate"]
            and not expected["correction_attempt"]
        )
        assert json.loads(v["rationales"])["guidance"] == f"guidance for {v['item_id']}"
        repaired = v["item_id"] in script.malformed_for
        assert v["parse_note"] == ("schema+repaired" if repaired else "schema+lenient")
        assert v["judge_model"] == "fake-model"
    # a zero-shot response is the prompt alone
    for r in responses.to_dict("records"):
        assert json.loads(r["messages"]) == [
            {"role": "user", "content": by_id[r["item_id"]]["question"]}
        ]
        assert r["response"] == f"MODEL ANSWER for {r['item_id']}"
    # faults were really served and retried: 429, malformed body, 500 on the judge
    statuses = store.df("SELECT role, http_status, status FROM calls WHERE run_id='r1'")
    assert ((statuses["http_status"] == 429) & (statuses["role"] == "model")).any()
    assert ((statuses["http_status"] == 500) & (statuses["role"] == "judge")).any()
    assert (statuses["status"] == "error").sum() >= 3
    judge_bodies = [r["body"] for r in requests if r["body"].get("response_format")]
    assert judge_bodies and all(b["response_format"]["type"] == "json_schema" for b in judge_bodies)
    run = store.df("SELECT * FROM runs WHERE run_id='r1'").iloc[0]
    assert (run["setting"], run["mode"], run["status"]) == ("zero-shot", "proactive", "done")
    assert run["template_id"] == "misprompt/zero-shot.v1"
    assert run["judge_model"] == "fake-model" and not run["weak_model"]
    assert json.loads(run["params"])["judge_template"] == "misprompt/judge.v2"  # the default


def test_passive_one_shot_and_resume_after_judge_failure(small_set, tmp_path: Path) -> None:
    store, rows = small_set
    stuck = rows[2]["id"]
    script = Script(rows, judge_fail_for={stuck})
    with FakeOpenAI(responder=script.respond, fault_fn=script.fault) as server:
        done = run_misprompt(
            store.path,
            server.url,
            "--items",
            "small",
            "--run-name",
            "p1",
            "--setting",
            "one-shot",
            "--passive",
            "--max-retries",
            "1",
        )
        port = server.port
    assert done.returncode == 1  # one item's judge kept failing
    assert script.faults_given[("judge", stuck)] == 2  # the first try and one retry
    verdicts = store.df("SELECT item_id, status, error FROM misprompt_verdicts WHERE run_id='p1'")
    failed = verdicts[verdicts["status"] != "ok"]
    assert list(failed["item_id"]) == [stuck] and "503" in failed["error"].iloc[0]
    assert store.scalar("SELECT status FROM runs WHERE run_id='p1'") == "failed"

    # resume: only the unfinished item is processed again, afresh (the runner skips the cache
    # for units that failed before), so one model and one judge call for it and nothing else
    script2 = Script(rows)
    with FakeOpenAI(responder=script2.respond, port=port) as server:
        done = run_misprompt(
            store.path,
            server.url,
            "--items",
            "small",
            "--run-name",
            "p1",
            "--setting",
            "one-shot",
            "--passive",
        )
        assert done.returncode == 0, done.stderr
    assert script2.model_calls == {stuck: 1} and script2.judge_calls == {stuck: 1}
    responses = store.df("SELECT * FROM responses WHERE run_id='p1'")
    verdicts = store.df("SELECT * FROM misprompt_verdicts WHERE run_id='p1'")
    assert len(responses) == len(verdicts) == len(rows)
    assert (verdicts["status"] == "ok").all()
    run = store.df("SELECT * FROM runs WHERE run_id='p1'").iloc[0]
    assert (run["setting"], run["mode"], run["status"]) == ("one-shot", "passive", "done")
    assert run["template_id"] == "misprompt/one-shot.v1+passive.v1"
    assert set(responses["variant"]) == {"one-shot"}
    pool = {e.item_id: e for e in prompts.exemplar_pool()}
    for r in responses.to_dict("records"):
        content = json.loads(r["messages"])[0]["content"]
        assert content.startswith("Before answering, check whether the question below")
        question = next(x["question"] for x in rows if x["id"] == r["item_id"])
        assert content.count(question) == 1  # the item never serves as its own exemplar
        exemplars = json.loads(r["scores"])["exemplars"]
        assert len(exemplars) == 1 and exemplars[0] != r["item_id"]
        assert pool[exemplars[0]].question in content
    # the item that is the first exemplar of the pool gets the second one instead
    first = prompts.exemplar_pool()[0]
    assert (
        prompts.pick_exemplars({"item_id": first.item_id, "prompt": first.question}, 1)[0] != first
    )

    # export of the run: one row per response with the labels, all three formats
    for fmt in export.FORMATS:
        out = tmp_path / f"p1.{fmt}"
        assert export.export(store, ["p1"], fmt, out) == len(rows)
    lines = (tmp_path / "p1.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    assert row["variant"] == "one-shot" and row["mode"] == "passive"
    assert set(JUDGE_LABELS) <= set(row) and "guidance_rationale" in row


def test_run_errors_are_clear(small_set) -> None:
    store, _ = small_set
    with FakeOpenAI() as server:
        done = run_misprompt(store.path, server.url, "--items", "nope")
    assert done.returncode == 1 and "item set 'nope' does not exist" in done.stderr
    help_text = run_core("run", "misprompt", "--help").stdout
    assert "SAME endpoint as the model" in " ".join(help_text.split())


# -- the real local model -------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_end_to_end_on_local_smollm2(store: Store, tmp_path: Path, monkeypatch) -> None:
    # One erroneous item and one control: both kinds of item go through the real model and
    # the real judge (each item costs ~10 s of CPU on this 135M model; more items prove nothing
    # more about the plumbing). The model's answer is capped at 16 tokens (~25 ms of CPU a
    # token here; a longer answer proves nothing more and lengthens the judge's prompt); the
    # judge keeps its default limit, so its JSON is parsed rather than cut. The server is a
    # process of its own (the real llama.cpp server); `run misprompt` is the CLI in this
    # process (tests/core_cli.py), which saves a child's ~1.5 s of imports.
    data, rows = _subset(1, 1)
    mi.import_bytes(store, data, "tiny.csv", "tiny")
    port = _free_port()
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - closed in the finally below
    server = subprocess.Popen(
        [sys.executable, "-m", "core", "serve-local", "--port", str(port)],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None:
                    pytest.fail("serve-local exited: " + (tmp_path / "server.log").read_text())
                time.sleep(0.1)
        monkeypatch.setenv("EHW_LOCAL_URL", url)
        done = run_core(
            "run", "misprompt", "--db", str(store.path), "--items", "tiny",
            "--run-name", "smol", "--quiet", "--max-tokens", "16",
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        assert "weak model" in done.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    responses = store.df("SELECT * FROM responses WHERE run_id='smol'")
    verdicts = store.df("SELECT * FROM misprompt_verdicts WHERE run_id='smol'")
    assert len(responses) == len(verdicts) == len(rows) == 2
    assert (responses["status"] == "ok").all() and responses["response"].str.len().min() > 0
    assert store.scalar("SELECT weak_model FROM runs WHERE run_id='smol'") is True
    # whatever a 135M judge says, each verdict is either parsed labels or a failure with raw kept
    for v in verdicts.to_dict("records"):
        assert v["raw"] is not None or v["error"]
        if v["status"] == "ok":
            assert all(v[k] in (True, False) for k in JUDGE_LABELS)
