"""BIG-Bench Mistake — passive mistake finding in reasoning traces (SPEC §3).

Modules: items (import), parse (answers), prompts + paper_prompts (templates), task (runner
Task), metrics (scores), consistency (paper-internal checks), queries (data access), charts
(figures), cli (commands).
"""

from core.benchmarks.bbm.items import ImportProblem, import_builtin, import_bytes, import_files
from core.benchmarks.bbm.metrics import location_correct
from core.benchmarks.bbm.prompts import METHODS
from core.benchmarks.bbm.task import BbmTask, score_stored

__all__ = [
    "BbmTask",
    "ImportProblem",
    "METHODS",
    "import_builtin",
    "import_bytes",
    "import_files",
    "location_correct",
    "score_stored",
]
