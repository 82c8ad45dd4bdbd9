"""The vector index over Qdrant Edge: the Qdrant engine in this process, one shard per collection.

A directory holds one shard per collection, `<dir>/<kind>__<embedder fingerprint>/` (segments,
WAL, `edge_config.json`), and a `.lock` file that one process holds while the index is open. The
engine does everything a Qdrant server does for us (HNSW and payload indexes, IDF, RRF fusion)
with the score contract of `vectors.VectorIndex`; query building lives in
`qdrant_edge_query.py`, the shards and the directory lock in `qdrant_edge_shards.py`; this
module is the async interface.

Threading: the engine is synchronous, so every call runs on one worker thread per index, one
call at a time, in the order the coroutines asked (as the SQLite store does). The binding keeps
the GIL while the engine works, so a call still pauses the event loop for its own duration
(about a millisecond for a search); `optimize()` builds HNSW graphs and pauses it for seconds
to minutes, which is why nothing here calls it implicitly.

Durability: `upsert` and deletes return once the WAL holds them; a killed process replays the
WAL on the next open. Segments are flushed every `FLUSH_EVERY` written points and on `close()`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import qdrant_edge as qe

from memory.schema import DENSE_VECTOR, VECTOR_KINDS, VectorKind, collection_name
from memory.stores.base import (
    SearchRequest,
    SparseVector,
    StoredVector,
    VectorFilter,
    VectorHit,
    VectorPoint,
)
from memory.stores.errors import StoreClosed
from memory.stores.qdrant_edge_query import HNSW_EF, edge_filter, edge_point, plan_edge_search
from memory.stores.qdrant_edge_shards import FLUSH_EVERY, Shards, lock_directory
from memory.stores.qdrant_query import decode_payload
from memory.stores.vectors import IndexStatus, VectorIndex

T = TypeVar("T")

TIE_MARGIN = 8
"""Extra results fetched so that ties at the limit are cut by id, as on every backend."""


@dataclass(frozen=True, slots=True)
class _Planned:
    """One search ready for the engine: its shard, its request, its score factor and limit."""

    shard: str
    request: qe.QueryRequest
    scale: float
    limit: int


def _dense(vector: Any) -> list[float]:
    """The dense vector of a record read with `with_vector=[DENSE_VECTOR]`."""
    return [float(x) for x in vector[DENSE_VECTOR]]


class EdgeIndex(VectorIndex):
    """Dense + sparse vectors per kind of memory in Qdrant Edge shards under one directory."""

    backend = "qdrant-edge"

    def __init__(
        self, path: Path, lock: IO[str], *, fingerprint: str, dim: int, hnsw_ef: int = HNSW_EF
    ) -> None:
        """Wrap a locked directory; use `EdgeIndex.open`, which takes the lock."""
        self.path = path
        self.fingerprint = fingerprint
        self.dim = dim
        self.hnsw_ef = hnsw_ef
        """Candidates kept while walking an HNSW graph (higher: better recall, slower)."""
        self.generation = 0
        self._lock: IO[str] | None = lock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mneme-edge")
        self._shards = Shards(path, fingerprint=fingerprint, dim=dim)  # used on the worker only
        self._ready = False
        self._closed = False

    @classmethod
    async def open(
        cls,
        location: str | os.PathLike[str],
        *,
        fingerprint: str,
        dim: int,
        hnsw_ef: int = HNSW_EF,
    ) -> EdgeIndex:
        """Open (creating) the directory and lock it; raise `StoreUnavailable` with the fix.

        No shard is created: call `setup()` next (the first upsert also does).
        """
        if dim <= 0:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        path, lock = lock_directory(Path(location))
        return cls(path, lock, fingerprint=fingerprint, dim=dim, hnsw_ef=hnsw_ef)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise StoreClosed(f"the Qdrant Edge index at {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args))

    # ------------------------------------------------------------------ schema

    async def setup(self, *, rebuild: bool = False) -> None:
        """Create this embedder's collections and payload indexes; idempotent.

        Raises `SchemaMismatch` when the store holds collections of another embedder and none of
        this one's (a model swap not yet re-indexed) unless `rebuild` (`mneme reindex` builds them
        beside the other embedder's, which are kept), or when a same-named collection has another
        dimension or vector layout.
        """
        await self._run(self._shards.setup, rebuild)
        self._ready = True

    async def missing_collections(self) -> list[str]:
        """Collections of this embedder that do not exist yet (for `mneme doctor`)."""
        existing = await self._run(self._shards.names)
        wanted = [collection_name(kind, self.fingerprint) for kind in VECTOR_KINDS]
        return [name for name in wanted if name not in existing]

    async def collections(self) -> list[str]:
        """Every mneme collection in the directory (any embedder), sorted."""
        return sorted(await self._run(self._shards.names))

    async def drop_collections(self, fingerprint: str | None) -> list[str]:
        """Drop the shards of one embedder fingerprint (every embedder with None); see base."""
        try:
            return await self._run(self._shards.drop, fingerprint)
        finally:
            self._ready = False
            self.generation += 1

    # ------------------------------------------------------------------ writes

    async def upsert(self, kind: VectorKind, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id; every point is validated before anything is written.

        Raises `SchemaMismatch` for a dense vector of the wrong dimension and `ValueError` for a
        missing `tenant`/`episode_uid`/`text` payload field or a malformed vector. Returns once
        the WAL holds the points.
        """
        converted = [edge_point(p, dim=self.dim, fingerprint=self.fingerprint) for p in points]
        if not converted:
            return
        if not self._ready:
            await self.setup()
        try:
            await self._run(self._shards.upsert, collection_name(kind, self.fingerprint), converted)
        finally:  # even a partial write invalidates cached copies
            self.generation += 1

    async def delete_by_episode(
        self, tenant: str, episode_uid: str, kinds: Iterable[VectorKind] | None = None
    ) -> None:
        """Delete every point of the tenant's episode in the given kinds (all kinds by default)."""
        flt = edge_filter(tenant, episode_uid=episode_uid)
        for kind in kinds or VECTOR_KINDS:
            await self._delete(kind, flt)

    async def delete_stale(
        self, kind: VectorKind, tenant: str, episode_uid: str, keep_ids: Sequence[str]
    ) -> None:
        """Delete the tenant's episode's points of `kind` whose ids are not in `keep_ids`."""
        await self._delete(kind, edge_filter(tenant, episode_uid=episode_uid, exclude_ids=keep_ids))

    async def delete_points(self, kind: VectorKind, tenant: str, ids: Sequence[str]) -> None:
        """Delete points by id, only those of the tenant."""
        if ids:
            await self._delete(kind, edge_filter(tenant, ids=ids))

    async def _delete(self, kind: VectorKind, flt: qe.Filter) -> None:
        try:
            await self._run(self._shards.delete, collection_name(kind, self.fingerprint), flt)
        finally:
            self.generation += 1

    # ------------------------------------------------------------------ reads

    async def search(
        self,
        kind: VectorKind,
        tenant: str,
        *,
        dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
        limit: int = 10,
        filter: VectorFilter | None = None,
        score_threshold: float | None = None,
    ) -> list[VectorHit]:
        """The tenant's best points for a dense and/or sparse query; contract in `VectorIndex`."""
        request = SearchRequest(
            kind,
            dense=dense,
            sparse=sparse,
            limit=limit,
            filter=filter,
            score_threshold=score_threshold,
        )
        return (await self.search_many(tenant, [request]))[0]

    async def search_many(
        self, tenant: str, requests: Sequence[SearchRequest]
    ) -> list[list[VectorHit]]:
        """Several searches in one trip to the worker: the requests of one shard run as one
        `query_batch` (planned together), and hits are built there; contract in `VectorIndex`.
        A request's `fields` are the only payload fields its hits carry."""
        for r in requests:
            self.check_query(r.dense, r.limit)
        idf_corpus = edge_filter(tenant)
        planned: list[_Planned | None] = [self._plan(tenant, r, idf_corpus) for r in requests]
        if not any(planned):
            return [[] for _ in requests]
        return await self._run(self._search_on_worker, planned)

    def _plan(self, tenant: str, r: SearchRequest, idf_corpus: qe.Filter) -> _Planned | None:
        """The engine request of one search, or None when it returns [] without asking."""
        if r.filter is not None and r.filter.episode_uids is not None and not r.filter.episode_uids:
            return None
        if r.dense is None and (r.sparse is None or not r.sparse.indices):
            return None
        flt = edge_filter(tenant, r.filter or VectorFilter())
        plan = plan_edge_search(
            dense=r.dense,
            sparse=r.sparse,
            limit=r.limit,
            flt=flt,
            idf_corpus=idf_corpus,
            score_threshold=r.score_threshold,
            hnsw_ef=self.hnsw_ef,
        )
        request = qe.QueryRequest(
            limit=r.limit + TIE_MARGIN,
            query=plan.query,
            prefetches=plan.prefetches,
            filter=flt,
            params=plan.params,
            score_threshold=plan.score_threshold,
            with_payload=list(r.fields) if r.fields is not None else True,
        )
        return _Planned(collection_name(r.kind, self.fingerprint), request, plan.scale, r.limit)

    def _search_on_worker(self, planned: list[_Planned | None]) -> list[list[VectorHit]]:
        by_shard: dict[str, list[int]] = {}
        for i, p in enumerate(planned):
            if p is not None:
                by_shard.setdefault(p.shard, []).append(i)
        out: list[list[VectorHit]] = [[] for _ in planned]
        for name, positions in by_shard.items():
            found = self._shards.query_batch(name, [planned[i].request for i in positions])  # type: ignore[union-attr]
            for i, points in zip(positions, found, strict=True):
                p = planned[i]
                assert p is not None
                hits = [
                    VectorHit(str(q.id), q.score * p.scale, decode_payload(q.payload))
                    for q in points
                ]
                hits.sort(key=lambda h: (-h.score, h.id))
                out[i] = hits[: p.limit]
        return out

    async def _read_vectors(
        self, kind: VectorKind, tenant: str, ids: Sequence[str], fields: Sequence[str]
    ) -> list[StoredVector]:
        """The points `ids` that exist (one shard holds every tenant; `read_vectors` keeps the
        caller's)."""
        name = collection_name(kind, self.fingerprint)
        records = await self._run(self._shards.retrieve, name, list(ids), list(fields))
        return [
            StoredVector(str(r.id), _dense(r.vector), decode_payload(r.payload))
            for r in records
            if r.vector is not None
        ]

    async def scroll_episode_uids(self, kind: VectorKind, tenant: str | None) -> set[str]:
        """Episode uids that have points of `kind` (one tenant, or all with None: maintenance)."""
        flt = edge_filter(tenant) if tenant is not None else None
        name = collection_name(kind, self.fingerprint)
        records = await self._run(self._shards.scroll, name, flt, ["episode_uid"])
        return {str(r.payload["episode_uid"]) for r in records if r.payload}

    async def scroll_points(self, kind: VectorKind, tenant: str) -> list[VectorHit]:
        """Every point of the tenant in `kind` (archived too), by id, with score 0."""
        name = collection_name(kind, self.fingerprint)
        records = await self._run(self._shards.scroll, name, edge_filter(tenant), True)
        hits = [VectorHit(str(r.id), 0.0, decode_payload(r.payload)) for r in records]
        return sorted(hits, key=lambda h: h.id)

    async def count(self, kind: VectorKind, tenant: str) -> int:
        """Number of the tenant's points of `kind`, archived ones included."""
        name = collection_name(kind, self.fingerprint)
        return await self._run(self._shards.count, name, edge_filter(tenant))

    # ------------------------------------------------------------------ maintenance

    async def optimize(self) -> bool:
        """Build HNSW graphs and merge or vacuum segments now; True if anything changed.

        Blocks the whole process (the binding keeps the GIL) for as long as the build takes:
        seconds per 10k points. Until then new points are searched exactly, which is correct,
        only slower for large tenants. Call it from maintenance (reindex, sweep, start-up).
        """
        return await self._run(self._shards.optimize)

    async def describe(self) -> IndexStatus:
        """Backend, shards with point counts, and WAL/flush state (for `mneme doctor`)."""
        statuses = await self._run(self._shards.statuses)
        return IndexStatus(
            backend=self.backend,
            location=str(self.path),
            fingerprint=self.fingerprint,
            dim=self.dim,
            collections=statuses,
            durability=(
                "writes are in the WAL when acknowledged (a crash replays it); segments are "
                f"flushed every {FLUSH_EVERY} points and on close"
            ),
            unflushed_writes=self._shards.unflushed,
        )

    async def close(self) -> None:
        """Flush and close every shard, release the directory; safe to call twice."""
        if self._closed:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._shards.close)
        finally:
            self._closed = True
            self._executor.shutdown(wait=False)
            if self._lock is not None:
                self._lock.close()  # releases the flock
                self._lock = None
