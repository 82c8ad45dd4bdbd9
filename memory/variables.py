"""The `MNEME_*` variables mneme reads, and a warning for each one of the environment that
nothing reads (a misspelled setting is otherwise silently ignored and its default used)."""

from __future__ import annotations

import os
from pathlib import Path

from memory.settings import Settings

OTHER_VARIABLES = frozenset(
    {
        "MNEME_MCP_KEY",  # `mneme mcp` over stdio: the key that decides the user
        "MNEME_BENCH_DIR",  # bench/real_corpus.py: where the memeval files are
        "MNEME_MEMEVAL",  # notebooks/: the memeval file the retrieval notebook reads
        "MNEME_EVAL_SESSIONS",  # notebooks/: how many sessions of it
        "MNEME_WHEEL_CACHE",  # tools/install.sh and the tests: kept wheels
        "MNEME_UNLOCKED",  # tools/install.sh: install without requirements.lock
        "MNEME_NEO4J_PORT",  # tools/neo4j/neo4j.sh and tools/test.sh: the throw-away Neo4j
        "MNEME_NEO4J_RUN_DIR",
        "MNEME_NEO4J_JAVA_OPTS",
        "MNEME_NEO4J_HEAP",
        "MNEME_NEO4J_START_TIMEOUT",
        "MNEME_NEO4J_STOP_TIMEOUT",
        "MNEME_QDRANT_BIN",  # tools/qdrant/qdrant.sh and tools/test.sh: the throw-away Qdrant
        "MNEME_QDRANT_RUN_DIR",
        "MNEME_QDRANT_LOG_LEVEL",
        "MNEME_BENCH_TENANTS",  # bench/replicas.py to its worker processes
    }
)
"""`MNEME_*` variables read outside `Settings` (by a command, a notebook or a tool)."""


def known_variables() -> frozenset[str]:
    """Every `MNEME_*` variable something in mneme reads."""
    names = {
        str(choice)
        for field in Settings.model_fields.values()
        for choice in getattr(field.validation_alias, "choices", ())
    }
    return frozenset(n for n in names if n.startswith("MNEME_")) | OTHER_VARIABLES


def unknown_variables(
    environ: dict[str, str] | None = None, env_file: Path | None = Path(".env")
) -> list[str]:
    """A warning for each `MNEME_*` variable of the environment (or the `.env` file) that
    nothing reads, naming the closest valid one: a misspelled setting is otherwise silently
    ignored and its default used."""
    import difflib

    names = set(os.environ if environ is None else environ)
    if env_file is not None and env_file.is_file():
        from dotenv import dotenv_values

        names |= set(dotenv_values(env_file))
    known = sorted(known_variables())
    warnings = []
    for name in sorted(n for n in names if n.upper().startswith("MNEME_")):
        if name.upper() in known:  # pydantic-settings reads names in any case
            continue
        close = difflib.get_close_matches(name.upper(), known, n=1, cutoff=0.7)
        hint = f"did you mean {close[0]}?" if close else "see .env.example for the settings"
        warnings.append(f"{name} is not a mneme setting and is ignored; {hint}")
    return warnings
