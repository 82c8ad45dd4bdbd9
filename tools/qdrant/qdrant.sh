#!/usr/bin/env bash
# Start, stop or check a throw-away Qdrant server for mneme's tests and development (no Docker):
# one node, or a cluster of N on loopback ports, each with free ports, an API key and its storage
# in a temp dir. The work is done by bench/qdrant_nodes.py (the tests and `mneme bench cluster`
# start their nodes with the same code).
#
#   tools/qdrant/qdrant.sh start [--cluster N] [--dev]
#                                     start and wait until ready; print on stdout
#                                     `export QDRANT_TEST_URL=... QDRANT_TEST_API_KEY=...
#                                     QDRANT_TEST_GRPC_PORT=...` (the test suite's variables; a
#                                     cluster adds QDRANT_TEST_CLUSTER=url,url,...), or with --dev
#                                     `export QDRANT_URL=... QDRANT_API_KEY=...` for mneme itself
#   tools/qdrant/qdrant.sh stop       stop every node (TERM, then KILL) and delete its storage
#   tools/qdrant/qdrant.sh status     exit 0 if a node runs, 1 if not
#
# So `eval "$(tools/qdrant/qdrant.sh start --dev)"` points mneme at a fresh server.
#
# Environment: MNEME_QDRANT_BIN (the server binary; default ../shared/bin/qdrant beside the
# repository), MNEME_QDRANT_RUN_DIR (pid file, logs and storage; default $TMPDIR/mneme-qdrant, so
# a test run can keep its own server beside a dev one), MNEME_QDRANT_LOG_LEVEL (WARN).
# Exit codes: 0 ok, 1 failure (the message says why), 3 no binary (callers such as `make test`
# then say which tests cannot run), 64 bad usage.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY=.venv/bin/python
[[ -x "$PY" ]] || PY=python3
case "${1:-}" in
    start | stop | status) exec "$PY" -m bench.qdrant_nodes "$@" ;;
    *)
        echo "usage: $0 start [--cluster N] [--dev] | stop | status" >&2
        exit 64
        ;;
esac
