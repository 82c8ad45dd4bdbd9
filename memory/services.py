"""Long-lived services of one process: the graph store, the vector index and the embedder.

Opened once, lazily, by `get_services()` (or explicitly with `Services.open`), and closed on
shutdown by `close_services()`. Nothing here runs at import time.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from memory.embeddings import Embedder, build_embedder
from memory.settings import Settings, get_settings
from memory.stores.base import GraphStore
from memory.stores.qdrant import QdrantIndex

log = logging.getLogger(__name__)


def build_graph_store(settings: Settings) -> GraphStore:
    """The graph backend the settings name (not yet set up)."""
    if settings.resolved_graph_backend == "neo4j":
        from memory.stores.neo4j import Neo4jGraphStore

        return Neo4jGraphStore.from_settings(settings)
    from memory.stores.sqlite import SqliteGraphStore

    return SqliteGraphStore.from_settings(settings)


@dataclass(slots=True)
class Services:
    """The stores and models one process talks to."""

    settings: Settings
    graph: GraphStore
    vectors: QdrantIndex
    embedder: Embedder
    owns_embedder: bool = True
    """False when the embedder was passed in; then `close()` leaves it open for its owner."""

    @classmethod
    async def open(
        cls, settings: Settings, *, setup: bool = True, embedder: Embedder | None = None
    ) -> Services:
        """Connect to every store (failing fast with a fix in the message) and apply the schema.

        `embedder` lets a caller share one loaded model between several service sets (tests,
        benchmarks); otherwise one is built from the settings.
        """
        shared = embedder
        graph = build_graph_store(settings)
        try:
            await graph.ping()
            if setup:
                await graph.setup()
            embedder = embedder or build_embedder(settings)
            vectors = await QdrantIndex.open(
                settings.resolved_qdrant_location,
                api_key=settings.qdrant_api_key.get_secret_value()
                if settings.qdrant_api_key
                else None,
                fingerprint=embedder.fingerprint,
                dim=embedder.dim,
                timeout_s=settings.connect_timeout_s,
            )
        except BaseException:
            await graph.close()
            raise
        try:
            if setup:
                await vectors.setup()
        except BaseException:
            await vectors.close()
            await graph.close()
            raise
        return cls(
            settings=settings,
            graph=graph,
            vectors=vectors,
            embedder=embedder,
            owns_embedder=shared is None,
        )

    async def close(self) -> None:
        """Close every client; safe to call twice."""
        closers = [self.vectors.close, self.graph.close]
        if self.owns_embedder:
            closers.append(self.embedder.close)
        for closer in closers:
            try:
                await closer()
            except Exception:  # closing must not mask the original error
                log.warning("error while closing %s", closer, exc_info=True)


_services: Services | None = None
_lock: asyncio.Lock | None = None


async def get_services(settings: Settings | None = None) -> Services:
    """The process's services, opened on first call."""
    global _services, _lock
    if _services is not None:
        return _services
    if _lock is None:
        _lock = asyncio.Lock()
    async with _lock:
        if _services is None:
            _services = await Services.open(settings or get_settings())
    return _services


async def close_services() -> None:
    """Close the process's services, if opened."""
    global _services
    services, _services = _services, None
    if services is not None:
        await services.close()


def set_services(services: Services | None) -> None:
    """Install (or clear) the process's services: for tests, notebooks and benchmarks that open
    their own and want the agent's nodes to use them."""
    global _services
    _services = services
