"""An in-process snapshot of one tenant's vectors, for fast exact search in embedded mode.

Qdrant's local mode evaluates the payload filter, the sparse dot products and the result copies in
Python for every point on every query: a few thousand points cost tens of milliseconds per search,
over the retrieval budget. In local mode one process owns the directory, so this module can keep a
numpy copy of a tenant's points (dense matrix, sparse postings, payloads) and answer the same
queries with the same score contract as `QdrantIndex.search` (dense: cosine; sparse: BM25 with
Qdrant's IDF, here over the tenant's points), exactly and in about a millisecond.

Freshness: a snapshot is rebuilt when the collection's write generation changes
(`QdrantIndex.generation`, bumped by every upsert and delete of this process) or, on an index
without that counter, when the collection's point count changes. A Qdrant server is never
snapshotted: it searches natively and fast.
"""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.schema import DENSE_VECTOR, SPARSE_VECTOR, VectorKind, as_utc, collection_name
from memory.stores.base import SparseVector, VectorFilter, VectorHit
from memory.stores.qdrant import QdrantIndex
from memory.stores.qdrant_query import decode_payload, tenant_filter

__all__ = ["Snapshot", "SnapshotCache"]

PAGE = 2048


@dataclass(slots=True)
class Snapshot:
    """One tenant's points of one kind: ids, unit dense rows, sparse postings, payloads."""

    ids: list[str]
    payloads: list[dict[str, object]]
    dense: npt.NDArray[np.float32]
    postings: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]
    idf_docs: int
    archived: npt.NDArray[np.bool_]
    created: npt.NDArray[np.float64]
    """Creation time as POSIX seconds (NaN when unknown)."""
    uids: npt.NDArray[np.object_]
    key: object = None
    records: dict[str, Any] = field(default_factory=dict)
    """The scrolled records by point id, for incremental refreshes."""
    _adjacent: dict[str, tuple[str | None, str | None]] | None = None
    _order: tuple[list[str], dict[str, int]] | None = None

    @classmethod
    def build(cls, records: Sequence[Any], dim: int, key: object) -> Snapshot:
        """A snapshot from scrolled records (with payloads and vectors)."""
        ids: list[str] = []
        payloads: list[dict[str, object]] = []
        rows: list[Any] = []
        post_rows: dict[int, list[int]] = defaultdict(list)
        post_vals: dict[int, list[float]] = defaultdict(list)
        sparse_docs = 0
        for record in records:
            vectors = record.vector if isinstance(record.vector, dict) else {}
            dense = vectors.get(DENSE_VECTOR)
            if dense is None:
                continue
            row = len(ids)
            ids.append(str(record.id))
            payloads.append(decode_payload(record.payload))
            rows.append(dense)
            sparse = vectors.get(SPARSE_VECTOR)
            if sparse is not None and len(sparse.indices):
                sparse_docs += 1
                for index, value in zip(sparse.indices, sparse.values, strict=True):
                    post_rows[int(index)].append(row)
                    post_vals[int(index)].append(float(value))
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        postings = {
            token: (
                np.asarray(post_rows[token], dtype=np.int64),
                np.asarray(post_vals[token], dtype=np.float32),
            )
            for token in post_rows
        }
        archived = np.asarray([bool(p.get("archived", False)) for p in payloads], dtype=bool)
        created = np.asarray([_timestamp(p.get("created_at")) for p in payloads], dtype=np.float64)
        uids = np.asarray([str(p.get("episode_uid", "")) for p in payloads], dtype=object)
        kept = {str(r.id): r for r in records}
        return cls(ids, payloads, matrix, postings, sparse_docs, archived, created, uids, key, kept)

    def adjacency(self) -> dict[str, tuple[str | None, str | None]]:
        """Episode uid → (previous, next) episode uid in its thread, by creation time."""
        if self._adjacent is None:
            rows: dict[str, tuple[str, float]] = {}
            for payload, when in zip(self.payloads, self.created, strict=True):
                uid = str(payload.get("episode_uid", ""))
                if uid and uid not in rows:
                    rows[uid] = (str(payload.get("thread_id", "")), float(when))
            order = sorted(rows, key=lambda u: (rows[u][0], rows[u][1], u))
            adjacent: dict[str, tuple[str | None, str | None]] = {}
            for i, uid in enumerate(order):
                thread = rows[uid][0]
                before = order[i - 1] if i > 0 and rows[order[i - 1]][0] == thread else None
                after = (
                    order[i + 1] if i + 1 < len(order) and rows[order[i + 1]][0] == thread else None
                )
                adjacent[uid] = (before, after)
            self._adjacent = adjacent
        return self._adjacent

    def chain(self, uid: str, k: int) -> list[tuple[int, str]]:
        """Up to k episodes before and after `uid` in creation order, as (offset, uid).

        The same order as the graph's TEMPORAL_NEXT chain (created_at, uid), over the episodes
        that have vectors here (archived ones have none).
        """
        if self._order is None:
            first: dict[str, float] = {}
            for payload, when in zip(self.payloads, self.created, strict=True):
                key = str(payload.get("episode_uid", ""))
                if key and key not in first:
                    first[key] = float(when)
            order = sorted(first, key=lambda u: (first[u], u))
            self._order = (order, {u: i for i, u in enumerate(order)})
        order, position = self._order
        at = position.get(uid)
        if at is None:
            return []
        return [
            (offset, order[at + offset])
            for offset in [*range(-k, 0), *range(1, k + 1)]
            if 0 <= at + offset < len(order)
        ]

    def _mask(self, flt: VectorFilter | None) -> npt.NDArray[np.bool_]:
        mask = np.ones(len(self.ids), dtype=bool)
        if flt is None or not flt.include_archived:
            mask &= ~self.archived
        if flt is None:
            return mask
        if flt.episode_uids is not None:
            mask &= np.isin(self.uids, list(flt.episode_uids))
        if flt.created_from is not None:
            mask &= self.created >= as_utc(flt.created_from).timestamp()
        if flt.created_to is not None:
            mask &= self.created < as_utc(flt.created_to).timestamp()
        return mask

    def search(
        self,
        *,
        dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
        limit: int = 10,
        filter: VectorFilter | None = None,
        score_threshold: float | None = None,
    ) -> list[VectorHit]:
        """Dense-only (cosine) or sparse-only (BM25) search, highest first; see `QdrantIndex.search`."""
        if not self.ids or (dense is None) == (sparse is None):
            if dense is not None and sparse is not None:
                raise ValueError("a snapshot answers dense-only or sparse-only queries")
            return []
        mask = self._mask(filter)
        if dense is not None:
            query = np.asarray(dense, dtype=np.float32)
            norm = float(np.linalg.norm(query))
            scores = self.dense @ (query / norm if norm > 0 else query)
        else:
            assert sparse is not None
            scores = np.full(len(self.ids), -np.inf, dtype=np.float32)
            for index in dict.fromkeys(sparse.indices):
                hit = self.postings.get(int(index))
                if hit is None:
                    continue
                rows, values = hit
                idf = math.log((self.idf_docs - len(rows) + 0.5) / (len(rows) + 0.5) + 1.0)
                weight = idf * float(sparse.values[sparse.indices.index(index)])
                current = scores[rows]
                scores[rows] = np.where(np.isinf(current), 0.0, current) + weight * values
        scores = np.where(mask, scores, -np.inf)
        if score_threshold is not None:
            scores = np.where(scores > score_threshold, scores, -np.inf)
        count = int(np.count_nonzero(np.isfinite(scores)))
        if count == 0:
            return []
        k = min(limit, count)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [
            VectorHit(id=self.ids[i], score=float(scores[i]), payload=self.payloads[i]) for i in top
        ]


