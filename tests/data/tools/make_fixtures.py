"""Regenerate the other tools' result files in tests/data/tools/ by running the real tools.

Why: the importers of issue 26 must read what Inspect AI, lm-evaluation-harness, promptfoo and
Every Eval Ever really write, not what we think they write. CI does not install these tools; the
tests read the committed files. This script is how they were made (tests/data/tools/README.md
lists every file, the tool version and the exact command).

Install the tools (each in a place of its own, never into the project's venv)::

    python3.11 -m venv /tmp/venv-inspect
    /tmp/venv-inspect/bin/pip install inspect-ai==0.3.285 openai
    python3.11 -m venv /tmp/venv-lmeval
    /tmp/venv-lmeval/bin/pip install "lm-eval[api]==0.4.13"
    mkdir -p /tmp/pf && cd /tmp/pf && npm init -y && npm install promptfoo@0.120.0
    python3.12 -m venv /tmp/venv-eee          # every-eval-ever needs Python >= 3.12
    /tmp/venv-eee/bin/pip install "every-eval-ever[inspect]==0.3.0" inspect-ai==0.3.285

Run (from the repository root, with any Python >= 3.11; it needs only the standard library and
tests/fake_openai.py, and starts each tool in its own venv)::

    python tests/data/tools/make_fixtures.py                 # all tools
    python tests/data/tools/make_fixtures.py inspect lm_eval # some
    python tests/data/tools/make_fixtures.py --big 100000 /tmp/big.eval   # not committed

Model traffic goes to tests/fake_openai.py's scripted server on a free port: each reply is
chosen from the item's known answer by a hash of (model, input), so it is deterministic and two
models are right on different items. Inputs are the project's sample items exactly as stored in
data/samples/, plus NEW_PROCESSBENCH items that are in no sample.

This file is also the Inspect task file (`inspect eval make_fixtures.py@first_error`): the
@task functions below run inside /tmp/venv-inspect only; elsewhere `task` is a no-op.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SAMPLES = ROOT / "data" / "samples"

try:  # only inside /tmp/venv-inspect (this file doubles as the Inspect task file)
    from inspect_ai import Epochs, Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import GenerateConfig
    from inspect_ai.scorer import (
        CORRECT,
        INCORRECT,
        Score,
        Target,
        accuracy,
        includes,
        match,
        mean,
        scorer,
        stderr,
    )
    from inspect_ai.solver import Generate, TaskState, generate, solver, system_message

    HAVE_INSPECT = True
except ImportError:  # the generator itself needs only the standard library
    HAVE_INSPECT = False

    def task(fn: Any) -> Any:  # a no-op stand-in, so the task functions below still parse
        return fn


INSPECT_VENV = Path(os.environ.get("INSPECT_VENV", "/tmp/venv-inspect"))
LMEVAL_VENV = Path(os.environ.get("LMEVAL_VENV", "/tmp/venv-lmeval"))
EEE_VENV = Path(os.environ.get("EEE_VENV", "/tmp/venv-eee"))
PROMPTFOO_DIR = Path(os.environ.get("PROMPTFOO_DIR", "/tmp/pf"))
MODELS = ("fixture-model-a", "fixture-model-b")

# Three ProcessBench-style problems that are in no sample file: the importer must build new
# items for them (ids "new-0".."new-2" in the logs).
NEW_PROCESSBENCH: list[dict[str, Any]] = [
    {
        "id": "new-0",
        "problem": "A bus carries 40 passengers. At the first stop 12 get off and 5 get on. "
        "How many passengers are on the bus now?",
        "steps": [
            "After 12 get off there are 40 - 12 = 28 passengers.",
            "After 5 get on there are 28 + 5 = 33 passengers.",
            "The answer is \\boxed{33}.",
        ],
        "label": -1,
    },
    {
        "id": "new-1",
        "problem": "A rectangle is 7 cm wide and 9 cm long. What is its area?",
        "steps": [
            "The area is width plus length: 7 + 9 = 16.",
            "So the area is \\boxed{16} square centimetres.",
        ],
        "label": 0,
    },
    {
        "id": "new-2",
        "problem": "Lena saves $6 a week. How many weeks does she need to save $54?",
        "steps": [
            "She needs 54 / 6 weeks.",
            "54 / 6 = 8, so she needs 8 weeks.",
            "The answer is \\boxed{8}.",
        ],
        "label": 1,
    },
]


# Two PCBench-style ill-posed problems in no sample (promptfoo's extra tests).
NEW_PCBENCH: list[dict[str, Any]] = [
    {
        "pid": "new-pc-1",
        "ill_query": "A jar holds 30 marbles, all of them red. 12 of the marbles are blue. "
        "How many red marbles are in the jar?",
        "conflict": {"conflict_reason": "All marbles are red, yet 12 are blue."},
        "meta_info": {"final_answer": "30"},
    },
    {
        "pid": "new-pc-2",
        "ill_query": "A square has side 5 cm and its perimeter is 24 cm. What is its area?",
        "conflict": {"conflict_reason": "A square of side 5 cm has perimeter 20 cm, not 24 cm."},
        "meta_info": {"final_answer": "25"},
    },
]


# -- items from data/samples, exactly as stored ---------------------------------------------
def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def processbench_items(n: int = 12) -> list[dict[str, Any]]:
    """The first `n` ProcessBench sample items (store id = `id`, prompt = `problem`) + new ones."""
    rows = _jsonl(SAMPLES / "processbench_sample.jsonl")[:n]
    keep = ("id", "problem", "steps", "label")
    return [{k: row[k] for k in keep} for row in rows] + NEW_PROCESSBENCH


def bbm_items() -> list[dict[str, Any]]:
    """All BBM sample traces (store id = `bbm_sample:<line>`, prompt = `input`)."""
    rows = _jsonl(SAMPLES / "bbm_sample.jsonl")
    return [{"store_id": f"bbm_sample:{i}", **row} for i, row in enumerate(rows, start=1)]


def misprompt_items(n_error: int = 6, n_control: int = 4) -> list[dict[str, str]]:
    """Mis-prompt sample questions (store id = `id`, prompt = `question`): errors and controls."""
    with (SAMPLES / "misprompt_sample.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    errors = [r for r in rows if r["error"] == "error"][:n_error]
    controls = [r for r in rows if r["error"] != "error"][:n_control]
    return errors + controls


def pcbench_items(n: int = 6) -> list[dict[str, Any]]:
    """PCBench sample problems (store id = `pid`, prompt = `ill_query`)."""
    return _jsonl(SAMPLES / "pcbench_sample.jsonl")[:n]


# -- the scripted model ----------------------------------------------------------------------
def _right(model: str, key: str) -> bool:
    """Whether `model` answers item `key` right: a fixed hash, about two in three right."""
    return hashlib.sha256(f"{model}|{key}".encode()).digest()[0] % 3 != 0


def _wrong_index(label: int, n_steps: int) -> int:
    return label + 1 if label + 1 < n_steps else -1


def _wrong_answer(target: str) -> str:
    """A wrong answer of the target's kind: another option, another number, another order."""
    option = re.fullmatch(r"\(([A-Z])\)", target)
    if option:
        return "(A)" if option.group(1) != "A" else "(B)"
    if re.fullmatch(r"-?\d+", target):
        return str(int(target) + 1)
    words = target.split()
    return " ".join(reversed(words)) if len(words) > 1 else target + " " + target


