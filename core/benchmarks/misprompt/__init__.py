"""Mis-prompt — proactive error handling: does a model notice an erroneous prompt on its own?
(SPEC §1). An LLM judge gives six labels per response; F1 per category against controls.

Modules: taxonomy (categories), items (import), prompts (settings, judge templates), task
(runner Task), judge (the LLM judge), metrics (F1, bootstrap, run counts cache), agreement
(judge vs judge), consistency (published-table checks), queries (page data), charts (figures),
playground (its playground role), audit (human labels), synth (synthetic runs for benchmarks), cli (commands).

The names below are imported on first use: importing a submodule (the results page imports
queries and charts) runs this file first, and `task` pulls in the `openai` client, ~0.4-1.3 s
of a cold page visit that never calls a model (measured with `python -X importtime`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.benchmarks.misprompt.agreement import judging_agreement
    from core.benchmarks.misprompt.items import ItemImportError, import_bytes, import_file
    from core.benchmarks.misprompt.judge import judge_response, parse_verdict
    from core.benchmarks.misprompt.metrics import metrics_for_source, run_metrics
    from core.benchmarks.misprompt.task import MispromptTask
    from core.benchmarks.misprompt.taxonomy import PRIMARY, SECONDARY

# public name -> the submodule that defines it
_LAZY = {
    "judging_agreement": "agreement",
    "ItemImportError": "items",
    "import_bytes": "items",
    "import_file": "items",
    "judge_response": "judge",
    "parse_verdict": "judge",
    "metrics_for_source": "metrics",
    "run_metrics": "metrics",
    "MispromptTask": "task",
    "PRIMARY": "taxonomy",
    "SECONDARY": "taxonomy",
}

__all__ = [
    "ItemImportError",
    "MispromptTask",
    "PRIMARY",
    "SECONDARY",
    "import_bytes",
    "import_file",
    "judge_response",
    "judging_agreement",
    "metrics_for_source",
    "parse_verdict",
    "run_metrics",
]


def __getattr__(name: str) -> Any:
    """Import a public name's submodule when the name is first read (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value
