"""`run bbm --prompts paper`: the paper's own 3-shot prompts, read from the BBM repository's
mistake_finding_prompts/*.py as data (ast, never executed), sent exactly as written.

The expected message sequences are read here independently of core.benchmarks.bbm.paper_prompts: the
exemplar texts with a regex over the file's triple-quoted blocks plus textwrap.dedent, the
instruction, the answers and the final template typed in by hand from the file.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from hashlib import sha256
from pathlib import Path

import pytest

from core.benchmarks.bbm.paper_prompts import (
    PaperPromptError,
    load_paper_prompt,
    read_assignments,
    template_id,
)
from core.cli import main as cli
from tests.fake_openai import FakeOpenAI
from tests.test_bbm_run import run_bbm

PAPER_DIR = Path("/work/shared/data/bigbench_mistake/mistake_finding_prompts")
ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "bbm_sample.jsonl"
TASKS = [
    "word_sorting",
    "tracking_shuffled_objects",
    "logical_deduction",
    "multistep_arithmetic",
    "dyck_languages",
]
DIRECT_Q = (
    'Q: Is there a mistake in this sequence? Write "No" if there are no mistakes, or the '
    "number N if there is a mistake in Thought N."
)


def _blocks(path: Path, start: str, stop: str) -> list[str]:
    """The dedented triple-quoted blocks between two assignments, by text (no ast)."""
    text = path.read_text(encoding="utf-8")
    part = text[text.index(start) : text.index(stop)]
    return [textwrap.dedent(b) for b in re.findall(r'"""\\\n(.*?)"""', part, flags=re.DOTALL)]


def _sample() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


def _thoughts(steps: list[str]) -> str:
    return "\n".join(f"Thought {i}: {s}" for i, s in enumerate(steps, start=1))


def expected_arithmetic_direct_trace(question: str, steps: list[str]) -> list[dict]:
    path = PAPER_DIR / "multistep_arithmetic_prompts.py"
    shots = _blocks(path, "DIRECT_MESSAGES = (", "DIRECT_PERSTEP_TEMPLATE")
    assert len(shots) == 3 and shots[0].startswith("((-4 * -9 + -9 * 5)")
    answers = ["No", "4", "3"]
    seq = [
        {
            "role": "user",
            "content": "For each sequence of steps, identify the first mistake made, if any.",
        }
    ]
    for shot, answer in zip(shots, answers):
        seq += [{"role": "user", "content": shot}, {"role": "assistant", "content": answer}]
    seq.append({"role": "user", "content": f"{question} ?\n{_thoughts(steps)}\n{DIRECT_Q}"})
    return seq


def test_parsed_messages_match_the_file_for_arithmetic_direct_trace() -> None:
    p = load_paper_prompt(PAPER_DIR, "multistep_arithmetic", "direct_trace")
    steps = ["A = 1.", "B = 2.", "So the answer is 3"]
    assert p.render("(1 + 2) =", steps) == expected_arithmetic_direct_trace("(1 + 2) =", steps)
    assert (
        p.sha256 == sha256((PAPER_DIR / "multistep_arithmetic_prompts.py").read_bytes()).hexdigest()
    )


def test_dyck_step_prompt_shows_thoughts_up_to_the_step() -> None:
    p = load_paper_prompt(PAPER_DIR, "dyck_languages", "direct_step")
    msgs = p.render("{ [ ]", ["start", "stack: empty", "{ ; stack: {", "[ ; stack: { ["], 3)
    assert msgs[-1] == {
        "role": "user",
        "content": (
            "Task: Complete the rest of the sequence, making sure that the brackets are closed "
            "properly. Input: { [ ]\nThought 1: start\nThought 2: stack: empty\n"
            'Thought 3: { ; stack: {\nQ: Is Thought 3 correct? Write "Yes" if it is correct, and '
            '"No" if it is not.'
        ),
    }
    assert [m["role"] for m in msgs] == [
        "user",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert "system" not in {m["role"] for m in msgs}
    # the paper's exemplar answers, as in the file
    assert [m["content"] for m in msgs if m["role"] == "assistant"] == ["No", "Yes", "No"]


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("method", ["direct_trace", "direct_step", "cot_step"])
def test_every_shipped_file_parses_for_every_method(task: str, method: str) -> None:
    p = load_paper_prompt(PAPER_DIR, task, method)
    assert len(p.messages) == 7 and p.messages[0]["role"] == "user"
    assert [m["role"] for m in p.messages[1:]] == ["user", "assistant"] * 3
    assert "{steps}" in p.template


def test_files_are_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    src = (PAPER_DIR / "word_sorting_prompts.py").read_text()
    (tmp_path / "word_sorting_prompts.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\n" + src
    )
    load_paper_prompt(tmp_path, "word_sorting", "direct_trace")
    assert not marker.exists()


def test_missing_task_and_malformed_files_name_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(
        PaperPromptError,
        match=r"word_sorting_prompts\.py: no such file.*"
        r"word_sorting",
    ):
        load_paper_prompt(tmp_path, "word_sorting", "direct_trace")
    bad = tmp_path / "dyck_languages_prompts.py"
    bad.write_text(
        'import textwrap\n\nDIRECT_TEMPLATE = "x {input} {steps}"\n'
        'DIRECT_MESSAGES = (\n    {"role": "user", "content": "a"\n'
    )
    with pytest.raises(PaperPromptError, match=r"dyck_languages_prompts\.py:\d+: not valid Python"):
        load_paper_prompt(tmp_path, "dyck_languages", "direct_trace")
    bad.write_text(
        'import os\nDIRECT_TEMPLATE = "x {input} {steps}"\nDIRECT_MESSAGES = (os.getcwd(),)\n'
    )
    with pytest.raises(
        PaperPromptError,
        match=r"dyck_languages_prompts\.py:3: only "
        r"textwrap\.dedent",
    ):
        load_paper_prompt(tmp_path, "dyck_languages", "direct_trace")
    bad.write_text(
        'DIRECT_TEMPLATE = "x {input} {steps} {oops}"\n'
        'DIRECT_MESSAGES = ({"role": "user", "content": "a"},)\n'
    )
    with pytest.raises(
        PaperPromptError,
        match=r"dyck_languages_prompts\.py:1: DIRECT_TEMPLATE "
        r"has fields",
    ):
        load_paper_prompt(tmp_path, "dyck_languages", "direct_trace")
    bad.write_text(
        'DIRECT_TEMPLATE = "x {input} {steps}"\n'
        'DIRECT_MESSAGES = ({"role": "robot", "content": "a"},)\n'
    )
    with pytest.raises(PaperPromptError, match=r"dyck_languages_prompts\.py:2: DIRECT_MESSAGES"):
        load_paper_prompt(tmp_path, "dyck_languages", "direct_trace")
    with pytest.raises(PaperPromptError, match=r"no DIRECT_PERSTEP_MESSAGES"):
        load_paper_prompt(tmp_path, "dyck_languages", "direct_step")
    assert read_assignments(bad)["DIRECT_TEMPLATE"] == ("x {input} {steps}", 1)


def _responder(body: dict) -> str:
    last = body["messages"][-1]["content"]
    return "No" if "Is there a mistake in this sequence" in last else "Yes"


def test_run_sends_exactly_the_papers_messages(initialised_store) -> None:
    with FakeOpenAI(responder=_responder) as server:
        rc = run_bbm(
            server.url,
            "--method",
            "direct_trace",
            "--prompts",
            "paper",
            "--paper-prompts-dir",
            str(PAPER_DIR),
            "--run-name",
            "paper-dt",
            "--quiet",
        )
        requests = [r["body"]["messages"] for r in server.chat_requests]
    assert rc == 0 and len(requests) == 12
    traces = _sample()
    arithmetic = [t for t in traces if t["task"] == "multistep_arithmetic"]
    for t in arithmetic:
        assert expected_arithmetic_direct_trace(t["input"], t["steps"]) in requests
    assert all(len(m) == 8 and "system" not in {x["role"] for x in m} for m in requests)
    run = initialised_store.df("SELECT * FROM runs WHERE run_id = 'paper-dt'").iloc[0]
    assert run["template_id"] == template_id("direct_trace") == "bbm-paper/direct_trace"
    params = json.loads(run["params"])
    assert params["prompts"] == "paper"
    assert params["paper_prompts_dir"] == str(PAPER_DIR.resolve())
    assert (
        params["paper_prompts_sha256"]["multistep_arithmetic"]
        == sha256((PAPER_DIR / "multistep_arithmetic_prompts.py").read_bytes()).hexdigest()
    )
    assert set(params["paper_prompts_sha256"]) == set(TASKS)


def test_step_run_asks_each_step_with_the_papers_prompt(initialised_store) -> None:
    from tests.item_subsets import first_items

    first_set = first_items(initialised_store, "bbm-sample", 1)  # --limit samples, not the 1st
    with FakeOpenAI(responder=_responder) as server:
        rc = run_bbm(
            server.url,
            "--method",
            "cot_step",
            "--prompts",
            "paper",
            "--paper-prompts-dir",
            str(PAPER_DIR),
            "--run-name",
            "paper-cot",
            "--quiet",
            items=first_set,
        )
        requests = [r["body"]["messages"] for r in server.chat_requests]
    assert rc == 0
    first = _sample()[0]  # word sorting, 3 steps, answered "Yes" each time -> 3 calls
    assert len(requests) == len(first["steps"])
    for k, msgs in enumerate(requests, start=1):
        assert msgs[-1]["content"] == (
            f"Task: Sort the following words alphabetically: List: {first['input']}\n"
            f"{_thoughts(first['steps'][:k])}\nQ: Is Thought {k} correct? Check through each "
            "word in the original list and determine whether they are correctly described."
        )
    p = load_paper_prompt(PAPER_DIR, "word_sorting", "cot_step")
    assert requests[1] == p.render(first["input"], first["steps"], 2)
    assert (
        initialised_store.scalar("SELECT template_id FROM runs WHERE run_id = 'paper-cot'")
        == "bbm-paper/cot_step"
    )


def test_run_refuses_bad_paper_prompt_options(initialised_store, tmp_path, capsys) -> None:
    base = [
        "run",
        "bbm",
        "--items",
        "bbm-sample",
        "--method",
        "direct_trace",
        "--base-url",
        "http://127.0.0.1:9",
        "--model",
        "x",
        "--quiet",
    ]
    assert cli(base + ["--prompts", "paper"]) == 2
    assert "--paper-prompts-dir" in capsys.readouterr().err
    for task in TASKS[:-1]:
        shutil.copy(PAPER_DIR / f"{task}_prompts.py", tmp_path)
    assert cli(base + ["--prompts", "paper", "--paper-prompts-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "dyck_languages_prompts.py: no such file" in err and "WHGTyen" in err
    assert (
        cli(base + ["--prompts", "paper", "--paper-prompts-dir", str(PAPER_DIR), "--shots", "2"])
        == 2
    )
    assert initialised_store.scalar("SELECT count(*) FROM runs") == 0
