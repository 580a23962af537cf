"""The runner Task for BIG-Bench Mistake: one work unit per trace, variant = method.

direct_trace asks once with the whole trace. direct_step / cot_step ask once per step with the
partial trace up to that step and stop at the first "No" (the paper ignores later steps, so asking
them would only cost money). Per-step answers, the parse status and the predicted index go into
`responses.scores`; metrics are recomputed from them and the items, never stored as truth.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from core.benchmarks.bbm.parse import (
    first_no,
    parse_step_answer,
    parse_structured_trace,
    parse_trace_answer,
)
from core.benchmarks.bbm.prompts import (
    METHODS,
    STEP_STRUCTURED_KEY,
    STRUCTURED_KEY,
    load_template,
    response_format,
    step_messages,
    step_values,
    trace_messages,
    trace_values,
)
from core.benchmarks.bbm.record import to_result
from core.engine.client import CallFailed
from core.engine.results import Response, Result
from core.engine.task import UnitResult, WorkUnit
from core.engine.templates import Template, is_structured

BENCHMARK = "bbm"
DEFAULT_MAX_TOKENS = {"direct_trace": 64, "direct_step": 16, "cot_step": 1024}
# cot_step's default: twice the longest example answer the prompt shows, never below the floor
# (512 cut the paper's own ~2,200-character chain-of-thought answers mid-sentence)
COT_MAX_TOKENS_FLOOR = DEFAULT_MAX_TOKENS["cot_step"]
CHARS_PER_TOKEN = 4  # a rough English ratio: no tokenizer of the model under test is at hand
TRUNCATED = "truncated"


def cot_max_tokens(example_answers: list[str]) -> int:
    """Default max_tokens for cot_step: 2 × the longest example answer (in estimated tokens),
    at least COT_MAX_TOKENS_FLOOR — an answer like the examples then fits with room to spare."""
    longest = max((len(a) for a in example_answers), default=0)
    return max(COT_MAX_TOKENS_FLOOR, 2 * -(-longest // CHARS_PER_TOKEN))


def item_payload(item: dict[str, Any]) -> dict[str, Any]:
    payload = item.get("payload")
    if isinstance(payload, str):
        payload = json.loads(payload)
    return payload or {}


@dataclass
class _Acc:
    """Accounting summed over the calls of one unit."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float | None = None
    attempts: int = 0
    all_cached: bool = True
    calls: int = 0

    def add(self, result: Any) -> None:
        self.prompt_tokens += int(result.prompt_tokens or 0)
        self.completion_tokens += int(result.completion_tokens or 0)
        self.latency_ms += float(result.latency_ms or 0.0)
        if result.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + float(result.cost_usd)
        self.attempts += int(getattr(result, "attempts", 1) or 1)
        self.all_cached = self.all_cached and bool(result.cached)
        self.calls += 1

    def fields(self) -> dict[str, Any]:
        return dict(
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            latency_ms=self.latency_ms,
            cost_usd=self.cost_usd,
            attempts=self.attempts,
            cached=self.all_cached and self.calls > 0,
        )


UNREAD = ("unparsable", "ambiguous")  # step answers with no verdict to use


def read_step(raw: str | None, method: str, finish_reason: str | None = None) -> str:
    """One step answer: 'yes' / 'no' / 'unparsable', or 'truncated' when the answer was cut at
    max_tokens and has no verdict to read. A cot_step answer cut short is always truncated: its
    verdict comes last, so whatever its reasoning said before the cut is not the answer."""
    answer = parse_step_answer(raw, reasoning=method == "cot_step")
    if finish_reason == "length" and (method == "cot_step" or answer in UNREAD):
        return TRUNCATED
    return answer


def scan_stops(answer: str) -> bool:
    """The step scan stops at the first "No" (the paper's rule) and at a truncated answer: the
    steps after it are not asked, as its verdict is unknown (reading it as "Yes" and going on
    would bias the run towards "no mistake")."""
    return answer in ("no", TRUNCATED)


