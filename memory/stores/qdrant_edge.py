"""The vector index over Qdrant Edge: the Qdrant engine in this process, one shard per collection.

A directory holds one shard per collection, `<dir>/<kind>__<embedder fingerprint>/` (segments,
WAL, `edge_config.json`), and a `.lock` file that one process holds while the index is open. The
engine does everything a Qdrant server does for us (HNSW and payload indexes, IDF, RRF fusion,
Formula rescoring) with the score contract of `vectors.VectorIndex`; query building lives in
`qdrant_edge_query.py`, this module does the I/O.

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
import fcntl
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, TypeVar

import qdrant_edge as qe

from memory.schema import (
    DENSE_VECTOR,
    PAYLOAD_INDEXES,
    SPARSE_VECTOR,
    VECTOR_KINDS,
    VectorKind,
    collection_name,
)
from memory.stores.base import (
    SchemaMismatch,
    SparseVector,
    StoreError,
    StoreUnavailable,
    VectorFilter,
    VectorHit,
    VectorPoint,
)
from memory.stores.qdrant_edge_query import (
    edge_filter,
    edge_point,
    payload_index,
    plan_edge_search,
    shard_config,
)
from memory.stores.qdrant_query import clamp_weights, decode_payload
from memory.stores.vectors import CollectionStatus, IndexStatus, VectorIndex

log = logging.getLogger(__name__)

T = TypeVar("T")

SCROLL_PAGE = 1024
UPSERT_BATCH = 256
FLUSH_EVERY = 5000
"""Flush the segments after this many written points (the WAL already holds them: a flush only
bounds the replay after a crash and the WAL's size)."""
TIE_MARGIN = 8
"""Extra results fetched so that ties at the limit are cut by id, as on every backend."""
LOCK_FILE = ".lock"
CONFIG_FILE = "edge_config.json"


class EdgeIndex(VectorIndex):
    """Dense + sparse vectors per kind of memory in Qdrant Edge shards under one directory."""

    backend = "qdrant-edge"

    def __init__(self, path: Path, lock: IO[str], *, fingerprint: str, dim: int) -> None:
        """Wrap a locked directory; use `EdgeIndex.open`, which takes the lock."""
        self.path = path
        self.fingerprint = fingerprint
        self.dim = dim
        self.generation = 0
        self._lock: IO[str] | None = lock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mneme-edge")
        self._shards: dict[str, qe.EdgeShard] = {}  # owned by the worker thread
        self._ready = False
        self._closed = False
        self._unflushed = 0

    @classmethod
    async def open(
        cls, location: str | os.PathLike[str], *, fingerprint: str, dim: int
    ) -> EdgeIndex:
        """Open (creating) the directory and lock it; raise `StoreUnavailable` with the fix.

        No shard is created: call `setup()` next (the first upsert also does).
        """
        if dim <= 0:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        path, lock = _lock_directory(Path(location))
        return cls(path, lock, fingerprint=fingerprint, dim=dim)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise StoreError(f"the Qdrant Edge index at {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args))

    # ------------------------------------------------------------------ schema

    async def setup(self) -> None:
        """Create the shards of this embedder and their payload indexes; idempotent.

        Raises `SchemaMismatch` when a kind already has a shard of another embedder, or the
        same-named shard has another dimension or vector layout.
        """
        await self._run(self._setup_on_worker)

    def _setup_on_worker(self) -> None:
        existing = self._names()
        foreign = sorted(n for n in existing if not self._mine(n))
        if foreign:
            others = sorted({n.split("__", 1)[1] for n in foreign})
            raise SchemaMismatch(
                f"the vector index at {str(self.path)!r} holds collections of embedder(s) "
                f"{', '.join(others)} ({', '.join(foreign)}) but the configured embedder is "
                f"{self.fingerprint}; run `mneme reindex` to drop them and rebuild from the "
                f"graph, or set MNEME_EMBEDDING_MODEL (and MNEME_EMBEDDING_DIM) back to the old "
                f"model. Vectors of two models are never mixed."
            )
        for kind in VECTOR_KINDS:
            name = collection_name(kind, self.fingerprint)
            if name in existing:
                self._check_layout(name)
                shard = self._load(name)
            else:
                shard = self._create(name)
            indexed = shard.info().payload_schema
            for field in PAYLOAD_INDEXES:
                if field not in indexed:
                    shard.update(qe.UpdateOperation.create_field_index(field, payload_index(field)))
        self._ready = True

    def _check_layout(self, name: str) -> None:
        try:
            config = json.loads((self.path / name / CONFIG_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            config = {}
        dense = (config.get("vectors") or {}).get(DENSE_VECTOR) or {}
        sparse = (config.get("sparse_vectors") or {}).get(SPARSE_VECTOR) or {}
        if dense.get("distance") != "Cosine" or str(sparse.get("modifier", "")).lower() != "idf":
            raise SchemaMismatch(
                f"collection {name} at {str(self.path)!r} lacks the cosine {DENSE_VECTOR!r} or "
                f"the IDF {SPARSE_VECTOR!r} vector; it was not made by this version of mneme: "
                f"run `mneme reindex`"
            )
        if dense.get("size") != self.dim:
            raise SchemaMismatch(
                f"collection {name} at {str(self.path)!r} holds {dense.get('size')}-dimensional "
                f"vectors but the embedder {self.fingerprint} produces {self.dim}; run `mneme "
                f"reindex`, or set MNEME_EMBEDDING_MODEL / MNEME_EMBEDDING_DIM back to the model "
                f"that built it"
            )

    async def missing_collections(self) -> list[str]:
        """Collections of this embedder that do not exist yet (for `mneme doctor`)."""
        existing = await self._run(self._names)
        wanted = [collection_name(kind, self.fingerprint) for kind in VECTOR_KINDS]
        return [name for name in wanted if name not in existing]

    async def collections(self) -> list[str]:
        """Every mneme collection in the directory (any embedder), sorted."""
        return sorted(await self._run(self._names))

    async def drop_collections(self, fingerprint: str | None) -> list[str]:
        """Drop the shards of one embedder fingerprint (every embedder with None); see base."""
        try:
            return await self._run(self._drop_on_worker, fingerprint)
        finally:
            self.generation += 1

    def _drop_on_worker(self, fingerprint: str | None) -> list[str]:
        dropped = sorted(
            n for n in self._names() if fingerprint is None or n.split("__", 1)[1] == fingerprint
        )
        for name in dropped:
            shard = self._shards.pop(name, None)
            if shard is not None:
                shard.close()
            shutil.rmtree(self.path / name)
        self._ready = False
        return dropped

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
            await self._run(
                self._upsert_on_worker, collection_name(kind, self.fingerprint), converted
            )
        finally:  # even a partial write invalidates cached copies
            self.generation += 1

    def _upsert_on_worker(self, name: str, points: list[qe.Point]) -> None:
        shard = self._load(name)
        for start in range(0, len(points), UPSERT_BATCH):
            shard.update(qe.UpdateOperation.upsert_points(points[start : start + UPSERT_BATCH]))
        self._wrote(len(points))

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
            await self._run(self._delete_on_worker, collection_name(kind, self.fingerprint), flt)
        finally:
            self.generation += 1

    def _delete_on_worker(self, name: str, flt: qe.Filter) -> None:
        shard = self._existing(name)
        if shard is not None:
            shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
            self._wrote(1)

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
        signal_weights: dict[str, float] | None = None,
    ) -> list[VectorHit]:
        """The tenant's best points for a dense and/or sparse query; contract in `VectorIndex`."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        if dense is not None and len(dense) != self.dim:
            raise SchemaMismatch(
                f"query vector has {len(dense)} dimensions but the index of embedder "
                f"{self.fingerprint} expects {self.dim}; embed the query with the same embedder"
            )
        weights = clamp_weights(signal_weights)
        if filter is not None and filter.episode_uids is not None and not filter.episode_uids:
            return []
        if dense is None and (sparse is None or not sparse.indices):
            return []
        flt = edge_filter(tenant, filter or VectorFilter())
        plan = plan_edge_search(
            dense=dense,
            sparse=sparse,
            limit=limit,
            flt=flt,
            idf_corpus=edge_filter(tenant),
            score_threshold=score_threshold,
            weights=weights,
        )
        request = qe.QueryRequest(
            limit=limit + TIE_MARGIN,
            query=plan.query,
            prefetches=plan.prefetches,
            filter=flt,
            params=plan.params,
            score_threshold=plan.score_threshold,
            with_payload=True,
        )
        found = await self._run(
            self._query_on_worker, collection_name(kind, self.fingerprint), request
        )
        hits = [
            VectorHit(id=str(p.id), score=p.score * plan.scale, payload=decode_payload(p.payload))
            for p in found
        ]
        hits.sort(key=lambda h: (-h.score, h.id))
        return hits[:limit]

    def _query_on_worker(self, name: str, request: qe.QueryRequest) -> list[qe.ScoredPoint]:
        shard = self._existing(name)
        return [] if shard is None else shard.query(request)

    async def scroll_episode_uids(self, kind: VectorKind, tenant: str | None) -> set[str]:
        """Episode uids that have points of `kind` (one tenant, or all with None: maintenance)."""
        records = await self._run(self._scroll_on_worker, kind, tenant, ["episode_uid"])
        return {str(r.payload["episode_uid"]) for r in records if r.payload}

    async def scroll_points(self, kind: VectorKind, tenant: str) -> list[VectorHit]:
        """Every point of the tenant in `kind` (archived too), by id, with score 0."""
        records = await self._run(self._scroll_on_worker, kind, tenant, True)
        hits = [VectorHit(str(r.id), 0.0, decode_payload(r.payload)) for r in records]
        return sorted(hits, key=lambda h: h.id)

    def _scroll_on_worker(
        self, kind: VectorKind, tenant: str | None, payload: bool | list[str]
    ) -> list[qe.Record]:
        shard = self._existing(collection_name(kind, self.fingerprint))
        if shard is None:
            return []
        flt = edge_filter(tenant) if tenant is not None else None
        records: list[qe.Record] = []
        offset: Any = None
        while True:
            page, offset = shard.scroll(
                qe.ScrollRequest(offset=offset, limit=SCROLL_PAGE, filter=flt, with_payload=payload)
            )
            records += page
            if offset is None:
                return records

    async def count(self, kind: VectorKind, tenant: str) -> int:
        """Number of the tenant's points of `kind`, archived ones included."""
        return await self._run(
            self._count_on_worker, collection_name(kind, self.fingerprint), tenant
        )

    def _count_on_worker(self, name: str, tenant: str) -> int:
        shard = self._existing(name)
        if shard is None:
            return 0
        return shard.count(qe.CountRequest(exact=True, filter=edge_filter(tenant)))

    # ------------------------------------------------------------------ maintenance

    async def optimize(self) -> bool:
        """Build HNSW graphs and merge or vacuum segments now; True if anything changed.

        Blocks the whole process (the binding keeps the GIL) for as long as the build takes:
        seconds per 10k points. Until then new points are searched exactly, which is correct,
        only slower for large tenants. Call it from maintenance (reindex, sweep, start-up).
        """
        return await self._run(self._optimize_on_worker)

    def _optimize_on_worker(self) -> bool:
        changed = False
        for name in self._names():
            if self._mine(name):
                changed = self._load(name).optimize() or changed
        return changed

    async def describe(self) -> IndexStatus:
        """Backend, shards with point counts, and WAL/flush state (for `mneme doctor`)."""
        return await self._run(self._describe_on_worker)

    def _describe_on_worker(self) -> IndexStatus:
        statuses = []
        for name in sorted(self._names()):
            if not self._mine(name):  # not loaded: another embedder's shard stays untouched
                statuses.append(CollectionStatus(name, None))
                continue
            info = self._load(name).info()
            statuses.append(
                CollectionStatus(
                    name, info.points_count, info.indexed_vectors_count, info.segments_count
                )
            )
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
            unflushed_writes=self._unflushed,
        )

    async def close(self) -> None:
        """Flush and close every shard, release the directory; safe to call twice."""
        if self._closed:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._close_on_worker)
        finally:
            self._closed = True
            self._executor.shutdown(wait=False)
            if self._lock is not None:
                self._lock.close()  # releases the flock
                self._lock = None

    def _close_on_worker(self) -> None:
        shards, self._shards = self._shards, {}
        for shard in shards.values():
            try:
                shard.flush()
            finally:
                shard.close()

    # ------------------------------------------------------------------ worker helpers

    def _names(self) -> set[str]:
        return {
            entry.name
            for entry in self.path.iterdir()
            if _is_ours(entry.name) and (entry / CONFIG_FILE).is_file()
        }

    def _mine(self, name: str) -> bool:
        return name.split("__", 1)[1] == self.fingerprint

    def _existing(self, name: str) -> qe.EdgeShard | None:
        if name in self._shards:
            return self._shards[name]
        if (self.path / name / CONFIG_FILE).is_file():
            return self._load(name)
        return None

    def _load(self, name: str) -> qe.EdgeShard:
        shard = self._shards.get(name)
        if shard is None:
            shard = self._wrap(name, lambda: qe.EdgeShard.load(str(self.path / name)))
            self._shards[name] = shard
        return shard

    def _create(self, name: str) -> qe.EdgeShard:
        config = shard_config(self.dim)
        shard = self._wrap(name, lambda: qe.EdgeShard.create(str(self.path / name), config))
        self._shards[name] = shard
        return shard

    def _wrap(self, name: str, make: Callable[[], qe.EdgeShard]) -> qe.EdgeShard:
        try:
            return make()
        except Exception as exc:
            if "WAL" in str(exc) and "WouldBlock" in str(exc):
                raise _held(self.path / name, "") from None
            raise

    def _wrote(self, points: int) -> None:
        self._unflushed += points
        if self._unflushed >= FLUSH_EVERY:
            for shard in self._shards.values():
                shard.flush()
            self._unflushed = 0


def _lock_directory(location: Path) -> tuple[Path, IO[str]]:
    """Create the directory and take its lock file, or raise `StoreUnavailable` with the fix."""
    path = location.expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        lock = (path / LOCK_FILE).open("a+", encoding="utf-8")
    except OSError as exc:
        raise StoreUnavailable(
            f"cannot open the Qdrant Edge directory {path}: {exc}; point the vector store "
            f"at a writable directory (QDRANT_PATH or MNEME_DATA_DIR)"
        ) from None
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.seek(0)
        holder = lock.read().strip()
        lock.close()
        raise _held(path, holder) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return path, lock


def _held(path: Path, holder: str) -> StoreUnavailable:
    by = f" (pid {holder})" if holder.isdigit() else ""
    return StoreUnavailable(
        f"the Qdrant Edge directory {path} is already open in another process{by}, e.g. a "
        f"running `mneme` or `langgraph dev`; only one process can open a Qdrant Edge directory "
        f"at a time. Stop the other process, or run a Qdrant server and set QDRANT_URL so that "
        f"several processes can share it"
    )


def _is_ours(name: str) -> bool:
    kind, sep, rest = name.partition("__")
    return bool(sep and rest) and kind in VECTOR_KINDS
