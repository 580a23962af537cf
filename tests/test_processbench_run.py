"""End to end: `import processbench` → `run processbench` against the scripted server
(tests/fake_openai.py) → `metrics processbench`, and `rescore` re-reading the stored critiques.

The responder plays a critic with a scripted answer per solution (a boxed index, a boxed
number past the last paragraph, prose without a box, an answer cut at max_tokens). The
expected numbers are counted here from the script and the sample's labels."""

from __future__ import annotations

import io
import json
import statistics
from pathlib import Path

import pandas as pd
import pytest

from tests.core_cli import run_core
from tests.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "processbench_sample.jsonl"
RUN = "pb-e2e"

# id -> (reply, the index it names or None when unreadable, cut at max_tokens)
SCRIPT: dict[str, tuple[str, int | None, bool]] = {
    "gsm8k-0": ("All fine. \\boxed{-1}", -1, False),
    "gsm8k-1": ("Paragraph 0 divides wrongly: \\boxed{0}", 0, False),
    "gsm8k-2": ("\\boxed{1}", 1, False),
    "gsm8k-3": ("The earliest error is in paragraph 1.", None, False),
    "gsm8k-4": ("\\boxed{-1}", -1, False),
    "gsm8k-5": ("\\boxed{ -1 }", -1, False),
    "gsm8k-6": ("\\boxed{9}", None, False),  # out of range
    "gsm8k-7": ("first \\boxed{0}, no wait: \\boxed{-1}", -1, False),
    "math-0": ("\\boxed{-1}", -1, False),
    "math-1": ("\\boxed{0}", 0, False),
    "math-2": ("\\boxed{2}", 2, False),
    "math-3": ("Let me check paragraph 0 carefully, then", None, True),  # truncated
    "math-4": ("\\boxed{1}", 1, False),
    "math-5": ("\\boxed{-1}", -1, False),
    "math-6": ("\\boxed{0}", 0, False),
    "math-7": ("\\boxed{2}", 2, False),
}


def sample() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


def item_of(body: dict) -> str:
    user = body["messages"][-1]["content"]
    problem = user.split("[Math Problem]\n\n", 1)[1].split("\n\n[Solution]", 1)[0]
    return next(r["id"] for r in sample() if r["problem"] == problem)


def responder(body: dict) -> str:
    return SCRIPT[item_of(body)][0]


def fault(body: dict) -> dict | None:
    reply, _, cut = SCRIPT[item_of(body)]
    return {"content": reply, "finish_reason": "length"} if cut else None


def expected() -> dict[str, tuple[int, float, float, float]]:
    """Per split and overall: (n, error_acc, correct_acc, f1), counted from the script."""
    rows = [(r["id"].split("-")[0], r["label"], SCRIPT[r["id"]][1]) for r in sample()]
    out = {}
    for split in ("gsm8k", "math", "overall"):
        part = [r for r in rows if split in ("overall", r[0])]
        err = [r for r in part if r[1] != -1]
        cor = [r for r in part if r[1] == -1]
        a = 100 * sum(r[2] == r[1] for r in err) / len(err)
        b = 100 * sum(r[2] == -1 for r in cor) / len(cor)
        out[split] = (len(part), a, b, statistics.harmonic_mean([a, b]))
    return out


def metrics(*args: str) -> pd.DataFrame:
    done = run_core("metrics", "processbench", "--source", RUN, *args)
    assert done.returncode == 0, done.stderr
    return pd.read_csv(io.StringIO(done.stdout))


