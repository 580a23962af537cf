"""What a command's process does before it imports anything heavy (`python -m core`,
`python -m tests.echo_task`): the set-up that must come before pandas, numpy and duckdb load.
Kept to the standard library, so importing it costs nothing."""

from __future__ import annotations

import gc
import os

# numpy's bundled OpenBLAS starts a thread per core when numpy is imported (duckdb imports
# numpy and pandas at a run's first query), and the thread spins waiting for work: ~0.13 s of
# CPU of a ~0.55 s start on this 2-core machine, measured with getrusage around
# `import tests.echo_task`, alternating (docs/performance.md › Shards, sixth round), more with
# more cores. A command's numpy work is element-wise or small (metrics, intervals), never the
# large matrix products those threads are for. A value the user set is kept.
BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1"}


def quiet_start() -> None:
    """Before a command's imports: the collector off until the command starts (start-up's
    objects live as long as the process; `core.cli.end_startup` freezes them and turns it back
    on, ~0.06 s of CPU less per process), and numpy's BLAS on the calling thread."""
    gc.disable()
    for name, value in BLAS_THREADS.items():
        os.environ.setdefault(name, value)
