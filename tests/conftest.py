"""Shared fixtures: settings isolated from the developer's environment, a real embedder loaded
once per session, and `services` over real stores for each graph backend.

Neo4j runs only when NEO4J_URI is set (`make test` starts it with tools/neo4j/neo4j.sh). Without
it the neo4j parameter is skipped loudly, except under CI=true, where it fails.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memory.embeddings.embedders import Embedder, build_embedder
from memory.services import ChatModels, Services, set_services
from memory.settings import Settings

IN_CI = os.environ.get("CI", "").lower() == "true"
NEO4J_URI = os.environ.get("NEO4J_URI")
NEO4J_MISSING = "Neo4j not tested: start it with tools/neo4j/neo4j.sh start (or run make test)"


def make_settings(tmp_path: Path, backend: str = "sqlite", **overrides: object) -> Settings:
    """Settings for a test: a private data dir, Qdrant in memory, no LLM, no `.env` file."""
    values: dict[str, object] = {
        "data_dir": tmp_path / "data",
        "qdrant_path": Path(":memory:"),
        "qdrant_url": None,
        "llm_base_url": None,
        "llm_api_key": None,
        "embedding_base_url": None,
        "embedding_api_key": None,
        "graph_backend": backend,
        "neo4j_uri": NEO4J_URI if backend == "neo4j" else None,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def require_neo4j() -> None:
    """Skip (locally) or fail (in CI) when no Neo4j is running."""
    if NEO4J_URI:
        return
    if IN_CI:
        pytest.fail("CI=true but NEO4J_URI is not set: .ci/run must start Neo4j")
    pytest.skip(NEO4J_MISSING)


@pytest.fixture(scope="session")
async def embedder() -> AsyncIterator[Embedder]:
    """The real local embedder (all-MiniLM-L6-v2 from its PyPI package), loaded once."""
    emb = build_embedder(Settings(_env_file=None, embedding_base_url=None))  # type: ignore[call-arg]
    await emb.embed_documents(["warm up"])
    yield emb
    await emb.close()


@contextmanager
def installed(services: Services, chat: ChatModels | None = None) -> Iterator[Services]:
    """Make `services` what the agent's nodes get from `get_services()` (with `chat` as its
    chat models, when given) for the block; the previous chat models come back after."""
    previous = services.chat
    if chat is not None:
        services.chat = chat
    set_services(services)
    try:
        yield services
    finally:
        set_services(None)
        services.chat = previous


@pytest.fixture(
    params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)],
)
async def services(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: Embedder
) -> AsyncIterator[Services]:
    """Real services on a fresh memory: SQLite file or a wiped Neo4j, Qdrant in memory."""
    backend = request.param
    if backend == "neo4j":
        require_neo4j()
    from graph.bookkeeping import run_episode  # the pipeline the queue runs, given explicitly

    settings = make_settings(tmp_path, backend)
    svc = await Services.open(
        settings, embedder=embedder, pipeline=run_episode, sweep_interval_s=None
    )
    if backend == "neo4j":
        await svc.graph._wipe_for_tests()  # type: ignore[attr-defined]
    try:
        yield svc
    finally:
        await svc.close()
