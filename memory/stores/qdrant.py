"""The vector index over Qdrant: one collection per kind and embedder, tenant-filtered search.

Runs against a Qdrant server or cluster (`QDRANT_URL`, over REST or gRPC; connecting, failing
over between nodes and the collection layout are `qdrant_server.py`'s) or qdrant-client's
embedded local mode (a directory, or `:memory:` in tests). Collections are named `<kind>__<embedder fingerprint>`, so a model swap
is a re-index (`mneme reindex`), never a silent mix of vectors from two models. Every read and
delete filters on the tenant; point ids are deterministic (callers pass `schema.stable_uid`), so
upserts are idempotent. Query building lives in `qdrant_query.py`; this module does the I/O.

Local mode is exact (brute-force) search in this process, fine for one person's memory; it
ignores payload indexes (we skip creating them there) and only one process may open a directory.
The interface and its score contract are `vectors.VectorIndex`'s.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Iterable, Sequence
from typing import TypeVar

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from memory.schema import (
    DENSE_VECTOR,
    SPARSE_VECTOR,
    VECTOR_KINDS,
    VectorKind,
    collection_name,
)
from memory.stores.base import (
    SearchRequest,
    SparseVector,
    StoredVector,
    StoreUnavailable,
    VectorFilter,
    VectorHit,
    VectorPoint,
)
from memory.stores.qdrant_collections import QdrantCollections, collection_names
from memory.stores.qdrant_idf import TERMS_FIELD, TermCounts, weighted
from memory.stores.qdrant_local import large_local_warning, open_local
from memory.stores.qdrant_query import (
    decode_payload,
    plan_search,
    point_struct,
    tenant_filter,
)
from memory.stores.qdrant_server import (
    Connection,
    Endpoints,
    Layout,
    cluster_health,
    describe,
    refused_key,
)
from memory.stores.vectors import CollectionStatus, IndexStatus, VectorIndex

log = logging.getLogger(__name__)

T = TypeVar("T")

SCROLL_PAGE = 1024
UPSERT_BATCH = 256
"""Points per upsert request (a server rejects requests over 32 MB; payloads can be large)."""
REQUEST_TIMEOUT_S = 30
"""Server-mode request timeout once connected (the connect check uses `timeout_s`)."""
TIE_MARGIN = 8
"""Extra results fetched so that ties at the limit are cut by id, as on every backend."""


class QdrantIndex(QdrantCollections, VectorIndex):
    """Dense + sparse vectors per kind of memory, for one embedder fingerprint and dimension."""

    backend = "qdrant"

    def __init__(
        self,
        endpoints: Endpoints,
        *,
        location: str,
        fingerprint: str,
        dim: int,
        layout: Layout | None = None,
    ) -> None:
        """Wrap open clients; prefer `QdrantIndex.open`, which checks they answer."""
        self._endpoints = endpoints
        self.location = location
        self.fingerprint = fingerprint
        self.dim = dim
        self.server = location.startswith(("http://", "https://"))
        self.layout = layout or Layout()
        """How collections this index creates on a server are laid out (shards, replicas,
        write consistency, per-tenant HNSW); ignored in local mode."""
        self._all_payload: bool | models.PayloadSelectorExclude = (
            models.PayloadSelectorExclude(exclude=[TERMS_FIELD]) if self.server else True
        )
        """Every payload field callers wrote (on a server, not the IDF's term list)."""
        self._ordering = models.WriteOrdering.MEDIUM if self.server else None
        """On a server every write goes through its shard's leader, so two processes updating
        one point reach every replica in the same order."""
        self._ready = False
        self._closed = False
        self._existing: set[str] = set()
        self._term_counts = TermCounts()
        """A server's per-tenant term counts for BM25's IDF (`qdrant_idf`)."""
        self._custom: set[str] = set()
        """Collections with tenant shards (custom sharding, `qdrant_shards`)."""
        self.generation = 0
        """Bumped after every write through this index (any kind): a cache key for readers that
        keep copies of the points (in local mode this process is the only writer)."""

    @property
    def client(self) -> AsyncQdrantClient:
        """The client in use, for read-only maintenance; writes must go through the index."""
        return self._endpoints.client

    @property
    def endpoints(self) -> Endpoints:
        """Every node this index may talk to (one for a single server or local mode)."""
        return self._endpoints

    @classmethod
    async def open(
        cls,
        location: str,
        *,
        api_key: str | None = None,
        prefer_grpc: bool = False,
        grpc_port: int = 6334,
        layout: Layout | None = None,
        fingerprint: str,
        dim: int,
        timeout_s: float = 2.0,
    ) -> QdrantIndex:
        """Open `:memory:`, a local directory or a server (one URL, or several nodes of one
        cluster separated by commas); raise `StoreUnavailable` with a fix.

        Nothing is created: call `setup()` next.
        """
        if dim <= 0:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        if location.startswith(("http://", "https://")):
            conn = Connection.parse(
                location, api_key=api_key, prefer_grpc=prefer_grpc, grpc_port=grpc_port
            )
            conn.warn_plain_http()
            timeout = max(REQUEST_TIMEOUT_S, math.ceil(timeout_s))
            endpoints = Endpoints([(url, conn.client(url, timeout)) for url in conn.urls])
            try:
                names = await asyncio.wait_for(endpoints.call(collection_names), timeout_s)
            except Exception as exc:
                await endpoints.close()
                if refused_key(exc):
                    raise StoreUnavailable(
                        f"QDRANT_URL={location} refused the API key ({describe(exc)}); "
                        f"set QDRANT_API_KEY to the server's key"
                    ) from None
                if isinstance(exc, UnexpectedResponse):
                    raise StoreUnavailable(
                        f"QDRANT_URL={location} answered HTTP {exc.status_code}; is it a Qdrant "
                        f"server? Check the URL (e.g. http://localhost:6333)"
                    ) from None
                raise StoreUnavailable(
                    f"QDRANT_URL={location} does not answer within {timeout_s:g}s "
                    f"({describe(exc) if str(exc) or not isinstance(exc, TimeoutError) else 'timeout'}); "
                    f"start the Qdrant server (e.g. `docker compose up -d qdrant`), check "
                    f"QDRANT_API_KEY{' and QDRANT_GRPC_PORT' if prefer_grpc else ''}, or unset "
                    f"QDRANT_URL to use the embedded local mode"
                ) from None
        else:
            client = open_local(location)
            endpoints = Endpoints([(location, client)])
            names = await collection_names(client)
        index = cls(endpoints, location=location, fingerprint=fingerprint, dim=dim, layout=layout)
        index._existing = names
        return index

    # ------------------------------------------------------------------ writes

    async def upsert(self, kind: VectorKind, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id; every point is validated before anything is written.

        Raises `SchemaMismatch` for a dense vector of the wrong dimension and `ValueError` for a
        missing `tenant`/`episode_uid`/`text` payload field or a malformed vector.
        """
        structs = [
            point_struct(p, dim=self.dim, fingerprint=self.fingerprint, terms=self.server)
            for p in points
        ]
        if not structs:
            return
        if not self._ready:
            await self.setup()
        name = collection_name(kind, self.fingerprint)
        groups: dict[str | None, list[models.PointStruct]] = {}
        for point, struct in zip(points, structs, strict=True):
            tenant = str(point.payload["tenant"]) if name in self._custom else None
            groups.setdefault(tenant, []).append(struct)
        try:
            for tenant, group in groups.items():
                for start in range(0, len(group), UPSERT_BATCH):
                    await self._write(name, tenant, group[start : start + UPSERT_BATCH])
        finally:  # even a partial write invalidates cached copies
            self.generation += 1

    async def _write(self, name: str, tenant: str | None, batch: list[models.PointStruct]) -> None:
        if self.server:
            routing = self._routing(name, tenant)
            await self._call(
                lambda c: c.upsert(
                    name,
                    points=batch,
                    wait=True,
                    shard_key_selector=routing,
                    ordering=self._ordering,
                )
            )
            return
        # Local mode runs synchronously inside the coroutine: catching warnings is safe.
        with large_local_warning(self.location):
            await self.client.upsert(name, points=batch, wait=True)

    async def delete_by_episode(
        self, tenant: str, episode_uid: str, kinds: Iterable[VectorKind] | None = None
    ) -> None:
        """Delete every point of the episode in the given kinds (all kinds by default)."""
        flt = tenant_filter(tenant, episode_uid=episode_uid)
        for kind in kinds or VECTOR_KINDS:
            await self._delete(kind, tenant, flt)

    async def delete_stale(
        self, kind: VectorKind, tenant: str, episode_uid: str, keep_ids: Sequence[str]
    ) -> None:
        """Delete the episode's points of `kind` whose ids are not in `keep_ids`."""
        await self._delete(
            kind, tenant, tenant_filter(tenant, episode_uid=episode_uid, exclude_ids=keep_ids)
        )

    async def delete_points(self, kind: VectorKind, tenant: str, ids: Sequence[str]) -> None:
        """Delete points by id, only those of the tenant."""
        if not ids:
            return
        await self._delete(kind, tenant, tenant_filter(tenant, ids=ids))

    async def _delete(self, kind: VectorKind, tenant: str, flt: models.Filter) -> None:
        name = collection_name(kind, self.fingerprint)
        if not await self._exists([name]):
            return
        routing = self._routing(name, tenant)
        try:
            await self._call(
                lambda c: c.delete(
                    name,
                    points_selector=models.FilterSelector(filter=flt),
                    wait=True,
                    shard_key_selector=routing,
                    ordering=self._ordering,
                )
            )
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
        """The tenant's best points for a dense and/or sparse query, highest score first.

        Score contract (higher is better; the scale depends on the query):
        - dense only: cosine similarity in [-1, 1];
        - sparse only: BM25 (Σ idf · tf-weight over shared terms, ≥ 0);
        - both: reciprocal-rank fusion with k = 60 over the two lists (each over-fetched to
          2 × limit), scaled by k/2 so that first place in both lists scores 1.0;
        `score_threshold` is a floor on dense cosine similarity when `dense` is given (before
        fusion; sparse-side candidates are not held to it), else on the BM25 score.
        Archived points are excluded unless `filter.include_archived`.
        """
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
        """Several searches, one `query_batch_points` call per collection (one round trip to a
        server); contract in `VectorIndex`. A request's `fields` are the only payload fields its
        hits carry."""
        for r in requests:
            self.check_query(r.dense, r.limit)
        existing = await self._exists(collection_name(r.kind, self.fingerprint) for r in requests)
        live = [
            (i, r, collection_name(r.kind, self.fingerprint))
            for i, r in enumerate(requests)
            if not (
                r.filter is not None
                and r.filter.episode_uids is not None
                and not r.filter.episode_uids
            )
            and collection_name(r.kind, self.fingerprint) in existing
            and (r.dense is not None or (r.sparse is not None and r.sparse.indices))
        ]
        corpus = tenant_filter(tenant)
        idf = models.SearchParams(idf=models.IdfCorpusParams(corpus=corpus))
        server_idf = await self._server_idf(tenant, corpus, live) if self.server else {}
        by_collection: dict[str, list[tuple[int, models.QueryRequest, float]]] = {}
        for i, r, name in live:
            sparse = r.sparse
            if self.server and sparse is not None and sparse.indices:
                sparse = weighted(sparse, server_idf[name])
            flt = tenant_filter(tenant, r.filter or VectorFilter())
            plan = plan_search(
                dense=r.dense,
                sparse=sparse,
                limit=r.limit,
                flt=flt,
                score_threshold=r.score_threshold,
                filter_prefetches=self.server,
            )
            local_idf = not self.server
            query = models.QueryRequest(
                query=plan.query,
                using=plan.using,
                prefetch=_sparse_params(plan.prefetch, idf) if local_idf else plan.prefetch,
                filter=flt,
                params=idf if local_idf and plan.using == SPARSE_VECTOR else None,
                score_threshold=plan.score_threshold,
                limit=r.limit + TIE_MARGIN,
                with_payload=list(r.fields) if r.fields is not None else self._all_payload,
                shard_key=self._routing(name, tenant),
            )
            by_collection.setdefault(name, []).append((i, query, plan.scale))
        out: list[list[VectorHit]] = [[] for _ in requests]

        async def run(name: str, planned: list[tuple[int, models.QueryRequest, float]]) -> None:
            batch = [query for _, query, _ in planned]
            responses = await self._call(lambda c: c.query_batch_points(name, requests=batch))
            for (i, _, scale), response in zip(planned, responses, strict=True):
                hits = [
                    VectorHit(str(p.id), float(p.score) * scale, decode_payload(p.payload))
                    for p in response.points
                ]
                hits.sort(key=lambda h: (-h.score, h.id))
                out[i] = hits[: requests[i].limit]

        await asyncio.gather(*(run(name, planned) for name, planned in by_collection.items()))
        return out

    async def _server_idf(
        self, tenant: str, corpus: models.Filter, live: list[tuple[int, SearchRequest, str]]
    ) -> dict[str, dict[int, float]]:
        """Each collection's IDF of the sparse terms its requests ask for (`qdrant_idf`)."""
        terms: dict[str, set[int]] = {}
        for _, r, name in live:
            if r.sparse is not None and r.sparse.indices:
                terms.setdefault(name, set()).update(r.sparse.indices)
        names = list(terms)
        found = await asyncio.gather(
            *(
                self._term_counts.idf(
                    self._endpoints,
                    name,
                    tenant,
                    corpus,
                    terms[name],
                    generation=self.generation,
                    shard_key=self._routing(name, tenant),
                )
                for name in names
            )
        )
        return dict(zip(names, found, strict=True))

    async def _read_vectors(
        self, kind: VectorKind, tenant: str, ids: Sequence[str], fields: Sequence[str]
    ) -> list[StoredVector]:
        """The points `ids` that exist where the tenant's points are (its shards, with tenant
        shards); `read_vectors` keeps the tenant's own."""
        name = collection_name(kind, self.fingerprint)
        if not await self._exists([name]):
            return []
        routing = self._routing(name, tenant)
        records = await self._call(
            lambda c: c.retrieve(
                name,
                ids=list(ids),
                with_payload=list(fields),
                with_vectors=[DENSE_VECTOR],
                shard_key_selector=routing,
            )
        )
        out = []
        for r in records:
            vector = r.vector.get(DENSE_VECTOR) if isinstance(r.vector, dict) else None
            if isinstance(vector, list):
                dense = [float(x) for x in vector if not isinstance(x, list)]
                out.append(StoredVector(str(r.id), dense, decode_payload(r.payload)))
        return out

    async def scroll_episode_uids(self, kind: VectorKind, tenant: str | None) -> set[str]:
        """Episode uids that have points of `kind` (one tenant, or all with None: maintenance)."""
        records = await self._scroll(kind, tenant, ["episode_uid"])
        return {str(r.payload["episode_uid"]) for r in records if r.payload}

    async def scroll_points(self, kind: VectorKind, tenant: str) -> list[VectorHit]:
        """Every point of the tenant in `kind` (archived too), by id, with score 0."""
        records = await self._scroll(kind, tenant, self._all_payload)
        hits = [VectorHit(str(r.id), 0.0, decode_payload(r.payload)) for r in records]
        return sorted(hits, key=lambda h: h.id)

    async def _scroll(
        self,
        kind: VectorKind,
        tenant: str | None,
        payload: bool | list[str] | models.PayloadSelectorExclude,
    ) -> list[models.Record]:
        name = collection_name(kind, self.fingerprint)
        if not await self._exists([name]):
            return []
        flt = tenant_filter(tenant) if tenant is not None else None
        routing = self._routing(name, tenant)
        records: list[models.Record] = []
        offset: models.ExtendedPointId | None = None
        while True:
            page, offset = await self._call(
                lambda c, offset=offset: c.scroll(  # type: ignore[misc]
                    name,
                    scroll_filter=flt,
                    limit=SCROLL_PAGE,
                    offset=offset,
                    with_payload=payload,
                    shard_key_selector=routing,
                )
            )
            records += page
            if offset is None:
                return records

    async def count(self, kind: VectorKind, tenant: str) -> int:
        """Number of the tenant's points of `kind`, archived ones included."""
        name = collection_name(kind, self.fingerprint)
        if not await self._exists([name]):
            return 0
        routing = self._routing(name, tenant)
        result = await self._call(
            lambda c: c.count(
                name, count_filter=tenant_filter(tenant), exact=True, shard_key_selector=routing
            )
        )
        return result.count

    async def close(self) -> None:
        """Close the client (and release a local directory's lock); safe to call twice."""
        if not self._closed:
            self._closed = True
            await self._endpoints.close()

    async def describe(self) -> IndexStatus:
        """Backend, collections with point counts, and durability state (for `mneme doctor`)."""
        statuses = []
        for name in await self.collections():
            info = await self._call(lambda c, name=name: c.get_collection(name))  # type: ignore[misc]
            statuses.append(
                CollectionStatus(
                    name, info.points_count or 0, info.indexed_vectors_count, info.segments_count
                )
            )
        if self.server:
            durability = "the Qdrant server keeps its own WAL; acknowledged writes are durable"
        elif self.location == ":memory:":
            durability = "in memory: nothing survives the process"
        else:
            durability = "local mode commits every point to SQLite before the upsert returns"
        health = (
            await cluster_health(self._endpoints, [s.name for s in statuses if self._mine(s.name)])
            if self.server
            else None
        )
        return IndexStatus(
            backend=self.backend,
            location=self.location,
            fingerprint=self.fingerprint,
            dim=self.dim,
            collections=statuses,
            durability=durability,
            unflushed_writes=None if self.server else 0,
            cluster=health.detail if health else None,
            cluster_ok=health.ok if health else True,
        )


def _sparse_params(
    prefetch: list[models.Prefetch] | None, params: models.SearchParams
) -> list[models.Prefetch] | None:
    """The prefetch tree with `params` (the tenant's IDF corpus) on every sparse leg."""
    if prefetch is None:
        return None
    return [
        p.model_copy(
            update={
                "prefetch": _sparse_params(p.prefetch, params)
                if isinstance(p.prefetch, list)
                else p.prefetch,
                "params": params if p.using == SPARSE_VECTOR else p.params,
            }
        )
        for p in prefetch
    ]
