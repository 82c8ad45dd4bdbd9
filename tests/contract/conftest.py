"""The contract suite's fixtures: a `graph` store and a vector index per backend, real stores
only, no mocks.

- `sqlite`: a fresh file per test (setup included, so every test also exercises setup).
- `neo4j`: the server at NEO4J_URI, opened and set up once per session, wiped before each test.
  Without NEO4J_URI the neo4j parameter is skipped loudly; with CI=true it fails instead.
- vectors (`open_index`): qdrant-client local mode and Qdrant Edge, both in-process, and a real
  Qdrant server over REST and over gRPC with an API key (`qdrant_server` in tests/conftest.py:
  the server `make test` starts, or one from the binary; without either those tests fail).

Every test states exact expected values, so both backends must return identical results.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from memory.stores.base import GraphStore
from memory.stores.qdrant import QdrantIndex
from memory.stores.qdrant_edge import EdgeIndex
from memory.stores.sqlite import SqliteGraphStore
from memory.stores.vectors import VectorIndex
from tests.conftest import QdrantServer, wipe_qdrant

IN_CI = os.environ.get("CI", "").lower() == "true"
NEO4J_MISSING = "Neo4j not tested: start it with tools/neo4j/neo4j.sh start (then export NEO4J_URI)"


@pytest_asyncio.fixture(scope="session")
async def neo4j_store() -> AsyncIterator[GraphStore]:
    """One Neo4j store for the session, set up once."""
    uri = os.environ.get("NEO4J_URI")
    if not uri:
        if IN_CI:
            pytest.fail(
                "CI=true but NEO4J_URI is not set: the contract suite must run against Neo4j; "
                "start it with tools/neo4j/neo4j.sh start and export NEO4J_URI"
            )
        pytest.skip(NEO4J_MISSING)
    from memory.stores.neo4j import Neo4jGraphStore

    store = Neo4jGraphStore(
        uri=uri,
        user=os.environ.get("NEO4J_USER", "neo4j"),
        password=os.environ.get("NEO4J_PASSWORD") or None,
        database=os.environ.get("NEO4J_DATABASE", "neo4j"),
    )
    await store.setup()
    yield store
    await store.close()


@pytest_asyncio.fixture
async def neo4j_graph(neo4j_store: GraphStore) -> AsyncIterator[GraphStore]:
    """The session's Neo4j store, emptied."""
    await neo4j_store._wipe_for_tests()  # type: ignore[attr-defined]
    yield neo4j_store


@pytest_asyncio.fixture
async def sqlite_graph(tmp_path: Path) -> AsyncIterator[GraphStore]:
    """A SQLite store on a fresh file."""
    store = SqliteGraphStore(tmp_path / "graph.sqlite3")
    await store.setup()
    yield store
    await store.close()


@pytest.fixture(params=["sqlite", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def graph(request: pytest.FixtureRequest) -> Iterator[GraphStore]:
    """An empty, set-up graph store of each backend."""
    yield request.getfixturevalue(f"{request.param}_graph")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly at the end of the run when the Neo4j half of the contract did not run."""
    skipped = terminalreporter.stats.get("skipped", [])
    if any(NEO4J_MISSING in str(getattr(r, "longrepr", "")) for r in skipped):
        terminalreporter.write_sep("!", NEO4J_MISSING, red=True, bold=True)


# --------------------------------------------------------------------------- vector indexes

VECTOR_BACKENDS = ("qdrant-local", "qdrant-edge", "qdrant-server", "qdrant-server-grpc")
"""qdrant-client's local mode (in memory, or a directory), Qdrant Edge (a directory), and a
Qdrant server over REST and over gRPC."""

OpenIndex = Callable[..., Awaitable[VectorIndex]]


@pytest.fixture(params=VECTOR_BACKENDS)
def vector_backend(request: pytest.FixtureRequest) -> str:
    """The name of each vector backend in turn."""
    return str(request.param)


@pytest_asyncio.fixture
async def open_index(
    vector_backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[OpenIndex]:
    """Indexes of the backend under test, opened by awaiting the fixture with (fingerprint, dim,
    path=None).

    Without a path it is fresh (local mode in memory, Edge in a new temporary directory); with
    one it lives on disk there. On the server every path is the same server, emptied before the
    test (the collections of the first index's embedder are kept, without points). Everything
    opened is closed after the test.
    """
    opened: list[VectorIndex] = []
    server: QdrantServer | None = None
    if vector_backend.startswith("qdrant-server"):
        server = request.getfixturevalue("qdrant_server")

    async def open_(fingerprint: str, dim: int, path: Path | None = None) -> VectorIndex:
        index: VectorIndex
        if server is not None:
            if not opened:  # the test's first index: the collections it finds are its own
                await wipe_qdrant(server, keep=(fingerprint, dim))
            grpc = vector_backend.endswith("grpc")
            index = await QdrantIndex.open(
                server.url, fingerprint=fingerprint, dim=dim, **server.index_args(grpc=grpc)
            )
        elif vector_backend == "qdrant-local":
            location = str(path) if path is not None else ":memory:"
            index = await QdrantIndex.open(location, fingerprint=fingerprint, dim=dim)
        else:
            location = str(path or tmp_path / f"edge-{len(opened)}")
            index = await EdgeIndex.open(location, fingerprint=fingerprint, dim=dim)
        opened.append(index)
        return index

    yield open_
    for index in opened:
        await index.close()