@pytest.fixture
def ran(initialised_store, tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_bytes(SAMPLE.read_bytes())
    done = run_core("import", "processbench", str(path), "--name", "pb-mine")
    assert done.returncode == 0, done.stderr
    assert "created item set pb-mine: 16 solutions" in done.stdout
    with FakeOpenAI(responder=responder, fault_fn=fault) as server:
        done = run_core(
            "run", "processbench", "--items", "pb-mine", "--base-url", server.url,
            "--model", "critic", "--run-name", RUN, "--quiet",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        bodies = [c["body"] for c in server.chat_requests]
    return initialised_store, bodies


def test_import_run_metrics_match_the_script(ran) -> None:
    store, bodies = ran
    assert len(bodies) == 16  # one sample per solution
    assert all(b["model"] == "critic" and b["temperature"] == 0 for b in bodies)
    assert all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" for b in bodies)
    run = store.df("SELECT * FROM runs WHERE run_id = ?", [RUN]).iloc[0]
    assert (run["benchmark"], run["setting"], run["mode"]) == (
        "processbench",
        "critique",
        "passive",
    )
    assert run["template_id"] == "processbench/critique.v1" and run["status"] == "done"
    statuses = dict(store.rows("SELECT item_id, status FROM results WHERE run_id = ?", [RUN]))
    assert statuses["gsm8k-3"] == "unparsable" and statuses["gsm8k-6"] == "out_of_range"
    assert statuses["math-3"] == "truncated" and statuses["gsm8k-7"] == "ok"

    m = metrics().set_index("split")
    for col in ("split", "n", "error_acc", "correct_acc", "f1", "ci_low", "ci_high", "judging"):
        assert col in m.reset_index().columns
    for split, (n, a, b, f1) in expected().items():
        row = m.loc[split]
        assert row["n"] == n
        assert row["error_acc"] == pytest.approx(a)
        assert row["correct_acc"] == pytest.approx(b)
        assert row["f1"] == pytest.approx(f1)
        assert row["error_ci_low"] <= a <= row["error_ci_high"]
        assert row["ci_low"] <= f1 <= row["ci_high"]
    exp = expected()
    assert m.loc["average", "f1"] == pytest.approx((exp["gsm8k"][3] + exp["math"][3]) / 2)
    assert m.loc["gsm8k", "unparsable"] == pytest.approx(100 / 8)
    assert m.loc["gsm8k", "out_of_range"] == pytest.approx(100 / 8)
    assert m.loc["math", "truncated"] == pytest.approx(100 / 8)
    assert set(m["judging"]) == {"default"}
    assert set(m["judging_template"]) == {"processbench/critique.v1"}
    assert set(m["model"]) == {"critic"} and set(m["mode"]) == {"passive"}

    as_json = json.loads(
        run_core("metrics", "processbench", "--source", RUN, "--format", "json").stdout
    )
    assert [r["split"] for r in as_json] == ["gsm8k", "math", "overall", "average"]
    assert as_json[3]["error_acc"] is None  # the paper's Avg. F1 row has no accuracies
    table = run_core("metrics", "processbench", "--source", RUN, "--format", "table")
    assert table.returncode == 0 and "error_acc" in table.stdout and "average" in table.stdout


def test_rescore_rereads_the_stored_critiques_as_a_new_judging(ran) -> None:
    before = metrics()
    done = run_core("rescore", "--source", RUN, "--as", "again", "--quiet")
    assert done.returncode == 0, done.stderr
    after = metrics()  # the run's current judging is now 'again'
    assert set(after["judging"]) == {"again"}
    assert set(after["judging_template"]) == {"processbench/scorer"}
    cols = ["split", "n", "error_acc", "correct_acc", "f1", "ci_low", "ci_high"]
    pd.testing.assert_frame_equal(before[cols], after[cols])
    assert set(metrics("--judging", "default")["judging"]) == {"default"}


def test_published_and_unknown_sources_are_errors_naming_the_reason(initialised_store) -> None:
    done = run_core("metrics", "processbench", "--source", "published")
    assert done.returncode == 2 and "not shipped" in done.stderr and "Table 3" in done.stderr
    done = run_core("metrics", "processbench", "--source", "nope")
    assert done.returncode == 2 and "unknown source 'nope'" in done.stderr


def test_the_run_forms_command_runs_a_stratified_sample_of_the_builtin_set(
    initialised_store,
) -> None:
    """What the app's run form starts (core.services.jobs.build_cli_args over the registry's
    run fields), on the sample `init` loads: 4 solutions, both splits, both kinds."""
    from core.services.jobs import build_cli_args

    with FakeOpenAI(responder=responder, fault_fn=fault) as server:
        args = build_cli_args(
            "processbench",
            "processbench-sample",
            base_url=server.url,
            model="critic",
            fields={"template": "processbench/critique.v1"},
            limit=4,
        )
        done = run_core(*args, "--run-name", "pb-form", "--quiet")
    assert done.returncode == 0, done.stderr
    rows = initialised_store.rows(
        "SELECT i.split, i.is_error FROM responses x JOIN items i ON i.item_set = "
        "'processbench-sample' AND i.item_id = x.item_id WHERE x.run_id = 'pb-form'"
    )
    assert len(rows) == 4
    assert {s for s, _ in rows} == {"gsm8k", "math"} and {e for _, e in rows} == {True, False}


def test_a_structured_run_sends_the_schema_and_reads_json_also_on_rescore(
    initialised_store,
) -> None:
    """processbench/critique_structured.v1 (NOT the paper's protocol, for small local models):
    the scripted critic answers JSON with the index its script names (prose stays prose)."""
    import re

    def json_reply(body: dict) -> str:
        reply = responder(body)
        found = re.findall(r"\\boxed\{([^}]*)\}", reply)
        return json.dumps({"earliest_wrong_paragraph": int(found[-1])}) if found else reply

    with FakeOpenAI(responder=json_reply, fault_fn=fault) as server:
        done = run_core(
            "run", "processbench", "--items", "processbench-sample", "--base-url", server.url,
            "--model", "critic", "--run-name", RUN, "--quiet",
            "--template", "processbench/critique_structured.v1",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        bodies = [c["body"] for c in server.chat_requests]
    assert all(b["response_format"]["type"] == "json_schema" for b in bodies)
    states = dict(
        initialised_store.rows(
            "SELECT item_id, metadata->>'json' FROM results WHERE run_id = ?", [RUN]
        )
    )
    assert states["gsm8k-0"] == "ok" and states["gsm8k-3"] == "invalid"
    m = metrics().set_index("split")
    for split, (n, a, b, f1) in expected().items():
        assert (m.loc[split, "n"], m.loc[split, "error_acc"]) == (n, pytest.approx(a))
        assert m.loc[split, "correct_acc"] == pytest.approx(b)
        assert m.loc[split, "f1"] == pytest.approx(f1)
    assert run_core("rescore", "--source", RUN, "--as", "again", "--quiet").returncode == 0
    assert metrics()["f1"].tolist() == pytest.approx(m["f1"].tolist())


def test_a_run_of_three_epochs_reads_each_answer_once_and_counts_items(
    initialised_store, tmp_path
) -> None:
    """`run --epochs 3` at temperature 0: three identical answers per solution. The metrics
    read each answer once (its own epoch's result, not K × K joined rows), give the same
    accuracies as one epoch, count items (n = 16, not 48) and cluster the intervals."""
    path = tmp_path / "mine.jsonl"
    path.write_bytes(SAMPLE.read_bytes())
    assert run_core("import", "processbench", str(path), "--name", "pb-mine").returncode == 0
    with FakeOpenAI(responder=responder, fault_fn=fault) as server:
        for name, epochs in (("pb-e1", "1"), ("pb-e3", "3")):
            done = run_core(
                "run", "processbench", "--items", "pb-mine", "--base-url", server.url,
                "--model", "critic", "--run-name", name, "--epochs", epochs, "--quiet",
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
    store = initialised_store
    assert store.scalar("SELECT count(*) FROM responses WHERE run_id = 'pb-e3'") == 16 * 3
    rows = {}
    for name in ("pb-e1", "pb-e3"):
        done = run_core("metrics", "processbench", "--source", name)
        assert done.returncode == 0, done.stderr
        rows[name] = pd.read_csv(io.StringIO(done.stdout)).set_index("split").to_dict("index")
    one, three = rows["pb-e1"], rows["pb-e3"]
    for split, (n, a, _b, f1) in expected().items():
        assert three[split]["n"] == one[split]["n"] == n
        assert three[split]["error_acc"] == pytest.approx(a)
        assert three[split]["f1"] == pytest.approx(f1)
        assert three[split]["ci_high"] - three[split]["ci_low"] >= 0.85 * (
            one[split]["ci_high"] - one[split]["ci_low"]
        )
