"""`python -m core run misprompt`: ask a model every item of a set under a setting, then judge.

A Task for core.runner: one unit per item (variant = the setting). process() sends the
setting's messages (passive mode: wrapped in the error-handling instruction), then asks the
judge for the six labels; the response and its verdict are returned together so the runner
writes them in one transaction. A failed judge call leaves the unit unfinished: re-running the
run name processes that item again (model and judge, asked afresh by the runner).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from core.misprompt import judge as judge_mod
from core.misprompt import prompts
from core.client import CallFailed
from core.results import Response, Verdict
from core.runner import (
    RunContext,
    UnitResult,
    WorkUnit,
    add_run_args,
    execute_run,
    spec_from_args,
)
from core.storage import DatabaseError, Store

BENCHMARK = "misprompt"
DEFAULT_MAX_TOKENS = 512
WEAK_MODEL_HINTS = ("smollm",)


def is_weak(endpoint: Any) -> bool:
    """The shipped SmolLM2 endpoint, or any endpoint serving a SmolLM model."""
    if endpoint is None:
        return False
    return bool(getattr(endpoint, "weak", False)) or any(
        h in str(getattr(endpoint, "model", "")).lower() for h in WEAK_MODEL_HINTS)


@dataclass
class MispromptTask:
    """Model call + judge call per item; see the module docstring."""

    setting: str = "zero-shot"
    passive: bool = False
    temperature: float = 0.0
    max_tokens: int = DEFAULT_MAX_TOKENS
    judge_max_tokens: int = judge_mod.JUDGE_MAX_TOKENS
    benchmark: str = BENCHMARK
    needs_judge: bool = True
    judge_template: str = prompts.DEFAULT_JUDGE_TEMPLATE
    _exemplar_pool: tuple = field(default=(), repr=False)

    def __post_init__(self) -> None:
        prompts.check_setting(self.setting)
        prompts.judge_version(self.judge_template)  # an unknown template fails before the run
        self._exemplar_pool = prompts.exemplar_pool()

    @property
    def mode(self) -> str:
        return "passive" if self.passive else "proactive"

    @property
    def template_id(self) -> str:
        return prompts.template_id(self.setting, self.passive)

    def params(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "max_tokens": self.max_tokens,
                "judge_max_tokens": self.judge_max_tokens,
                "judge_template": prompts.judge_template_id(self.judge_template),
                "n_exemplars": prompts.N_EXEMPLARS[self.setting]}

    def units(self, items: pd.DataFrame) -> list[WorkUnit]:
        return [WorkUnit(str(i), self.setting) for i in items["item_id"]]

    def messages(self, item: dict) -> tuple[list[dict[str, str]], list[str]]:
        exemplars = prompts.pick_exemplars(item, prompts.N_EXEMPLARS[self.setting],
                                           self._exemplar_pool)
        return (prompts.build_messages(item, self.setting, self.passive, exemplars),
                [e.item_id for e in exemplars])

    async def process(self, unit: WorkUnit, item: dict, ctx: RunContext) -> UnitResult:
        messages, exemplar_ids = self.messages(item)
        try:
            answer = await ctx.model.chat(messages, temperature=self.temperature,
                                          max_tokens=self.max_tokens)
        except CallFailed as exc:
            return UnitResult(Response.failed(str(exc), attempts=exc.attempts, messages=messages))
        # item fields (category, is_error) live in items; scores keep what the run added
        response = Response.answered(messages, answer, scores={
            "exemplars": exemplar_ids, "finish_reason": answer.finish_reason})
        return UnitResult(response, await self.judge(item, response, ctx))

    def warnings(self, items: pd.DataFrame) -> list[str]:
        """Said on stderr before the first request (the runner asks, after its checks)."""
        from core.sampling import n_controls

        return [NO_CONTROLS] if len(items) and n_controls(items) == 0 else []

    async def judge(self, item: dict, response: Response, ctx: RunContext) -> Verdict:
        """The default judging of one response, right after it (`rescore` does the same later
        with any judge and template, over stored responses)."""
        verdict = await judge_mod.judge_response(ctx.judge or ctx.model, item,
                                                 response.text or "",
                                                 max_tokens=self.judge_max_tokens,
                                                 template=self.judge_template)
        return Verdict.from_row(verdict)


NO_CONTROLS = ("this run has no control (error-free) items, so its false positives and precision "
               "are unknown: its numbers are recall, not F1, and are labelled so")


def inconsistent_count(store: Store, run_id: str) -> int:
    return int(store.scalar("SELECT count(*) FROM verdicts WHERE run_id = ? AND inconsistent",
                            [run_id]) or 0)


# -- CLI --------------------------------------------------------------------------------------

def configure(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
    parser.description = (
        "Run Mis-prompt items against a model under a setting, then have a judge label every "
        "response (six labels, SPEC §1). The judge defaults to the SAME endpoint as the model "
        "when no --judge-* flag is given; with the default local SmolLM2 that is a weak judge, "
        "so pass --judge-endpoint for real numbers. Re-run with the same --run-name to resume.")
    parser.add_argument("--setting", choices=prompts.SETTINGS, default="zero-shot",
                        help="zero-shot = the prompt alone (the proactive test); one-/three-shot"
                             " = exemplar erroneous prompts with ground truths first; cot = "
                             "reason step by step (default: zero-shot)")
    parser.add_argument("--passive", action="store_true",
                        help="wrap each prompt in the explicit error-handling instruction "
                             "(runs.mode = passive; the variant stays the setting)")
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="model temperature (default 0, as in the paper)")
    parser.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS,
                        help=f"model max tokens (default {DEFAULT_MAX_TOKENS})")
    parser.add_argument("--judge-max-tokens", type=int, default=judge_mod.JUDGE_MAX_TOKENS,
                        help=f"judge max tokens (default {judge_mod.JUDGE_MAX_TOKENS})")
    parser.add_argument("--judge-template", choices=prompts.judge_templates(),
                        default=prompts.DEFAULT_JUDGE_TEMPLATE,
                        help="judge prompt: judge.v2 (default) carries the paper's C.1 "
                             "definitions (accurate identification = right category AND "
                             "location; guidance = how to avoid similar errors) and reads both "
                             "'accurate' labels alike on controls; judge.v1 is the earlier "
                             "wording (stored as runs.params.judge_template)")
    add_run_args(parser, judge=True)


def main(args: argparse.Namespace) -> int:
    task = MispromptTask(setting=args.setting, passive=args.passive,
                         temperature=args.temperature, max_tokens=args.max_tokens,
                         judge_max_tokens=args.judge_max_tokens,
                         judge_template=args.judge_template)
    spec = spec_from_args(args, BENCHMARK, setting=args.setting, mode=task.mode,
                          template_id=task.template_id, params=task.params())
    weak_model, weak_judge = is_weak(spec.endpoint), is_weak(spec.judge or spec.endpoint)
    spec.params.update(weak_judge=weak_judge)
    if weak_model or weak_judge:
        # runs.weak_model follows the endpoint's flag: a weak judge makes the verdicts weak too
        spec = replace(spec, endpoint=replace(spec.endpoint, weak=True))
        print("note: a weak model (SmolLM2) is answering or judging; its output shows the "
              "mechanics, not what a capable model would do", file=sys.stderr)
    store = Store.open(args.db)
    try:
        summary = execute_run(store, spec, task, progress=not args.quiet)
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    n_bad = inconsistent_count(store, spec.run_id)
    print(summary)
    print(f"inconsistent verdicts (an 'accurate' label true while its 'attempt' is false; "
          f"kept as the judge said): {n_bad}")
    return 0 if summary.status in ("done", "cancelled") else 1