def trace_scores(
    method: str,
    steps: list[str],
    gold_index: int | None,
    raw_answers: list[str],
    finish_reasons: list[str | None] | None = None,
    structured: bool = False,
) -> dict[str, Any]:
    """Parse the raw answer(s) of one trace into the stored scores (pure; tested directly).

    direct_trace: one raw answer. Step methods: one raw answer per asked step, in order.
    Unparsable step answers do not stop the scan (only a "No" does); if every asked step was
    unparsable the trace answer is unparsable, if some were it is `partial`. A truncated
    answer (`finish_reasons[i] == "length"`, see read_step) ends the scan: when it comes before
    any "No" the trace is `truncated` (unscored, counted apart from unparsable).

    `structured` (a structured-output template, direct_trace only): the answer is read as JSON
    (`json` 'ok'); JSON that cannot be read falls back to the text parser, recorded as `json`
    'invalid' with `json_error` (and `truncated` when it was cut and the text says nothing).
    """
    n = len(steps)
    reasons = list(finish_reasons or [])
    reasons += [None] * (len(raw_answers) - len(reasons))
    extra: dict[str, Any] = {}
    if method == "direct_trace":
        raw = raw_answers[0] if raw_answers else None
        parsed_json, why = parse_structured_trace(raw, n) if structured else (None, None)
        if parsed_json is not None:
            parsed, extra = parsed_json, {"json": "ok"}
        else:
            parsed = parse_trace_answer(raw, n)
            if structured:
                extra = {"json": "invalid", "json_error": why}
        status = parsed.status
        # cut at max_tokens with no verdict to read: the reader says unparsable, or ambiguous
        # when the cut text resolves nothing (its claims unfinished)
        if status in UNREAD and reasons and reasons[0] == "length":
            status = TRUNCATED
        pred_index = parsed.index if status == "ok" else None
        scores: dict[str, Any] = {
            "method": method,
            "parse_status": status,
            "parse_rule": parsed.rule,
            "predicted_step": parsed.step,
            "predicted_index": pred_index,
            "step_answers": None,
            "n_unparsable_steps": None,
            **extra,
        }
    else:
        answers = [read_step(r, method, f) for r, f in zip(raw_answers, reasons)]
        stop = next((i for i, a in enumerate(answers) if scan_stops(a)), len(answers))
        pred_index = first_no(answers[: stop + 1])
        n_bad = sum(a in UNREAD for a in answers)
        if stop < len(answers) and answers[stop] == TRUNCATED:
            status = TRUNCATED
        elif answers and n_bad == len(answers):
            status = "ambiguous" if "ambiguous" in answers else "unparsable"
        elif n_bad:
            status = "partial"
        else:
            status = "ok" if answers else "unparsable"
        scores = {
            "method": method,
            "parse_status": status,
            "parse_rule": "first_no",
            "predicted_step": None if pred_index is None else pred_index + 1,
            "predicted_index": pred_index,
            "step_answers": answers,
            "n_unparsable_steps": n_bad,
        }
        if status in ("unparsable", "ambiguous", TRUNCATED):
            scores["predicted_index"] = None
            scores["predicted_step"] = None
    from core.benchmarks.bbm.metrics import location_correct

    scores["gold_index"] = gold_index
    scores["location_correct"] = location_correct(
        gold_index, scores["predicted_index"], scores["parse_status"]
    )
    return scores


@dataclass(frozen=True)
class Exemplar:
    """A trace with its gold annotation, shown to the model as a solved example."""

    item_id: str
    input: str
    steps: tuple[str, ...]
    mistake_index: int | None


