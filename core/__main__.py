"""`python -m core` entry point."""

import gc
import sys

from core.cli import main

code = main()
# Everything alive now dies with the process: moved out of the collector's way, the
# interpreter's last full collection on the way out (a quarter of a short command's CPU:
# every module's objects walked once more, bench/bench_runner_vs_openai.py) is skipped.
gc.freeze()
sys.exit(code)
