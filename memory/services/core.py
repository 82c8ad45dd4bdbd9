"""The one `Services` object of a process, and its accessor.

`Services` owns everything long-lived: the graph store, the vector index, the embedder, the chat
models (with their usage counters), the bookkeeping queue and the per-tenant locks. `Services.open(settings)` connects (failing fast with the fix in the message) and applies
the schema; `close()` releases everything once.

`get_services()` is the one accessor nodes use (`available()` for the nodes of a turn, which go on
without stores that cannot be opened): the services installed for the current context
(`use_services`: the CLI, the eval, the bookkeeping runner), else the process default, opened
lazily from the environment on first call (or installed with `set_services` by tests and
notebooks that open their own) and closed by `close_services()`. Nothing here runs at import
time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

from memory.embeddings.embedders import Embedder, build_embedder
from memory.embeddings.install import preflight as embedder_preflight
from memory.services.chat import ChatModels
from memory.services.locks import TenantLocks
from memory.services.queue import SWEEP_INTERVAL_S, BookkeepingQueue, Pipeline
from memory.settings import Settings, get_settings
from memory.stores.base import GraphStore, SchemaMismatch, StoreUnavailable
from memory.stores.vectors import VectorIndex

log = logging.getLogger(__name__)


def build_graph_store(settings: Settings) -> GraphStore:
    """The graph backend the settings name (not yet set up)."""
    if settings.resolved_graph_backend == "neo4j":
        from memory.stores.neo4j import Neo4jGraphStore

        return Neo4jGraphStore.from_settings(settings)
    from memory.stores.sqlite import SqliteGraphStore

    return SqliteGraphStore.from_settings(settings)


async def open_vector_index(settings: Settings, *, fingerprint: str, dim: int) -> VectorIndex:
    """The vector index the settings name, open (not set up): a Qdrant server (`QDRANT_URL`),
    qdrant-client's in-memory local mode (`QDRANT_PATH=:memory:`), else Qdrant Edge in the data
    directory (the embedded default)."""
    location = settings.resolved_qdrant_location
    if settings.vector_backend == "qdrant-edge":
        from memory.stores.qdrant_edge import EdgeIndex

        return await EdgeIndex.open(location, fingerprint=fingerprint, dim=dim)
    from memory.stores.qdrant import QdrantIndex
    from memory.stores.qdrant_server import Layout

    return await QdrantIndex.open(
        location,
        api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None,
        prefer_grpc=settings.qdrant_prefer_grpc,
        grpc_port=settings.qdrant_grpc_port,
        layout=Layout(
            shards=settings.qdrant_shards,
            replication_factor=settings.qdrant_replication,
            write_consistency=settings.qdrant_write_consistency,
            per_tenant_hnsw=settings.qdrant_per_tenant_hnsw,
            tenant_shards=settings.qdrant_tenant_shards,
        ),
        fingerprint=fingerprint,
        dim=dim,
        timeout_s=settings.connect_timeout_s,
    )


def check_not_legacy(settings: Settings) -> None:
    """Refuse to start on vectors nothing reads any more: a data directory whose vectors are still
    in qdrant-client's local-mode files (before the Qdrant Edge backend), with no Edge index yet.
    The graph is the source of truth, so `mneme reindex` rebuilds the vectors from it."""
    legacy = settings.legacy_local_mode_dir
    edge = settings.resolved_qdrant_location
    if settings.vector_backend != "qdrant-edge" or not (legacy / "meta.json").is_file():
        return
    from pathlib import Path

    if Path(edge).is_dir() and any(Path(edge).glob("*__*/edge_config.json")):
        return
    raise SchemaMismatch(
        f"the vectors in {legacy} were written by an earlier mneme (qdrant-client local mode); "
        f"mneme now keeps them in Qdrant Edge at {edge}. Run `mneme reindex` once to rebuild "
        f"them from the graph (nothing is lost: the graph is the source of truth), then delete "
        f"{legacy}"
    )


@dataclass(slots=True, eq=False)
class Services:
    """The stores, models, queue and locks one process talks to."""

    settings: Settings
    graph: GraphStore
    vectors: VectorIndex
    embedder: Embedder
    chat: ChatModels
    """Chat clients by tier, and the LLM counters of the process."""
    owns_embedder: bool = True
    """False when the embedder was passed in; then `close()` leaves it open for its owner."""
    locks: TenantLocks = field(default_factory=TenantLocks)
    queue: BookkeepingQueue | None = None
    """Background bookkeeping; set by `open` (None until then)."""
    _closed: bool = False

    @classmethod
    async def open(
        cls,
        settings: Settings,
        *,
        setup: bool = True,
        embedder: Embedder | None = None,
        chat: ChatModels | None = None,
        pipeline: Pipeline | None = None,
        sweep_interval_s: float | None = SWEEP_INTERVAL_S,
        preflight: bool = True,
    ) -> Services:
        """Connect to every store (failing fast with a fix in the message) and apply the schema.

        `embedder` lets a caller share one loaded model between several service sets (tests,
        benchmarks); `chat` injects chat models (default: from the settings); `pipeline` is the
        bookkeeping the queue runs, given by the caller (`graph.bookkeeping.run_episode`; the
        memory layer never imports the graphs); without one, submitted episodes stay `pending`.
        Once started, the queue sweeps at start and then every `sweep_interval_s` seconds (None:
        only at start). With `preflight` an embedder that cannot be there (the default model's
        package not installed) stops the opening with `EmbedderError` and its fix, before
        anything is written; `mneme doctor` opens without it and reports the embedder on its own
        line.
        """
        shared = embedder
        graph = build_graph_store(settings)
        try:
            await graph.ping()
            if setup:
                await graph.setup()
            if setup:
                check_not_legacy(settings)
            embedder = embedder or build_embedder(settings)
            if preflight:
                embedder_preflight(embedder)
            vectors = await open_vector_index(
                settings, fingerprint=embedder.fingerprint, dim=embedder.dim
            )
        except BaseException:
            await graph.close()
            if embedder is not None and shared is None:  # loaded here: not kept by a failure
                await embedder.close()
            raise
        try:
            if setup:
                await vectors.setup()
        except BaseException:
            await vectors.close()
            await graph.close()
            if shared is None:
                await embedder.close()
            raise
        services = cls(
            settings=settings,
            graph=graph,
            vectors=vectors,
            embedder=embedder,
            chat=chat or ChatModels(settings),
            owns_embedder=shared is None,
        )
        services.queue = BookkeepingQueue(services, pipeline, sweep_interval_s=sweep_interval_s)
        return services

    @property
    def bookkeeping(self) -> BookkeepingQueue:
        """The bookkeeping queue (always set once `open` returned)."""
        assert self.queue is not None, "Services.open() sets the queue"
        return self.queue

    async def close(self) -> None:
        """Stop the queue and close every client; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        closers = []
        if self.queue is not None:
            closers.append(self.queue.close)
        closers += [self.vectors.close, self.graph.close, self.chat.aclose]
        if self.owns_embedder:
            closers.append(self.embedder.close)
        for closer in closers:
            try:
                await closer()
            except Exception:  # closing must not mask the original error
                log.warning("error while closing %s", closer, exc_info=True)


