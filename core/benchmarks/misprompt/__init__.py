"""Mis-prompt — proactive error handling: does a model notice an erroneous prompt on its own?
(SPEC §1). An LLM judge gives six labels per response; F1 per category against controls.

Modules: taxonomy (categories), items (import), prompts (settings, judge templates), task
(runner Task), judge (the LLM judge), metrics (F1, bootstrap, run counts cache), agreement
(judge vs judge), consistency (published-table checks), queries (page data), charts (figures),
playground (its playground role), audit (human labels), synth (synthetic runs for benchmarks), cli (commands).
"""

from core.benchmarks.misprompt.agreement import judging_agreement
from core.benchmarks.misprompt.items import ItemImportError, import_bytes, import_file
from core.benchmarks.misprompt.judge import judge_response, parse_verdict
from core.benchmarks.misprompt.metrics import metrics_for_source, run_metrics
from core.benchmarks.misprompt.task import MispromptTask
from core.benchmarks.misprompt.taxonomy import PRIMARY, SECONDARY

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
