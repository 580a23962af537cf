"""BIG-Bench Mistake traces: read the released JSONL, validate every line, store one item per trace.

The released files (github.com/WHGTyen/BIG-Bench-Mistake) hold one JSON object per line with
`input, steps, answer, target, mistake_index` (0-based first wrong step, null = no mistake) and no
task field: the task comes from the file name (`word_sorting.jsonl`) or `--task`. A line may also
carry a `task` key (our sample does, since it mixes the five tasks in one file).

Bad input is reported as `PATH:LINE: why` for every bad line, and nothing is written.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core.engine.records import (
    ImportResult,
    RecordProblems,
    count_by,
    each_json_line,
    fields_of,
    item_rows_frame,
    non_empty_strings,
    not_an_object,
    step_index,
    write_item_set,
)
from core.engine.textio import InputFileError, missing_keys, read_text, string_list
from core.store import Store

BENCHMARK = "bbm"

# file-name slug -> the published tables' task name (Tables 4, 5, 9 of the paper)
TASKS: dict[str, str] = {
    "word_sorting": "Word sorting",
    "tracking_shuffled_objects": "Tracking shuffled objects",
    "logical_deduction": "Logical deduction",
    "multistep_arithmetic": "Multistep arithmetic",
    "dyck_languages": "Dyck languages",
}
TASK_ORDER: list[str] = list(TASKS.values())
_ALIASES = {label.lower(): slug for slug, label in TASKS.items()}
_ALIASES.update({slug.replace("_", "-"): slug for slug in TASKS})
_ALIASES.update(
    {
        "multi_step_arithmetic": "multistep_arithmetic",
        "multistep_arithmetic_two": "multistep_arithmetic",
        "tracking_shuffled_objects_three_objects": "tracking_shuffled_objects",
    }
)
REQUIRED_KEYS = ("input", "steps", "target", "mistake_index")


class ImportProblem(RecordProblems):
    """One or more bad lines; the message lists each as `PATH:LINE: why`."""


def canonical_task(name: str | None) -> str | None:
    """A task slug from a slug, a display name or a spelling variant; None when unknown."""
    if not name:
        return None
    key = name.strip().lower()
    if key in TASKS:
        return key
    key2 = key.replace(" ", "_").replace("-", "_")
    if key2 in TASKS:
        return key2
    return _ALIASES.get(key) or _ALIASES.get(key2)


def task_label(slug: str) -> str:
    return TASKS.get(slug, slug)


def task_from_filename(path: Path) -> str | None:
    """`word_sorting.jsonl` -> word_sorting; also finds a slug inside a longer name."""
    stem = path.name.split(".")[0].lower()
    direct = canonical_task(stem)
    if direct:
        return direct
    hits = [slug for slug in TASKS if slug in stem]
    return hits[0] if len(hits) == 1 else None


@dataclass
class Trace:
    """One validated trace."""

    item_id: str
    task: str
    input: str
    steps: list[str]
    answer: str | None
    target: str
    mistake_index: int | None
    source: str
    line: int
    group: str | None = None  # optional: the source traces share (intervals resample groups)

    @property
    def answer_correct(self) -> bool:
        """Correctness of the final answer (the paper's correct_ans): exact match, whitespace-trimmed."""
        return answer_is_correct(self.answer, self.target)

    def payload(self) -> dict[str, Any]:
        kept = ("task", "steps", "answer", "target", "mistake_index", "answer_correct", "source")
        return fields_of(self, *kept, "line") | (
            {"group": self.group} if self.group is not None else {}
        )


def answer_is_correct(answer: str | None, target: str | None) -> bool:
    """Exact match after trimming (reproduces Table 2's 45 / 482 correct_ans traces)."""
    if answer is None or target is None:
        return False
    return answer.strip() == target.strip()


def _check_record(obj: Any) -> list[str]:
    """Why a parsed line is not a valid trace (empty list = valid)."""
    if not isinstance(obj, dict):
        return not_an_object(obj)
    why = missing_keys(obj, REQUIRED_KEYS) + non_empty_strings(obj, "input")
    steps = obj.get("steps")
    if "steps" in obj:
        steps, problems = string_list(steps, "steps")
        why += problems
    if "target" in obj and not isinstance(obj["target"], str):
        why.append("'target' must be a string")
    if "answer" in obj and obj["answer"] is not None and not isinstance(obj["answer"], str):
        why.append("'answer' must be a string or null")
    group = obj.get("group")
    if group is not None and (isinstance(group, bool) or not isinstance(group, (str, int))):
        why.append(f"'group' must be a string, an integer or null, got {json.dumps(group)[:40]}")
    return why + step_index(obj, "mistake_index", steps)


def read_traces(  # noqa: C901 - one pass that collects every bad line's reasons, in file order
    paths: Iterable[Path | str], task: str | None = None
) -> list[Trace]:
    """Parse and validate all files; raise ImportProblem listing every bad line."""
    flag_task = None
    if task is not None:
        flag_task = canonical_task(task)
        if flag_task is None:
            raise ImportProblem([f"--task: unknown task {task!r}; known: {', '.join(TASKS)}"])
    traces: list[Trace] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for raw_path in paths:
        path = Path(raw_path)
        file_task = task_from_filename(path)
        stem = path.name.split(".")[0]
        try:
            text = read_text(path)
        except InputFileError as exc:
            problems.append(str(exc))
            continue
        n_records = 0
        for lineno, obj, bad in each_json_line(text, str(path)):
            n_records += 1
            if bad is not None:
                problems.append(bad)
                continue
            where = f"{path}:{lineno}"
            why = _check_record(obj)
            line_task = None
            if isinstance(obj, dict) and obj.get("task") is not None:
                line_task = canonical_task(str(obj["task"]))
                if line_task is None:
                    why.append(f"unknown task {obj['task']!r}; known: {', '.join(TASKS)}")
                elif flag_task and line_task != flag_task:
                    why.append(f"task {obj['task']!r} contradicts --task {task}")
            the_task = line_task or flag_task or file_task
            if the_task is None and not any("task" in w for w in why):
                why.append(
                    "cannot tell the task: name the file after it "
                    "(e.g. word_sorting.jsonl), pass --task, or add a 'task' key"
                )
            if why:
                problems.append(f"{where}: " + "; ".join(why))
                continue
            item_id = f"{stem}:{lineno}"
            if item_id in seen:
                problems.append(
                    f"{where}: item id {item_id} repeats {seen[item_id]} "
                    "(two files with the same name?)"
                )
                continue
            seen[item_id] = where
            traces.append(
                Trace(
                    item_id=item_id,
                    task=str(the_task),
                    input=obj["input"],
                    steps=list(obj["steps"]),
                    answer=obj.get("answer"),
                    target=obj["target"],
                    mistake_index=obj["mistake_index"],
                    source=path.name,
                    line=lineno,
                    group=str(obj["group"]) if obj.get("group") not in (None, "") else None,
                )
            )
        if n_records == 0:
            problems.append(f"{path}: no records")
    if problems:
        raise ImportProblem(problems)
    return traces


def items_frame(traces: list[Trace], item_set: str) -> pd.DataFrame:
    """Rows for the items table."""
    rows = [
        {
            "item_id": t.item_id,
            "is_error": t.mistake_index is not None,
            "primary_category": t.task,
            "prompt": t.input,
            "gold": t.target,
            "payload": t.payload(),
        }
        for t in traces
    ]
    return item_rows_frame(item_set, BENCHMARK, rows)


def set_info(traces: list[Trace]) -> dict[str, Any]:
    by_task = count_by(
        traces,
        lambda t: t.task,
        lambda t: {
            "traces": True,
            "with_mistake": t.mistake_index is not None,
            "answer_correct": t.answer_correct,
        },
    )
    return {
        "tasks": by_task,
        "with_mistake": sum(t.mistake_index is not None for t in traces),
        "without_mistake": sum(t.mistake_index is None for t in traces),
    }


def store_traces(
    store: Store,
    traces: list[Trace],
    item_set: str,
    origin: str,
    dyck_sample: dict[str, Any] | None = None,
) -> ImportResult:
    """Write the set in one transaction, replacing a set of the same name (bbm only)."""
    frame = items_frame(traces, item_set)
    info = set_info(traces)
    if dyck_sample:
        info["dyck_sample"] = dyck_sample
    return write_item_set(
        store, BENCHMARK, item_set, frame, origin=origin, info=info, problem=ImportProblem
    )


# The paper's Table 2: the Dyck languages sample behind every Dyck cell (its † note).
PAPER_DYCK_SAMPLE = {"traces": 592, "correct_ans": 88, "incorrect_ans": 504, "with_mistake": 545}
INCORRECT_SHARE = 0.85  # 255 of 300 for the other four tasks


def dyck_sample_sizes(n: int) -> tuple[int, int]:
    """(correct_ans, incorrect_ans) for an n-trace sample at the paper's 15/85 proportions.

    Incorrect-answer traces are rounded up, as the paper's 592 = 88 + 504 shows (0.85 × 592 =
    503.2 -> 504, i.e. every incorrect-answer trace of the release)."""
    incorrect = math.ceil(round(INCORRECT_SHARE * n, 9))
    return n - incorrect, incorrect


def subsample_dyck(traces: list[Trace], n: int, seed: int) -> tuple[list[Trace], dict[str, Any]]:
    """Keep every non-Dyck trace and n Dyck traces drawn at 15/85 correct/incorrect final answers.

    A seeded draw without replacement within each group; the kept traces stay in file order.
    Not the paper's exact sample (it did not publish which traces it drew)."""
    dyck = [t for t in traces if t.task == "dyck_languages"]
    if not dyck:
        raise ImportProblem(["--dyck-sample: none of the imported traces is Dyck languages"])
    if n <= 0:
        raise ImportProblem([f"--dyck-sample: {n} is not a positive number of traces"])
    want_correct, want_incorrect = dyck_sample_sizes(n)
    correct = [t for t in dyck if t.answer_correct]
    incorrect = [t for t in dyck if not t.answer_correct]
    if want_correct > len(correct) or want_incorrect > len(incorrect):
        raise ImportProblem(
            [
                f"--dyck-sample {n}: needs {want_correct} correct-answer and {want_incorrect} "
                f"incorrect-answer Dyck traces; the files have {len(correct)} and {len(incorrect)}"
            ]
        )
    rng = random.Random(seed)
    chosen = {id(t) for t in rng.sample(correct, want_correct)}
    chosen |= {id(t) for t in rng.sample(incorrect, want_incorrect)}
    kept = [t for t in traces if t.task != "dyck_languages" or id(t) in chosen]
    info = {
        "traces": n,
        "seed": seed,
        "from": len(dyck),
        "correct_ans": want_correct,
        "incorrect_ans": want_incorrect,
        "with_mistake": sum(
            t.mistake_index is not None for t in kept if t.task == "dyck_languages"
        ),
        "paper": dict(PAPER_DYCK_SAMPLE),
        "note": "drawn at the paper's 15/85 proportions; not the paper's exact sample",
    }
    return kept, info


def import_files(
    store: Store,
    paths: Sequence[Path | str],
    name: str | None = None,
    task: str | None = None,
    dyck_sample: int | None = None,
    seed: int = 0,
) -> ImportResult:
    """Validate everything first, then write everything at once.

    `dyck_sample`: keep only that many Dyck-languages traces (see subsample_dyck)."""
    traces = read_traces(paths, task=task)
    sample_info = None
    if dyck_sample is not None:
        traces, sample_info = subsample_dyck(traces, dyck_sample, seed)
    if name is None:
        stems = sorted({Path(p).name.split(".")[0] for p in paths})
        name = "bbm-" + "+".join(stems) if len(stems) <= 3 else f"bbm-{len(stems)}-files"
        if sample_info:
            name += f"-dyck{dyck_sample}-seed{seed}"
    origin = ", ".join(str(Path(p)) for p in paths)
    return store_traces(store, traces, name, origin, dyck_sample=sample_info)


def import_builtin(store: Store, path: Path, name: str) -> int:
    """`init` hook: (re)load the shipped sample under its fixed name; returns the item count."""
    traces = read_traces([path])
    return store_traces(store, traces, name, "builtin").n_items


def import_bytes(store: Store, data: bytes, filename: str, name: str) -> int:
    """The Import page's upload: the bytes as a file of that name (the task comes from the file
    name), validated and written like `import bbm`; problems name the uploaded file."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(filename).name
        path.write_bytes(data)
        try:
            return import_files(store, [path], name).n_items
        except ImportProblem as exc:
            raise ImportProblem(
                [p.replace(str(path), Path(filename).name) for p in exc.problems]
            ) from None