async def _scroll(client: Any, name: str, flt: Any, *, vectors: bool) -> list[Any]:
    records: list[Any] = []
    offset: Any = None
    while True:
        page, offset = await client.scroll(
            name,
            scroll_filter=flt,
            limit=PAGE,
            offset=offset,
            with_payload=vectors,
            with_vectors=vectors,
        )
        records.extend(page)
        if offset is None:
            return records


def _timestamp(value: object) -> float:
    if isinstance(value, datetime):
        return as_utc(value).timestamp()
    if isinstance(value, str):
        try:
            return as_utc(datetime.fromisoformat(value)).timestamp()
        except ValueError:
            return math.nan
    return math.nan


@dataclass(slots=True)
class SnapshotCache:
    """Snapshots per (kind, tenant) of one local-mode index, rebuilt when the index changes."""

    index: QdrantIndex
    max_tenants: int = 8
    _snapshots: dict[tuple[VectorKind, str], Snapshot] = field(default_factory=dict)
    _locks: dict[tuple[VectorKind, str], asyncio.Lock] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        """Only local mode is snapshotted; a server searches natively."""
        return not self.index.server

    async def _key(self, kind: VectorKind) -> object:
        generation = getattr(self.index, "generation", None)
        if generation is not None:
            return generation
        # Without a write counter: the collection's point count (cheap without a filter).
        client = self.index._client
        info = await client.get_collection(collection_name(kind, self.index.fingerprint))
        return info.points_count

    async def get(self, kind: VectorKind, tenant: str) -> Snapshot | None:
        """The tenant's current snapshot of `kind` (None when the collection does not exist)."""
        name = collection_name(kind, self.index.fingerprint)
        if name not in await self.index.collections():
            return None
        key = await self._key(kind)
        slot = (kind, tenant)
        current = self._snapshots.get(slot)
        if current is not None and current.key == key:
            return current
        lock = self._locks.setdefault(slot, asyncio.Lock())
        async with lock:
            current = self._snapshots.get(slot)
            if current is not None and current.key == key:
                return current
            snapshot = await self._refresh(name, tenant, current, key)
            if len(self._snapshots) >= self.max_tenants and slot not in self._snapshots:
                self._snapshots.pop(next(iter(self._snapshots)))
            self._snapshots[slot] = snapshot
            return snapshot

    async def _refresh(
        self, name: str, tenant: str, current: Snapshot | None, key: object
    ) -> Snapshot:
        """Fetch what changed since `current` (by point id) and rebuild the arrays.

        Points added or removed are seen exactly; a point re-upserted under the same id keeps its
        old copy until the tenant's snapshot is rebuilt from scratch (`SnapshotCache.clear`).
        """
        client = self.index._client
        flt = tenant_filter(tenant)
        if current is None:
            records = await _scroll(client, name, flt, vectors=True)
            return Snapshot.build(records, self.index.dim, key)
        ids = {str(r.id) for r in await _scroll(client, name, flt, vectors=False)}
        known = set(current.records)
        added = sorted(ids - known)
        kept = {i: r for i, r in current.records.items() if i in ids}
        if added:
            fetched = await client.retrieve(name, ids=added, with_payload=True, with_vectors=True)
            kept.update({str(r.id): r for r in fetched})
        if not added and len(kept) == len(known):
            current.key = key
            return current
        return Snapshot.build(list(kept.values()), self.index.dim, key)

    def clear(self) -> None:
        """Forget every snapshot (the next search rebuilds from the index)."""
        self._snapshots.clear()

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
        """`QdrantIndex.search` for dense-only or sparse-only queries, from the snapshot."""
        if not self.enabled:
            return await self.index.search(
                kind,
                tenant,
                dense=dense,
                sparse=sparse,
                limit=limit,
                filter=filter,
                score_threshold=score_threshold,
            )
        snapshot = await self.get(kind, tenant)
        if snapshot is None:
            return []
        return snapshot.search(
            dense=dense, sparse=sparse, limit=limit, filter=filter, score_threshold=score_threshold
        )