def reply_table() -> list[tuple[str, Callable[[str], str]]]:
    """(text that identifies the item in a prompt, model -> reply), longest key first."""
    table: list[tuple[str, Callable[[str], str]]] = []

    for pb in processbench_items(16):

        def pb_reply(model: str, pb: dict[str, Any] = pb) -> str:
            label = int(pb["label"])
            guess = label if _right(model, pb["problem"]) else _wrong_index(label, len(pb["steps"]))
            why = "every step is correct" if guess == -1 else f"step {guess} is the first wrong one"
            return f"I checked the steps one by one: {why}.\nANSWER: {guess}"

        table.append((pb["problem"], pb_reply))

    for bbm in bbm_items():

        def bbm_reply(model: str, bbm: dict[str, Any] = bbm) -> str:
            answer = bbm["target"] if _right(model, bbm["input"]) else _wrong_answer(bbm["target"])
            return f"Let me work through it. The answer is {answer}"

        table.append((bbm["input"], bbm_reply))

    for mp in misprompt_items(88, 88):

        def mp_reply(model: str, mp: dict[str, str] = mp) -> str:
            flags = (mp["error"] == "error") == _right(model, mp["question"])
            if flags:
                return "Your question contains an error: " + (
                    mp["explanation"] or "it cannot be answered as asked."
                )
            return "Here is the answer. " + (mp["gold_answer"] or "It depends.")[:200]

        table.append((mp["question"], mp_reply))

    for pc in pcbench_items(16) + NEW_PCBENCH:

        def pc_reply(model: str, pc: dict[str, Any] = pc) -> str:
            if _right(model, pc["ill_query"]):
                return (
                    "The problem contradicts itself: " + pc["conflict"]["conflict_reason"] + " "
                    "Please clarify which premise holds."
                )
            return f"The answer is {pc['meta_info']['final_answer']}."

        table.append((pc["ill_query"], pc_reply))

    table.sort(key=lambda kv: -len(kv[0]))
    return table


