#!/usr/bin/env bash
# The whole suite on both graph backends and every vector backend: start a throw-away Neo4j and a
# throw-away Qdrant server (tools/qdrant), run pytest, stop both.
# Without Java or Maven the suite runs on the embedded backends and says loudly that Neo4j was
# not tested; with CI=true a Neo4j that cannot start is a failure. Without the Qdrant binary
# (../shared/bin/qdrant or MNEME_QDRANT_BIN) and without QDRANT_TEST_URL, the tests that need a
# Qdrant server fail saying what they need; with CI=true the suite does not start at all.
set -uo pipefail
cd "$(dirname "$0")/.."
export LANGSMITH_TRACING=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset NEO4J_URI MNEME_GRAPH_BACKEND QDRANT_URL QDRANT_PATH QDRANT_API_KEY QDRANT_PREFER_GRPC \
  QDRANT_GRPC_PORT MNEME_DATA_DIR
CI=${CI:-false}

loud() { printf '\n\033[1;33m!!! %s\033[0m\n\n' "$*" >&2; }

port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export MNEME_NEO4J_PORT=$port
export MNEME_NEO4J_RUN_DIR=${TMPDIR:-/tmp}/mneme-test-neo4j-$$
# C1 JIT only: the throw-away server starts in ~14 s instead of ~26 s, and tests run as fast.
export MNEME_NEO4J_JAVA_OPTS=${MNEME_NEO4J_JAVA_OPTS:--XX:TieredStopAtLevel=1}
neo4j_up=0
stop_neo4j() { [ "$neo4j_up" = 1 ] && tools/neo4j/neo4j.sh stop >/dev/null 2>&1; true; }
export MNEME_QDRANT_RUN_DIR=${TMPDIR:-/tmp}/mneme-test-qdrant-$$
qdrant_up=0
stop_qdrant() { [ "$qdrant_up" = 1 ] && tools/qdrant/qdrant.sh stop >/dev/null 2>&1; true; }
trap 'stop_neo4j; stop_qdrant' EXIT

if [ -n "${QDRANT_TEST_URL:-}" ]; then
  echo "qdrant: the tests use the server at QDRANT_TEST_URL=$QDRANT_TEST_URL (its collections are deleted)" >&2
elif qdrant_env=$(tools/qdrant/qdrant.sh start); then
  qdrant_up=1
  eval "$qdrant_env"
elif [ "$CI" = true ]; then
  echo "error: CI=true needs a Qdrant server: the binary at ../shared/bin/qdrant (or MNEME_QDRANT_BIN), or QDRANT_TEST_URL (+ QDRANT_TEST_API_KEY) pointing at a throw-away server" >&2
  exit 1
else
  loud "No Qdrant server: the tests that need one FAIL (they say what they need). QDRANT SERVER NOT TESTED."
fi

if command -v java >/dev/null && command -v mvn >/dev/null; then
  if tools/neo4j/neo4j.sh start; then
    neo4j_up=1
    export NEO4J_URI="bolt://127.0.0.1:$port"
  elif [ "$CI" = true ]; then
    echo "error: Neo4j did not start and CI=true; see the log above" >&2
    exit 1
  else
    loud "Neo4j did not start: the suite runs on SQLite only. NEO4J WAS NOT TESTED."
  fi
elif [ "$CI" = true ]; then
  echo "error: CI=true needs Java 17 and Maven to run Neo4j (apt-get install openjdk-17-jdk-headless maven)" >&2
  exit 1
else
  loud "Java or Maven is missing: the suite runs on SQLite only. NEO4J WAS NOT TESTED."
fi

status=0
.venv/bin/ruff check . || status=1
.venv/bin/ruff format --check . || status=1
.venv/bin/mypy || status=1
.venv/bin/python -m pytest "$@" || status=$?
[ "$neo4j_up" = 1 ] || loud "Reminder: NEO4J WAS NOT TESTED (only the embedded SQLite backend ran)."
exit $status
