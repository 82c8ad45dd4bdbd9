"""Shared fixtures: settings isolated from the developer's environment, a real embedder loaded
once per session, and `services` over real stores for each graph backend.

Neo4j runs only when NEO4J_URI is set (`make test` starts it with tools/neo4j/neo4j.sh). Without
it the neo4j parameter is skipped loudly, except under CI=true, where it fails.

A Qdrant server (`qdrant_server`): the one at QDRANT_TEST_URL (`make test` starts one with
tools/qdrant/qdrant.sh), else one started for the session from the binary (../shared/bin/qdrant
or MNEME_QDRANT_BIN); with neither, every test that needs it fails saying what it needs.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.qdrant_nodes import NEEDED as QDRANT_NEEDED
from bench.qdrant_nodes import Nodes, binary
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


@dataclass(frozen=True, slots=True)
class QdrantServer:
    """A Qdrant server the tests may use (and whose collections they may delete)."""

    url: str
    api_key: str | None
    grpc_port: int

    def index_args(self, *, grpc: bool = False) -> dict[str, object]:
        """`QdrantIndex.open` keyword arguments for this server, over REST or gRPC."""
        return {"api_key": self.api_key, "prefer_grpc": grpc, "grpc_port": self.grpc_port}

    def settings(self, *, grpc: bool = False) -> dict[str, object]:
        """`Settings` overrides that point mneme at this server."""
        return {
            "qdrant_url": self.url,
            "qdrant_path": None,
            "qdrant_api_key": self.api_key,
            "qdrant_prefer_grpc": grpc,
            "qdrant_grpc_port": self.grpc_port,
        }


def require_qdrant_binary() -> Path:
    """The Qdrant binary (tests that start their own nodes: a cluster, a node to kill); fails
    saying what is needed when there is none."""
    found = binary()
    if found is None:
        pytest.fail(f"this test starts its own Qdrant nodes: {QDRANT_NEEDED}", pytrace=False)
    return found


@pytest.fixture(scope="session")
def qdrant_server() -> Iterator[QdrantServer]:
    """The session's Qdrant server: QDRANT_TEST_URL, else one started from the binary."""
    url = os.environ.get("QDRANT_TEST_URL")
    if url:
        yield QdrantServer(
            url,
            os.environ.get("QDRANT_TEST_API_KEY") or None,
            int(os.environ.get("QDRANT_TEST_GRPC_PORT") or 6334),
        )
        return
    if binary() is None:
        pytest.fail(QDRANT_NEEDED, pytrace=False)
    nodes = Nodes.create().start()
    try:
        node = nodes.nodes[0]
        yield QdrantServer(node.url, nodes.api_key, node.grpc_port)
    finally:
        nodes.stop()


async def wipe_qdrant(server: QdrantServer, keep: tuple[str, int] | None = None) -> None:
    """Empty the test server: delete every collection, except that those of embedder `keep`
    (fingerprint, dimension) are kept with no points in them (creating a collection on a
    server takes about half a second; emptying one, milliseconds)."""
    from qdrant_client import AsyncQdrantClient, models

    client = AsyncQdrantClient(
        url=server.url,
        headers={"api-key": server.api_key} if server.api_key else None,
        check_compatibility=False,
    )
    try:
        for collection in (await client.get_collections()).collections:
            if keep is not None and collection.name.endswith(f"__{keep[0]}"):
                info = await client.get_collection(collection.name)
                vectors = info.config.params.vectors
                sizes = {v.size for v in vectors.values()} if isinstance(vectors, dict) else set()
                if sizes != {keep[1]}:
                    await client.delete_collection(collection.name)
                    continue
                everything = models.FilterSelector(filter=models.Filter())
                await client.delete(collection.name, points_selector=everything, wait=True)
            else:
                await client.delete_collection(collection.name)
    finally:
        await client.close()


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
