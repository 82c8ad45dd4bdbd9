# mneme: every command a developer needs. `make help` lists them.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LLM_STAMP := $(VENV)/.installed-llm

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the commands
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  make %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements.lock tools/install.sh
	@tools/install.sh
	@touch $(STAMP)

$(LLM_STAMP): $(STAMP)
	@tools/install.sh --with-llm
	@touch $(LLM_STAMP)

.PHONY: install
install: $(STAMP) ## Create .venv and install mneme with its dev tools (offline model on ONNX Runtime, no torch)

.PHONY: lock
lock: $(STAMP) ## Regenerate requirements.lock from pyproject.toml (uv; keeps locked versions that still fit, UPGRADE=1 takes the newest)
	$(BIN)/uv pip compile pyproject.toml --extra dev --universal --python-version 3.11 \
	  --generate-hashes --custom-compile-command "make lock" $(if $(UPGRADE),--upgrade) -o requirements.lock

.PHONY: install-llm
install-llm: $(LLM_STAMP) ## Also install llama.cpp's server and SmolLM2 (for the real-LLM test)

.PHONY: demo
demo: $(STAMP) ## Run the demo on the embedded default (SQLite + local Qdrant, offline)
	$(BIN)/mneme demo

.PHONY: test
test: $(LLM_STAMP) ## Start Neo4j and a Qdrant server, run the whole suite, stop them
	@tools/test.sh

.PHONY: test-fast
test-fast: $(STAMP) ## Unit and contract tests: SQLite graph; vectors in process and on a Qdrant server the tests start from the binary (no Neo4j)
	$(BIN)/python -m pytest tests/unit tests/contract -q

# The checks of CI's lint step (tools/test.sh) and of .pre-commit-config.yaml, and only those
# (tests/unit/test_lint_commands.py holds the three lists equal).
.PHONY: lint
lint: $(STAMP) ## The checks CI's lint step runs: ruff check, ruff format --check, mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

.PHONY: format
format: $(STAMP) ## Format the code with ruff
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

.PHONY: neo4j-start
neo4j-start: ## Start the local Neo4j (tools/neo4j) on 127.0.0.1:7687
	tools/neo4j/neo4j.sh start

.PHONY: neo4j-stop
neo4j-stop: ## Stop the local Neo4j
	tools/neo4j/neo4j.sh stop

.PHONY: qdrant-start
qdrant-start: ## Start a throw-away Qdrant server (tools/qdrant) and print the QDRANT_URL to export
	tools/qdrant/qdrant.sh start --dev

.PHONY: qdrant-stop
qdrant-stop: ## Stop it and delete its storage
	tools/qdrant/qdrant.sh stop

.PHONY: doctor
doctor: $(STAMP) ## Check settings, stores, schema and consistency
	$(BIN)/mneme doctor

.PHONY: dev
dev: $(STAMP) ## Serve the graphs with `langgraph dev` (HTTP API; port from PORT, default 2025)
	LANGSMITH_TRACING=false $(BIN)/langgraph dev --no-browser --allow-blocking --port $${PORT:-2025}

.PHONY: dockerfile
dockerfile: ## Regenerate the Dockerfile docker-compose.yml builds (`langgraph dockerfile` from langgraph.json)
	@tmp=$$(mktemp -d) && mkdir $$tmp/mneme && cp langgraph.json pyproject.toml $$tmp/mneme/ \
	  && (cd $$tmp/mneme && LANGGRAPH_CLI_NO_ANALYTICS=1 $(CURDIR)/$(BIN)/langgraph dockerfile Dockerfile >/dev/null) \
	  && cp $$tmp/mneme/Dockerfile Dockerfile && rm -rf $$tmp && echo "Dockerfile regenerated"

.PHONY: bench
bench: $(STAMP) ## Memory-layer benchmarks: write latency, indexing throughput, search latency
	$(BIN)/mneme bench write
	$(BIN)/mneme bench search

BENCH_DIR ?= ../shared/bench
MEMEVAL ?=
EVAL_OUT ?= eval-retrieval.json
EVAL_STORE ?= $(HOME)/.cache/mneme/eval-store

.PHONY: eval
eval: $(STAMP) ## Retrieval eval on the three development benchmarks (LoCoMo, LongMemEval slice, BEAM 500K dev) in BENCH_DIR, offline (MEMEVAL=files instead; EVAL_OUT=json; ingests kept in EVAL_STORE)
	$(BIN)/mneme eval retrieval $(MEMEVAL) --bench-dir $(BENCH_DIR) --json $(EVAL_OUT) --store $(EVAL_STORE)

.PHONY: clean
clean: ## Remove caches (your memory, in the user data directory, is left alone)
	rm -rf .pytest_cache .mypy_cache .ruff_cache
