"""ErrorBench: numeric anchoring vs count-based F1 on CoNLL-2014 passages (SPEC §2).

m2 (read M2/SGML) → items (passages: group, select) → prompts (five conditions) → parse
(reported count) → extract (hypothesis edits) → metrics (count and span scores) → bootstrap →
charts; task (runner Task) and cli (commands) tie them to the database.
"""

BENCHMARK = "errorbench"

from core.benchmarks.errorbench.metrics import score_response  # noqa: E402
from core.benchmarks.errorbench.parse import parse_response  # noqa: E402  (after BENCHMARK: submodules import it)
from core.benchmarks.errorbench.prompts import CONDITIONS  # noqa: E402
from core.benchmarks.errorbench.task import ErrorBenchTask, score_stored  # noqa: E402

__all__ = [
    "BENCHMARK",
    "CONDITIONS",
    "ErrorBenchTask",
    "parse_response",
    "score_response",
    "score_stored",
]