def load_exemplars(store: Any, item_set: str) -> dict[str, list[Exemplar]]:
    """Exemplars per task slug from an item set, in file order (deterministic)."""
    from core.benchmarks.bbm.queries import natural_key

    rows = store.rows(
        "SELECT item_id, primary_category, prompt, payload FROM items "
        "WHERE item_set = ? AND benchmark = 'bbm'",
        [item_set],
    )
    out: dict[str, list[Exemplar]] = {}
    for item_id, task, prompt, payload in sorted(rows, key=lambda r: natural_key(r[0])):
        p = json.loads(payload) if isinstance(payload, str) else (payload or {})
        out.setdefault(task, []).append(
            Exemplar(item_id, prompt or "", tuple(p.get("steps") or ()), p.get("mistake_index"))
        )
    return out


@dataclass
class BbmTask:
    """Runner Task (core.engine.runner.Task protocol) for one method.

    `shots` > 0 puts that many solved traces of the same task (from `exemplars`, another item
    set — by default the team-written sample) before the question, as user/assistant turns:
    direct_trace answers with the gold step number or "No"; the step methods show the gold
    mistake step (answer "No") or, for a trace without one, its last step ("Yes"). The paper
    used 3-shot prompts; ours are zero-shot unless asked. A trace is never its own exemplar.
    `paper` (task slug -> PaperPrompt) replaces our template by the paper's own messages.
    """

    method: str
    template: str | None = None  # full id 'bbm/<method>.vN'; None = the method's v1
    loaded: Template = field(init=False, repr=False)  # the template file `template` names
    max_tokens: int | None = None
    temperature: float = 0.0
    shots: int = 0
    exemplars: dict[str, list[Exemplar]] = field(default_factory=dict)
    # the paper's own prompts per task slug (core.benchmarks.bbm.paper_prompts); empty = ours
    paper: dict[str, Any] = field(default_factory=dict)
    benchmark: str = BENCHMARK
    needs_judge: bool = False

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; known: {', '.join(METHODS)}")
        self.loaded = load_template(self.method, self.template)
        if self.max_tokens is None:
            self.max_tokens = (
                cot_max_tokens(self.example_answers())
                if self.method == "cot_step"
                else DEFAULT_MAX_TOKENS[self.method]
            )

    def example_answers(self) -> list[str]:
        """The answers the prompt shows as examples: the paper's assistant turns (its 3-shot
        chain-of-thought answers) and our exemplars' answers."""
        out = [
            str(m.get("content") or "")
            for prompt in self.paper.values()
            for m in getattr(prompt, "messages", ())
            if m.get("role") == "assistant"
        ]
        if self.shots:
            out += ["Answer: Yes", "Answer: No"]
        return out

    @property
    def structured(self) -> bool:
        """A structured-output template (NOT the paper's protocol): JSON schema, JSON answers."""
        return not self.paper and is_structured(self.loaded.id)

    @property
    def template_id(self) -> str:
        if self.paper:
            from core.benchmarks.bbm.paper_prompts import template_id

            return template_id(self.method)
        base = self.loaded.id
        return f"{base}+{self.shots}shot" if self.shots else base

    def shot_turns(self, task: str, question: str) -> list[tuple[dict[str, str], str]]:
        """(template values, gold answer) for up to `shots` exemplars of this task."""
        if not self.shots:
            return []
        chosen = [e for e in self.exemplars.get(task, []) if e.input != question][: self.shots]
        turns = []
        for e in chosen:
            steps = list(e.steps)
            if self.method == "direct_trace":
                answer = "No" if e.mistake_index is None else str(e.mistake_index + 1)
                if self.structured:  # the exemplar answers the way the schema asks
                    step = None if e.mistake_index is None else e.mistake_index + 1
                    answer = json.dumps({STRUCTURED_KEY: step})
                turns.append((trace_values(e.input, steps), answer))
            else:
                step = len(steps) if e.mistake_index is None else e.mistake_index + 1
                verdict = "Yes" if e.mistake_index is None else "No"
                answer = f"Answer: {verdict}" if self.method == "cot_step" else verdict
                if self.structured:  # the exemplar answers the way the schema asks
                    answer = json.dumps({STEP_STRUCTURED_KEY: e.mistake_index is None})
                turns.append((step_values(e.input, steps, step), answer))
        return turns

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        return [WorkUnit(item_id, self.method) for item_id in items["item_id"]]

    async def process(
        self,
        unit: Any,  # noqa: ARG002 - the Task protocol; one unit per item here (self.method)
        item: dict[str, Any],
        ctx: Any,
    ) -> UnitResult:

        payload = item_payload(item)
        steps: list[str] = list(payload.get("steps") or [])
        question = item.get("prompt") or ""
        gold = payload.get("mistake_index")
        task = str(item.get("primary_category") or payload.get("task") or "")
        shots = self.shot_turns(task, question)
        paper = self.paper.get(task) if self.paper else None
        if self.paper and paper is None:
            raise ValueError(f"no paper prompt loaded for task {task!r}")
        acc = _Acc()
        raw: list[str] = []
        finish: list[str | None] = []
        last_messages: list[dict[str, str]] = []
        error: str | None = None
        fmt = None if paper else response_format(self.loaded, len(steps))

        async def ask(messages: list[dict[str, str]]) -> None:
            """One call: its answer, token counts and finish reason kept; a failed call raises
            CallFailed with `last_messages` naming what was asked."""
            nonlocal last_messages
            last_messages = messages
            result = await ctx.model.chat(
                messages,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                **({"response_format": fmt} if fmt else {}),
            )
            acc.add(result)
            raw.append(result.text or "")
            finish.append(result.finish_reason)

        try:
            if self.method == "direct_trace":
                await ask(
                    paper.render(question, steps)
                    if paper
                    else trace_messages(self.loaded, question, steps, shots)
                )
            else:
                for k in range(1, len(steps) + 1):
                    await ask(
                        paper.render(question, steps, k)
                        if paper
                        else step_messages(self.loaded, question, steps, k, shots)
                    )
                    if scan_stops(read_step(raw[-1], self.method, finish[-1])):
                        break
        except CallFailed as exc:
            error = f"{type(exc).__name__}: {exc}"
            acc.attempts += int(getattr(exc, "attempts", 0) or 0)
        scores = trace_scores(self.method, steps, gold, raw, finish, self.structured)
        scores["finish_reasons"] = finish
        scores["n_calls"] = acc.calls
        scores["shots"] = len(shots)
        scores["raw_answers"] = raw if self.method != "direct_trace" else None
        if error is not None:
            scores["failed_at_step"] = len(raw) + 1
        if self.method == "direct_trace":
            text = raw[0] if raw else None
        else:
            text = "\n\n".join(f"[Thought {i}] {r}" for i, r in enumerate(raw, start=1)) or None
        response = Response(
            messages=last_messages,
            text=text,
            status="failed" if error else "ok",
            error=error,
            scores=scores,
            **acc.fields(),
        )
        return UnitResult(response, None if error else to_result(scores))


def score_stored(item: dict[str, Any], response: dict[str, Any], run: dict[str, Any]) -> Result:
    """`rescore`: the record of a stored response, re-read with today's parser (no model call).

    direct_trace re-parses the stored answer; the step methods re-parse the stored per-step
    answers (`raw_answers`). Steps after the first "No" were never asked, so a parser change
    that moves the first "No" later cannot see them: the scan then ends at the last step asked.
    A run of a structured-output template (its stored template_id) is read as JSON again.
    """
    stored = response.get("scores")
    stored = json.loads(stored) if isinstance(stored, str) else dict(stored or {})
    payload = item_payload(item)
    steps = list(payload.get("steps") or [])
    method = str(item.get("variant") or stored.get("method"))
    raw = (
        [response.get("response") or ""]
        if method == "direct_trace"
        else list(stored.get("raw_answers") or [])
    )
    reasons = stored.get("finish_reasons")
    structured = is_structured(run.get("template_id"))
    scores = trace_scores(method, steps, payload.get("mistake_index"), raw, reasons, structured)
    scores["finish_reasons"] = reasons
    scores["n_calls"] = stored.get("n_calls")
    scores["raw_answers"] = stored.get("raw_answers")
    return to_result(scores)