_current: ContextVar[Services | None] = ContextVar("mneme_services", default=None)
_default: Services | None = None
_lock: asyncio.Lock | None = None
_unavailable: tuple[float, str] | None = None
"""When the process default last failed to open because a store was unavailable, and why."""
_standby: ChatModels | None = None
"""The chat models of turns that run while the stores cannot be opened (`available()`)."""


async def get_services() -> Services:
    """The services of the current context, else the process default (opened on first call)."""
    global _default, _lock, _unavailable
    current = _current.get()
    if current is not None:
        return current
    if _default is not None:
        return _default
    if _lock is None:
        _lock = asyncio.Lock()
    async with _lock:
        if _default is None:
            try:
                _default = await Services.open(get_settings())
            except StoreUnavailable as exc:
                _unavailable = (time.monotonic(), f"{type(exc).__name__}: {exc}")
                raise
            _unavailable = None
    return _default


@dataclass(frozen=True, slots=True)
class Available:
    """What a turn can use: the services (None while the stores cannot be opened), the
    settings and the chat models (the services' own, else the standby ones)."""

    services: Services | None
    settings: Settings
    chat: ChatModels
    reason: str | None = None
    """Why there are no services (the store error), when there are none."""


async def available() -> Available:
    """The services `get_services()` gives, or, while the stores cannot be opened (a store down,
    read-only or held by another process: `StoreUnavailable`), none: a turn then goes on
    degraded, with the process settings and standby chat models, instead of failing. After a
    failed opening the next try waits `MNEME_STORE_RETRY_S` seconds, so the nodes of one turn
    do not each wait for a store that just failed (the turn's first node, `record`, tries it
    through `get_services()` itself)."""
    global _standby
    current = _current.get() or _default
    if current is not None:
        return Available(current, current.settings, current.chat)
    settings = get_settings()
    failed = _unavailable
    reason = failed[1] if failed else None
    if failed is None or time.monotonic() - failed[0] >= settings.store_retry_s:
        try:
            services = await get_services()
            return Available(services, services.settings, services.chat)
        except StoreUnavailable as exc:
            reason = f"{type(exc).__name__}: {exc}"
            log.warning("the memory stores cannot be opened (%s); the turn goes on without", reason)
    if _standby is None:
        _standby = ChatModels(settings)
    return Available(None, settings, _standby, reason)


@contextlib.contextmanager
def use_services(services: Services) -> Iterator[Services]:
    """Make `services` what `get_services()` returns in this context (and tasks it starts)."""
    token = _current.set(services)
    try:
        yield services
    finally:
        _current.reset(token)


def set_services(services: Services | None) -> None:
    """Install `services` as the process default (tests, notebooks); None forgets it (unclosed)."""
    global _default
    _default = services


async def close_services() -> None:
    """Close the process default services, if opened (and the standby chat models)."""
    global _default, _standby
    services, _default = _default, None
    standby, _standby = _standby, None
    if services is not None:
        await services.close()
    if standby is not None:
        await standby.aclose()
