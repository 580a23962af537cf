"""ProcessBench (Zheng et al., ACL 2025) — passive error finding in math solutions: name the
earliest wrong paragraph of a step-by-step solution, or -1 when all are correct.

Modules: items (import), parse (the `\\boxed{}` answer), prompts (the paper's critique template),
task (runner Task), record (the generic result record), metrics (error / correct accuracy, F1),
queries (data access), charts (figures), cli (commands).
"""

from core.benchmarks.processbench.items import ImportProblem, import_builtin, import_bytes
from core.benchmarks.processbench.metrics import harmonic_f1, metrics_from_items
from core.benchmarks.processbench.parse import parse_answer
from core.benchmarks.processbench.task import ProcessBenchTask, score_stored

__all__ = [
    "ImportProblem",
    "ProcessBenchTask",
    "harmonic_f1",
    "import_builtin",
    "import_bytes",
    "metrics_from_items",
    "parse_answer",
    "score_stored",
]