def _user_text(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(str(content or ""))
    return "\n".join(parts)


def make_responder() -> Callable[[dict[str, Any]], str]:
    """The reply to one chat request: graders get a verdict, item prompts their scripted reply."""
    table = reply_table()

    def respond(body: dict[str, Any]) -> str:
        text = _user_text(body)
        model = str(body.get("model", "")).rsplit("/", 1)[-1]  # same replies under any org
        if "<Output>" in text and "<Rubric>" in text:  # promptfoo's llm-rubric grader
            output = text.rsplit("<Output>", 1)[-1].split("</Output>", 1)[0]  # after the examples
            ok = "contradict" in output.lower()
            return json.dumps(
                {
                    "reason": "The output points out the contradiction."
                    if ok
                    else "The output answers without noticing the contradiction.",
                    "pass": ok,
                    "score": 1.0 if ok else 0.0,
                }
            )
        for key, reply in table:
            if key in text:
                return reply(model)
        return "I do not know."

    return respond


class Server:
    """tests/fake_openai.py's scripted server with our responder, in this process."""

    def __enter__(self) -> Any:
        sys.path.insert(0, str(ROOT))
        from tests.fake_openai import FakeOpenAI

        self.fake = FakeOpenAI(responder=make_responder(), record=False).start()
        return self.fake

    def __exit__(self, *exc: object) -> None:
        self.fake.stop()


def _run(
    cmd: list[str],
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    ok_codes: tuple[int, ...] = (0,),
) -> str:
    """Run a tool; echo the command (the README quotes these) and fail loudly."""
    print("+", " ".join(cmd), flush=True)
    full_env = {**os.environ, **(env or {})}
    out = subprocess.run(cmd, env=full_env, cwd=cwd, capture_output=True, text=True)
    if out.returncode not in ok_codes:
        sys.stderr.write(out.stdout[-4000:] + out.stderr[-4000:])
        raise SystemExit(f"{cmd[0]} failed with exit code {out.returncode}")
    return out.stdout


# -- Inspect AI tasks (run inside /tmp/venv-inspect) -----------------------------------------
FIRST_ERROR_SYSTEM = (
    "You check step-by-step solutions. Reply with the index (0-based) of the first wrong "
    "step, or -1 if every step is correct, on a last line 'ANSWER: <index>'."
)


def _steps_prompt(problem: str, steps: list[str]) -> str:
    lines = [f"Problem: {problem}", "Solution:"]
    lines += [f"Step {i}: {s}" for i, s in enumerate(steps)]
    lines.append("Which step is the first wrong one?")
    return "\n".join(lines)


if HAVE_INSPECT:

    @solver
    def show_steps(fail_on: str | None = None) -> Any:
        """Put the steps (sample metadata) under the problem (sample input) in the user turn.

        The sample's input stays the stored item prompt (the problem), so an importer can match
        it by a hash of the input text. `fail_on` raises on that sample id: a run that errors.
        """

        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if fail_on is not None and str(state.sample_id) == fail_on:
                raise RuntimeError(f"scripted failure on sample {fail_on}")
            state.user_prompt.text = _steps_prompt(state.input_text, state.metadata["steps"])
            return state

        return solve

    @scorer(metrics=[mean(), stderr()])
    def first_error_index() -> Any:
        """1 for the right index, 0.5 one step off, else 0; the parsed index as the answer."""

        async def score(state: TaskState, target: Target) -> Score:
            found = re.search(r"ANSWER:\s*(-?\d+)", state.output.completion)
            label = int(target.text)
            if found is None:
                return Score(value=0.0, answer=None, explanation="no 'ANSWER: n' line")
            guess = int(found.group(1))
            distance = (
                abs(guess - label) if min(guess, label) >= 0 else (0 if guess == label else 99)
            )
            value = 1.0 if distance == 0 else 0.5 if distance == 1 else 0.0
            return Score(
                value=value,
                answer=str(guess),
                explanation=f"model said step {guess}, the first wrong step is {label}",
                metadata={"label": label, "parsed": guess, "distance": distance},
            )

        return score

    def _first_error_dataset(with_ids: bool = True) -> Any:
        return MemoryDataset(
            [
                Sample(
                    input=item["problem"],
                    target=str(item["label"]),
                    id=item["id"] if with_ids else None,
                    metadata={"steps": item["steps"]},
                )
                for item in processbench_items()
            ],
            name="processbench_sample+new",
        )

    @scorer(metrics=[accuracy(), stderr()])
    def flags_error() -> Any:
        """Correct when the reply flags an error exactly when the question has one."""

        async def score(state: TaskState, target: Target) -> Score:
            flagged = "contains an error" in state.output.completion
            expected = target.text == "error"
            return Score(
                value=CORRECT if flagged == expected else INCORRECT,
                answer="flagged" if flagged else "answered",
                explanation=f"question is {target.text}; the reply "
                + ("flags an error" if flagged else "answers it"),
                metadata={"category": state.metadata.get("primary_category") or None},
            )

        return score

    @scorer(metrics=[accuracy()])
    def critiques_premise() -> Any:
        """Correct when the reply points out the conflicting premise (a proactive critique)."""

        async def score(state: TaskState, target: Target) -> Score:
            critique = "contradicts" in state.output.completion
            return Score(
                value=CORRECT if critique else INCORRECT,
                answer=state.output.completion,
                explanation="points out the conflict" if critique else "answers as if well posed",
            )

        return score


@task
def first_error() -> Any:
    """ProcessBench sample problems: the first wrong step; two scorers, two epochs."""
    return Task(
        dataset=_first_error_dataset(),
        solver=[system_message(FIRST_ERROR_SYSTEM), show_steps(), generate()],
        scorer=[match(location="end"), first_error_index()],
        epochs=Epochs(2),
        config=GenerateConfig(temperature=0.0, max_tokens=256),
    )


@task
def first_error_partial() -> Any:
    """As first_error, but the solver raises on sample math-3: the run ends in error."""
    return Task(
        dataset=_first_error_dataset(),
        solver=[system_message(FIRST_ERROR_SYSTEM), show_steps(fail_on="math-3"), generate()],
        scorer=[match(location="end"), first_error_index()],
        epochs=Epochs(2),
    )


@task
def bbm_answers() -> Any:
    """BBM sample inputs with their targets and no sample ids (Inspect numbers them)."""
    return Task(
        dataset=MemoryDataset(
            [Sample(input=b["input"], target=b["target"]) for b in bbm_items()],
            name="bbm_sample",
        ),
        solver=[system_message("Solve the task. End with 'The answer is ...'."), generate()],
        scorer=includes(),
    )


@task
def misprompt_flags() -> Any:
    """Mis-prompt sample questions (ids S0001...): does the model flag the erroneous ones?"""
    return Task(
        dataset=MemoryDataset(
            [
                Sample(
                    input=r["question"],
                    target=r["error"],
                    id=r["id"],
                    metadata={"primary_category": r["primary_category"]},
                )
                for r in misprompt_items()
            ],
            name="misprompt_sample",
        ),
        solver=generate(),
        scorer=flags_error(),
    )


@task
def pcbench_critique() -> Any:
    """PCBench sample ill-posed queries (ids = pid)."""
    return Task(
        dataset=MemoryDataset(
            [
                Sample(
                    input=p["ill_query"],
                    target=p["conflict"]["conflict_reason"],
                    id=p["pid"],
                    metadata={"conflict_type": p["conflict_type"]},
                )
                for p in pcbench_items()
            ],
            name="pcbench_sample",
        ),
        solver=generate(),
        scorer=critiques_premise(),
    )


# -- drivers ---------------------------------------------------------------------------------
def _inspect_eval(
    url: str,
    spec: str,
    models: tuple[str, ...],
    out: Path,
    names: list[str],
    *extra: str,
    expect_error: bool = False,
) -> None:
    """`inspect eval` one task; rename the logs (one per model, in order) to stable names."""
    tmp = out / "_tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    env = {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "dummy", "INSPECT_LOG_LEVEL": "warning"}
    cmd = [str(INSPECT_VENV / "bin" / "inspect"), "eval", f"{Path(__file__).name}@{spec}"]
    cmd += ["--model", ",".join(f"openai/{m}" for m in models), "-M", "responses_api=false"]
    cmd += ["--log-dir", str(tmp), "--display", "plain", "--max-samples", "1", *extra]
    try:
        _run(cmd, env, cwd=HERE)
    except SystemExit:
        if not expect_error:
            raise
    by_model = {_log_model(log): log for log in sorted(tmp.iterdir())}
    for model, name in zip(models, names, strict=True):
        shutil.move(by_model[f"openai/{model}"], out / name)
    shutil.rmtree(tmp)


def _log_model(path: Path) -> str:
    """The model a log names (header.json in a .eval, the top object in a .json)."""
    code = (
        "import sys; from inspect_ai.log import read_eval_log;"
        "print(read_eval_log(sys.argv[1], header_only=True).eval.model)"
    )
    return _run([str(INSPECT_VENV / "bin" / "python"), "-c", code, str(path)]).strip()


# (task, models, file names in model order, extra `inspect eval` options, run ends in error)
INSPECT_RUNS: list[tuple[str, tuple[str, ...], list[str], tuple[str, ...], bool]] = [
    ("first_error", MODELS, ["first_error_a.eval", "first_error_b.eval"], (), False),
    ("first_error", MODELS[:1], ["first_error_a.json"], ("--log-format", "json"), False),
    ("first_error_partial", MODELS[:1], ["first_error_partial_error.eval"], (), True),
    ("bbm_answers", MODELS[:1], ["bbm_no_ids_a.eval"], (), False),
    ("misprompt_flags", MODELS, ["misprompt_a.eval", "misprompt_b.eval"], (), False),
    ("pcbench_critique", MODELS[:1], ["pcbench_a.eval"], (), False),
]


def make_inspect(only: list[str] | None = None) -> None:
    """Run every Inspect task of INSPECT_RUNS (or those named in `only`) into inspect/."""
    out = HERE / "inspect"
    out.mkdir(exist_ok=True)
    with Server() as fake:
        for spec, models, names, extra, expect_error in INSPECT_RUNS:
            if only and spec not in only:
                continue
            for name in names:
                (out / name).unlink(missing_ok=True)
            _inspect_eval(fake.url, spec, models, out, names, *extra, expect_error=expect_error)


LMEVAL_TASK = "processbench_first_error"
LMEVAL_YAML = r"""# lm-evaluation-harness task (--include_path): the index of the first wrong step of a
# ProcessBench solution. Written by tests/data/tools/make_fixtures.py.
task: processbench_first_error
dataset_path: json
dataset_kwargs:
  data_files:
    test: processbench_first_error.jsonl
test_split: test
output_type: generate_until
doc_to_text: "You check step-by-step solutions.\nProblem: {{problem}}\nSolution:\n{% for s in steps %}Step {{loop.index0}}: {{s}}\n{% endfor %}Reply with the index (0-based) of the first wrong step, or -1 if every step is correct, on a last line 'ANSWER: <index>'."
doc_to_target: "{{label}}"
generation_kwargs:
  until: ["\n\n"]
  max_gen_toks: 128
  do_sample: false
  temperature: 0.0
filter_list:
  - name: get-answer
    filter:
      - function: regex
        regex_pattern: "ANSWER: (-?\\d+)"
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: false
metadata:
  version: 1.0
"""


def make_lm_eval() -> None:
    """lm-eval 0.4.13 over the ProcessBench sample (+ new items), two models, one folder each."""
    out = HERE / "lm_eval"
    task_dir = out / "task"
    shutil.rmtree(out, ignore_errors=True)
    task_dir.mkdir(parents=True)
    (task_dir / f"{LMEVAL_TASK}.yaml").write_text(LMEVAL_YAML, encoding="utf-8")
    stored = _jsonl(SAMPLES / "processbench_sample.jsonl")[:12]  # whole rows, as stored
    with (task_dir / f"{LMEVAL_TASK}.jsonl").open("w", encoding="utf-8") as handle:
        for row in stored + NEW_PROCESSBENCH:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    env = {"OPENAI_API_KEY": "dummy", "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    with Server() as fake:
        for model in MODELS:
            cmd = [str(LMEVAL_VENV / "bin" / "lm_eval"), "--model", "local-chat-completions"]
            # "org/name": every-eval-ever's lm_eval converter takes the developer from the org
            cmd += ["--model_args", f"base_url={fake.url}/chat/completions,model=fixtures/{model}"]
            cmd += ["--tasks", LMEVAL_TASK, "--include_path", ".", "--apply_chat_template"]
            cmd += ["--log_samples", "--output_path", "../out", "--seed", "0"]
            _run(cmd, env, cwd=task_dir)


PROMPTFOO_ASSERTS = [
    {"type": "contains", "value": "contradict", "metric": "critique"},
    {
        "type": "javascript",
        "metric": "no_answer",
        "value": "output.includes('The answer is') ? {pass: false, score: 0.25, reason: "
        "'answers the ill-posed problem'} : {pass: true, score: 1, reason: 'does not answer'}",
    },
    {
        "type": "llm-rubric",
        "metric": "rubric",
        "value": "The reply points out that the problem's premises contradict each other.",
    },
]


def promptfoo_config(url: str) -> dict[str, Any]:
    """Two scripted models, one prompt, 5 PCBench sample problems + 2 new ones, 3 assertions."""
    provider_config = {"apiBaseUrl": url, "apiKey": "dummy", "temperature": 0}
    tests = [
        {"description": p["pid"], "vars": {"pid": p["pid"], "query": p["ill_query"]}}
        for p in pcbench_items(5) + NEW_PCBENCH
    ]
    return {
        "description": "PCBench sample ill-posed problems (tests/data/tools/make_fixtures.py)",
        "prompts": [
            {
                "id": "solve",
                "label": "solve",
                "raw": "Solve the problem. If it cannot be solved as stated, say why.\n\n{{query}}",
            }
        ],
        "providers": [{"id": f"openai:chat:{m}", "config": provider_config} for m in MODELS],
        "defaultTest": {
            "assert": PROMPTFOO_ASSERTS,
            "options": {
                "provider": {"id": "openai:chat:fixture-grader", "config": provider_config}
            },
        },
        "tests": tests,
    }


def make_promptfoo() -> None:
    """promptfoo 0.120.0 `eval -o out.json` (results version 3) with the config beside it."""
    out = HERE / "promptfoo"
    out.mkdir(exist_ok=True)
    package = PROMPTFOO_DIR / "node_modules" / "promptfoo"
    # 0.120.0 looks for its migrations in <package>/drizzle; npm installs them in dist/drizzle.
    if not (package / "drizzle").exists():
        (package / "drizzle").symlink_to("dist/drizzle")
    home = Path("/tmp/promptfoo-fixtures-home")
    shutil.rmtree(home, ignore_errors=True)
    env = {
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(home),  # its results database (needed for -o)
        "METADATA_SERVER_DETECTION": "none",  # google-auth must not probe a cloud metadata host
    }
    with Server() as fake:
        config = out / "promptfooconfig.yaml"
        # JSON is YAML: no YAML library needed here.
        config.write_text(json.dumps(promptfoo_config(fake.url), indent=2) + "\n", "utf-8")
        (out / "out.json").unlink(missing_ok=True)
        cmd = [str(PROMPTFOO_DIR / "node_modules" / ".bin" / "promptfoo"), "eval"]
        cmd += ["-c", config.name, "-o", "out.json", "--no-cache", "-j", "1"]
        cmd += ["--no-table", "--no-progress-bar"]
        _run(cmd, env, cwd=out, ok_codes=(0, 100))  # 100: some assertions failed


EEE_FROM_INSPECT = ("first_error_a.eval", "misprompt_a.eval", "bbm_no_ids_a.eval")


def make_eee() -> None:
    """every-eval-ever 0.3.0's own converters over our Inspect logs (instance-level JSONL) and an
    lm-eval folder (aggregate only: its instance-level conversion rejects chat-templated
    samples), plus the package's two JSON schemas and its licence."""
    out = HERE / "eee"
    shutil.rmtree(out, ignore_errors=True)
    (out / "schema").mkdir(parents=True)
    eee = str(EEE_VENV / "bin" / "every_eval_ever")
    common = ["--source_organization_name", "fixtures", "--evaluator_relationship", "third_party"]
    for name in EEE_FROM_INSPECT:
        log = HERE / "inspect" / name
        _run(
            [eee, "convert", "inspect", "--log_path", str(log), "--output_dir", "data", *common],
            cwd=out,
        )
    lm_a = sorted((HERE / "lm_eval" / "out").iterdir())[0]
    _run(
        [eee, "convert", "lm_eval", "--log_path", str(lm_a), "--output_dir", "data", *common],
        cwd=out,
    )
    code = (
        "import importlib.metadata as m, pathlib, every_eval_ever.schemas as s;"
        "print(pathlib.Path(s.__file__).parent);"
        "print(m.distribution('every-eval-ever')._path)"
    )
    schemas, dist = _run([str(EEE_VENV / "bin" / "python"), "-c", code]).split()
    for name in ("instance_level_eval.schema.json", "eval.schema.json"):
        shutil.copy(Path(schemas) / name, out / "schema" / name)
    shutil.copy(Path(dist) / "licenses" / "LICENSE", out / "schema" / "LICENSE")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tools", nargs="*", default=[], help="inspect lm_eval promptfoo eee")
    parser.add_argument("--big", nargs=2, metavar=("N", "OUT"), help="write a big Inspect log")
    parser.add_argument(
        "--inspect-task", action="append", help="only this Inspect task (repeatable)"
    )
    args = parser.parse_args(argv)
    if args.big:
        make_big(int(args.big[0]), Path(args.big[1]))
        return 0
    steps: dict[str, Callable[[], None]] = {
        "inspect": lambda: make_inspect(args.inspect_task),
        "lm_eval": make_lm_eval,
        "promptfoo": make_promptfoo,
        "eee": make_eee,
    }
    for name in args.tools or list(steps):
        started = time.monotonic()
        steps[name]()
        print(f"{name}: done in {time.monotonic() - started:.1f}s", flush=True)
    return 0


def make_big(n: int, out: Path, source: Path = HERE / "inspect" / "first_error_a.eval") -> None:
    """Write an Inspect log of `n` samples (for the import benchmark; never committed).

    The samples are `source`'s, repeated with new ids (`<id>~<copy>`, epochs kept) and new
    uuids, written by Inspect's own recorder (the EvalRecorder that `inspect eval` and
    `write_eval_log` use) sample by sample with a flush every `n // 20` samples as in a real
    high-throughput run, so memory stays bounded. (`write_eval_log` on a 100,000-sample
    in-memory log would buffer every sample and de-duplicate the buffer on each append.)
    """
    if not HAVE_INSPECT:  # re-run this function inside the Inspect venv
        python = str(INSPECT_VENV / "bin" / "python")
        print(_run([python, __file__, "--big", str(n), str(out)]), end="")
        return
    import anyio

    started = time.monotonic()
    anyio.run(_write_big, n, out.resolve(), source)
    seconds = time.monotonic() - started
    size = out.stat().st_size
    print(f"wrote {n} samples to {out}: {size / 1e6:.1f} MB in {seconds:.1f} s")


async def _write_big(n: int, out: Path, source: Path) -> None:
    import shortuuid
    from inspect_ai.log import read_eval_log
    from inspect_ai.log._recorders.eval import EvalRecorder

    log = read_eval_log(str(source))
    base = log.samples or []
    epochs = max(s.epoch for s in base)
    copies = -(-n // len(base))
    ids = [f"{s.id}~{k}" for k in range(copies) for s in base if s.epoch == 1]
    n_ids = -(-n // epochs)
    spec = log.eval.model_copy(deep=True)
    spec.eval_id = shortuuid.uuid()
    spec.dataset.samples = n_ids
    spec.dataset.sample_ids = ids[:n_ids]
    out.unlink(missing_ok=True)
    recorder = EvalRecorder(str(out.parent))
    await recorder.log_init(spec, str(out), clean=True)
    await recorder.log_start(spec, log.plan)
    flush_every = max(10, n // 20)
    for i in range(n):
        sample = base[i % len(base)]
        copy = sample.model_copy(
            update={"id": f"{sample.id}~{i // len(base)}", "uuid": shortuuid.uuid()}
        )
        await recorder.log_sample(spec, copy)
        if (i + 1) % flush_every == 0:
            await recorder.flush(spec)
    assert log.results is not None
    results = log.results.model_copy(update={"total_samples": n_ids, "completed_samples": n_ids})
    await recorder.log_finish(spec, "success", log.stats, results, None)


if __name__ == "__main__":
    sys.exit(main())
