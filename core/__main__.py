"""`python -m core` entry point."""

import gc
import sys

from core.startup import quiet_start

# Start-up (pandas, duckdb, the command's modules, parsing) allocates objects that live as long
# as the process; with the collector on it walks them again and again as they pile up (~0.06 s
# of CPU of a ~0.5 s start, paid by each of the shards a machine starts at once: issue 28). Off
# until the command starts: core.cli.main freezes what start-up made and turns it back on.
# numpy's BLAS threads are not started either (core/startup.py).
quiet_start()

from core.cli import main  # noqa: E402 - after quiet_start

code = main()
# Everything alive now dies with the process: moved out of the collector's way, the
# interpreter's last full collection on the way out (a quarter of a short command's CPU:
# every module's objects walked once more, bench/bench_runner_vs_openai.py) is skipped.
gc.freeze()
sys.exit(code)
