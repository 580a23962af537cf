"""The playground: one prompt, sent proactive (as is) and passive (with the explicit
error-handling instruction) side by side, streamed, then judged — saved as a playground run.

What researchers show colleagues (issue 5): a model answers a flawed question as if nothing were
wrong unless told to check it. One exchange = one run (`runs.kind = 'playground'`) with two
responses (variants `proactive` and `passive`) and their two results, so it can be reopened and
exported like any run. The run's `item_set` is left empty and the item lives in `params.item`,
so a one-item demo never enters the F1 tables of real runs.

Generic through the registry (issue 16): a benchmark offers a playground by naming a
`PlaygroundRole` in its descriptor (`Benchmark.roles.playground`): how its prompts are
built in both modes, its LLM judge (returning the generic `Result`), its judge templates, and
how its labels read to people. This module knows no benchmark; `playground_benchmark` picks the
one asked for, or the first registered one that offers a playground.

Who judges (`JUDGINGS`): a person ("human": the page shows the ground truth beside both answers
and saves the labels as human labels of the exchange — the honest choice when the judge
endpoint is the shipped SmolLM2, which marks everything true), the LLM judge right away ("llm",
with elapsed-time ticks for a timer), or the LLM judge later ("later": saved unjudged;
`judge_exchange` judges a saved exchange).

When an endpoint cannot be reached, `run_exchange` returns an `EndpointProblem` naming it and
saying how to configure one, instead of raising. `collapse_text` shortens long or repetitive
answers for display (a tiny model may repeat one line thirty times).

The package is split along its seams; `from core.services import playground` and
`playground.<name>` reach every public name: `roles` (PlaygroundRole and finding it), `items`,
`exchange` (running one exchange), `storage` (saving, judging later, loading, human labels),
`display` (collapsed text, verdict chips).
"""

from __future__ import annotations

from core.services.playground.display import (
    PREVIEW_CHARS,
    Collapsed,
    collapse_text,
    judge_is_weak,
    verdict_badges,
    verdict_warning,
)
from core.services.playground.exchange import (
    EndpointProblem,
    Exchange,
    Side,
    build_sides,
    configure_help,
    new_run_id,
    run_exchange,
    run_exchange_async,
)
from core.services.playground.items import (
    custom_item,
    example_items,
    item_from_row,
)
from core.services.playground.roles import (
    DEFAULT_MAX_TOKENS,
    JUDGINGS,
    KIND,
    MODES,
    TICK_S,
    OnTick,
    OnToken,
    PlaygroundRole,
    default_judging,
    label_names,
    playground_benchmark,
    playground_benchmarks,
    role_of,
)
from core.services.playground.storage import (
    human_labels,
    judge_exchange,
    judge_exchange_async,
    list_exchanges,
    load_exchange,
    save_exchange,
    save_human_labels,
)

__all__ = [
    "MODES",
    "KIND",
    "DEFAULT_MAX_TOKENS",
    "JUDGINGS",
    "TICK_S",
    "OnToken",
    "OnTick",
    "PlaygroundRole",
    "playground_benchmarks",
    "playground_benchmark",
    "role_of",
    "label_names",
    "default_judging",
    "custom_item",
    "example_items",
    "item_from_row",
    "configure_help",
    "EndpointProblem",
    "Side",
    "Exchange",
    "new_run_id",
    "build_sides",
    "run_exchange_async",
    "run_exchange",
    "save_exchange",
    "judge_exchange_async",
    "judge_exchange",
    "save_human_labels",
    "human_labels",
    "list_exchanges",
    "load_exchange",
    "PREVIEW_CHARS",
    "Collapsed",
    "collapse_text",
    "verdict_badges",
    "judge_is_weak",
    "verdict_warning",
]
