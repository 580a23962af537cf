"""What a benchmark tells the playground (`PlaygroundRole`) and how the playground finds it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core import registry
from core.engine.endpoints import (
    Endpoint,
    is_weak,
)
from core.engine.results import Result

MODES = ("proactive", "passive")
KIND = "playground"
DEFAULT_MAX_TOKENS = 400
JUDGINGS = ("human", "llm", "later")  # who judges an exchange: a person, the LLM now, LLM later
TICK_S = 0.5  # how often a phase reports its elapsed time
OnToken = Callable[[str], Any]
OnTick = Callable[[str, float], Any]  # (phase, elapsed seconds)


# ---------------------------------------------------------------------------------------------
# The benchmark's part
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlaygroundRole:
    """What a benchmark tells the playground (registered as `Benchmark.playground`).

    messages(item, setting, passive): the chat messages of one mode under a setting.
    judge(client, item, response_text, *, template): async, one answer's `Result` (the same
    contract as `Judged.judge`); `labels` of the Result are the benchmark's named labels.
    judge_template_id(name or None): the stored id ("bench/judge.v2"; None = the default).
    template_id(setting, passive): the stored id of the prompt template of one mode.
    rationale(result, label): the judge's reason for one label ("" if none).
    warning(result): a note on a verdict worth reading (e.g. inconsistent labels), or None.
    label_help: one line per label for a person labelling by hand.
    """

    settings: tuple[str, ...]
    default_setting: str
    messages: Callable[[Mapping[str, Any], str, bool], list[dict[str, str]]]
    judge: Callable[..., Awaitable[Result]]
    judge_templates: Callable[[], list[str]]
    default_judge_template: str
    judge_template_id: Callable[[str | None], str]
    template_id: Callable[[str, bool], str]
    rationale: Callable[[Result, str], str]
    warning: Callable[[Result], str | None] = lambda _result: None
    label_help: Mapping[str, str] = field(default_factory=dict)
    setting_label: str = "Setting"
    judge_template_help: str = ""
    # the judge template of exchanges saved before the template was recorded with them
    legacy_judge_template: str | None = None


def playground_benchmarks() -> list[registry.Benchmark]:
    """The registered benchmarks that offer a playground, in registry order."""
    return [b for b in registry.BENCHMARKS.values() if b.roles.playground]


def playground_benchmark(name: str | None = None) -> registry.Benchmark:
    """The benchmark named (if it offers a playground), else the first that does."""
    offered = playground_benchmarks()
    if not offered:
        raise LookupError("no registered benchmark offers a playground")
    return next((b for b in offered if b.name == name), offered[0])


def role_of(bench: registry.Benchmark) -> PlaygroundRole:
    """A benchmark's playground role, resolved from its descriptor."""
    if not bench.roles.playground:
        raise LookupError(f"{bench.label} offers no playground")
    role = bench.roles.playground()
    if not isinstance(role, PlaygroundRole):
        raise TypeError(f"{bench.label}'s playground is not a PlaygroundRole")
    return role


def label_names(bench: registry.Benchmark) -> tuple[str, ...]:
    """The benchmark's judge labels, in the order its tables show them."""
    return tuple(bench.label_letters())


def default_judging(judge: Endpoint | None) -> str:
    """A person judges when the judge endpoint is weak (SmolLM2 marks every label true)."""
    return "human" if is_weak(judge) else "llm"
