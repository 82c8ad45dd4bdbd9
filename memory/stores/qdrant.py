"""The vector index over Qdrant: one collection per kind and embedder, tenant-filtered search.

Runs against a Qdrant server (`QDRANT_URL`) or qdrant-client's embedded local mode (a directory,
or `:memory:` in tests). Collections are named `<kind>__<embedder fingerprint>`, so a model swap
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

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

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
    SearchRequest,
    SparseVector,
    StoreUnavailable,
    VectorFilter,
    VectorHit,
    VectorPoint,
)
from memory.stores.qdrant_local import large_local_warning, open_local
from memory.stores.qdrant_query import (
    clamp_weights,
    decode_payload,
    plan_search,
    point_struct,
    tenant_filter,
)
from memory.stores.vectors import CollectionStatus, IndexStatus, VectorIndex

log = logging.getLogger(__name__)

SCROLL_PAGE = 1024
UPSERT_BATCH = 256
"""Points per upsert request (a server rejects requests over 32 MB; payloads can be large)."""
REQUEST_TIMEOUT_S = 30
"""Server-mode request timeout once connected (the connect check uses `timeout_s`)."""
TIE_MARGIN = 8
"""Extra results fetched so that ties at the limit are cut by id, as on every backend."""


class QdrantIndex(VectorIndex):
    """Dense + sparse vectors per kind of memory, for one embedder fingerprint and dimension."""

    backend = "qdrant"

    def __init__(
        self, client: AsyncQdrantClient, *, location: str, fingerprint: str, dim: int
    ) -> None:
        """Wrap an open client; prefer `QdrantIndex.open`, which checks it answers."""
        self._client = client
        self.location = location
        self.fingerprint = fingerprint
        self.dim = dim
        self.server = location.startswith(("http://", "https://"))
        self._ready = False
        self._closed = False
        self._existing: set[str] = set()
        self.generation = 0
        """Bumped after every write through this index (any kind): a cache key for readers that
        keep copies of the points (in local mode this process is the only writer)."""

    @property
    def client(self) -> AsyncQdrantClient:
        """The underlying client, for read-only maintenance; writes must go through the index."""
        return self._client

    @classmethod
    async def open(
        cls,
        location: str,
        *,
        api_key: str | None = None,
        fingerprint: str,
        dim: int,
        timeout_s: float = 2.0,
    ) -> QdrantIndex:
        """Open `:memory:`, a local directory or a server URL; raise `StoreUnavailable` with a fix.

        Nothing is created: call `setup()` next.
        """
        if dim <= 0:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        if location.startswith(("http://", "https://")):
            client = AsyncQdrantClient(
                url=location,
                api_key=api_key,
                timeout=max(REQUEST_TIMEOUT_S, math.ceil(timeout_s)),
                check_compatibility=False,  # it warns on failure; we check with a real call
            )
            try:
                names = await asyncio.wait_for(_collection_names(client), timeout_s)
            except UnexpectedResponse as exc:
                await client.close()
                if exc.status_code in (401, 403):
                    raise StoreUnavailable(
                        f"QDRANT_URL={location} refused the API key (HTTP {exc.status_code}); "
                        f"set QDRANT_API_KEY to the server's key"
                    ) from None
                raise StoreUnavailable(
                    f"QDRANT_URL={location} answered HTTP {exc.status_code}; is it a Qdrant "
                    f"server? Check the URL (e.g. http://localhost:6333)"
                ) from None
            except Exception as exc:
                await client.close()
                raise StoreUnavailable(
                    f"QDRANT_URL={location} does not answer within {timeout_s:g}s "
                    f"({type(exc).__name__}: {exc or 'timeout'}); start the Qdrant server "
                    f"(e.g. `docker compose up -d qdrant`), check QDRANT_API_KEY, or unset "
                    f"QDRANT_URL to use the embedded local mode"
                ) from None
        else:
            client = open_local(location)
            names = await _collection_names(client)
        index = cls(client, location=location, fingerprint=fingerprint, dim=dim)
        index._existing = names
        return index

    # ------------------------------------------------------------------ schema

    async def setup(self, *, rebuild: bool = False) -> None:
        """Create this embedder's collections and payload indexes; idempotent.

        Raises `SchemaMismatch` when the store holds collections of another embedder and none of
        this one's (a model swap not yet re-indexed) unless `rebuild` (`mneme reindex` builds them
        beside the other embedder's, which are kept), or when a same-named collection has another
        dimension or vector layout.
        """
        self._existing = await _collection_names(self._client)
        foreign = sorted(n for n in self._existing if _is_ours(n) and not self._mine(n))
        mine = [n for n in self._existing if _is_ours(n) and self._mine(n)]
        if foreign and not mine and not rebuild:
            others = sorted({n.split("__", 1)[1] for n in foreign})
            raise SchemaMismatch(
                f"the vector index at {self._where()} holds collections of embedder(s) "
                f"{', '.join(others)} ({', '.join(foreign)}) but the configured embedder is "
                f"{self.fingerprint}; run `mneme reindex` to build its collections from the graph (the "
                f"other embedder's stay as they are), or set MNEME_EMBEDDING_MODEL (and "
                f"MNEME_EMBEDDING_DIM) back to the old model. Vectors of two models are never "
                f"mixed."
            )
        for kind in VECTOR_KINDS:
            name = collection_name(kind, self.fingerprint)
            if name in self._existing:
                await self._check_layout(name)
            else:
                await self._create(name)
            if self.server:
                await self._payload_indexes(name)
        self._ready = True

    async def missing_collections(self) -> list[str]:
        """Collections of this embedder that do not exist yet (for `mneme doctor`)."""
        self._existing = await _collection_names(self._client)
        wanted = [collection_name(kind, self.fingerprint) for kind in VECTOR_KINDS]
        return [name for name in wanted if name not in self._existing]

    async def collections(self) -> list[str]:
        """Every mneme collection in the store (any embedder), sorted."""
        self._existing = await _collection_names(self._client)
        return sorted(n for n in self._existing if _is_ours(n))

    async def drop_collections(self, fingerprint: str | None) -> list[str]:
        """Drop the collections of one embedder fingerprint, or of every embedder with None.

        For `mneme reindex`: the graph is the source of truth, vectors are rebuilt from it.
        Returns the dropped names.
        """
        dropped = [
            name
            for name in await self.collections()
            if fingerprint is None or name.split("__", 1)[1] == fingerprint
        ]
        for name in dropped:
            await self._client.delete_collection(name)
        self.generation += 1
        self._existing -= set(dropped)
        self._ready = False
        return dropped

    async def _create(self, name: str) -> None:
        try:
            await self._client.create_collection(
                name,
                vectors_config={
                    DENSE_VECTOR: models.VectorParams(
                        size=self.dim, distance=models.Distance.COSINE
                    )
                },
                sparse_vectors_config={
                    SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)
                },
            )
        except (UnexpectedResponse, ValueError) as exc:
            # Another process created it between our listing and now: harmless, check it.
            if "already exists" not in str(exc):
                raise
            await self._check_layout(name)
        self._existing.add(name)

    async def _check_layout(self, name: str) -> None:
        params = (await self._client.get_collection(name)).config.params
        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        dense = vectors.get(DENSE_VECTOR)
        sparse = (params.sparse_vectors or {}).get(SPARSE_VECTOR)
        if (
            dense is None
            or sparse is None
            or dense.distance != models.Distance.COSINE
            or sparse.modifier != models.Modifier.IDF
        ):
            raise SchemaMismatch(
                f"collection {name} at {self._where()} lacks the cosine {DENSE_VECTOR!r} or the "
                f"IDF {SPARSE_VECTOR!r} vector; it was not made by this version of mneme: run "
                f"`mneme reindex`"
            )
        if dense.size != self.dim:
            raise SchemaMismatch(
                f"collection {name} at {self._where()} holds {dense.size}-dimensional vectors but "
                f"the embedder {self.fingerprint} produces {self.dim}; run `mneme reindex`, or set "
                f"MNEME_EMBEDDING_MODEL / MNEME_EMBEDDING_DIM back to the model that built it"
            )

    async def _payload_indexes(self, name: str) -> None:
        for field, kind in PAYLOAD_INDEXES.items():
            schema: models.PayloadSchemaType | models.KeywordIndexParams = (
                models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
                if field == "tenant"
                else models.PayloadSchemaType(kind)
            )
            await self._client.create_payload_index(name, field, field_schema=schema, wait=True)

    # ------------------------------------------------------------------ writes

    async def upsert(self, kind: VectorKind, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id; every point is validated before anything is written.

        Raises `SchemaMismatch` for a dense vector of the wrong dimension and `ValueError` for a
        missing `tenant`/`episode_uid`/`text` payload field or a malformed vector.
        """
        structs = [point_struct(p, dim=self.dim, fingerprint=self.fingerprint) for p in points]
        if not structs:
            return
        if not self._ready:
            await self.setup()
        name = collection_name(kind, self.fingerprint)
        try:
            for start in range(0, len(structs), UPSERT_BATCH):
                batch = structs[start : start + UPSERT_BATCH]
                if self.server:
                    await self._client.upsert(name, points=batch, wait=True)
                    continue
                # Local mode runs synchronously inside the coroutine: catching warnings is safe.
                with large_local_warning(self.location):
                    await self._client.upsert(name, points=batch, wait=True)
        finally:  # even a partial write invalidates cached copies
            self.generation += 1

    async def delete_by_episode(
        self, tenant: str, episode_uid: str, kinds: Iterable[VectorKind] | None = None
    ) -> None:
        """Delete every point of the episode in the given kinds (all kinds by default)."""
        flt = tenant_filter(tenant, episode_uid=episode_uid)
        for kind in kinds or VECTOR_KINDS:
            await self._delete(kind, flt)

    async def delete_stale(
        self, kind: VectorKind, tenant: str, episode_uid: str, keep_ids: Sequence[str]
    ) -> None:
        """Delete the episode's points of `kind` whose ids are not in `keep_ids`."""
        await self._delete(
            kind, tenant_filter(tenant, episode_uid=episode_uid, exclude_ids=keep_ids)
        )

    async def delete_points(self, kind: VectorKind, tenant: str, ids: Sequence[str]) -> None:
        """Delete points by id, only those of the tenant."""
        if not ids:
            return
        await self._delete(kind, tenant_filter(tenant, ids=ids))

    async def _delete(self, kind: VectorKind, flt: models.Filter) -> None:
        name = collection_name(kind, self.fingerprint)
        if name not in self._existing:
            return
        try:
            await self._client.delete(
                name, points_selector=models.FilterSelector(filter=flt), wait=True
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
        signal_weights: dict[str, float] | None = None,
    ) -> list[VectorHit]:
        """The tenant's best points for a dense and/or sparse query, highest score first.

        Score contract (higher is better; the scale depends on the query):
        - dense only: cosine similarity in [-1, 1];
        - sparse only: BM25 (Σ idf · tf-weight over shared terms, ≥ 0);
        - both: reciprocal-rank fusion with k = 60 over the two lists (each over-fetched to
          2 × limit), scaled by k/2 so that first place in both lists scores 1.0;
        - with `signal_weights` ({signal name: weight}, names from `schema.SIGNAL_NAMES`, each
          clamped to [0, 0.3]): the above + Σ wᵢ · payload[`signal_<name>`] (missing → 0),
          computed by Qdrant's FormulaQuery over the 2 × limit candidates.
        `score_threshold` is a floor on dense cosine similarity when `dense` is given (before
        fusion/rescoring; sparse-side candidates are not held to it), else on the BM25 score.
        Archived points are excluded unless `filter.include_archived`.
        """
        request = SearchRequest(
            kind,
            dense=dense,
            sparse=sparse,
            limit=limit,
            filter=filter,
            score_threshold=score_threshold,
            signal_weights=signal_weights,
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
        idf = models.SearchParams(idf=models.IdfCorpusParams(corpus=tenant_filter(tenant)))
        by_collection: dict[str, list[tuple[int, models.QueryRequest, float]]] = {}
        for i, r in enumerate(requests):
            name = collection_name(r.kind, self.fingerprint)
            if (
                r.filter is not None
                and r.filter.episode_uids is not None
                and not r.filter.episode_uids
            ):
                continue
            if name not in self._existing or (
                r.dense is None and (r.sparse is None or not r.sparse.indices)
            ):
                continue
            flt = tenant_filter(tenant, r.filter or VectorFilter())
            plan = plan_search(
                dense=r.dense,
                sparse=r.sparse,
                limit=r.limit,
                flt=flt,
                score_threshold=r.score_threshold,
                weights=clamp_weights(r.signal_weights),
                filter_prefetches=self.server,
            )
            query = models.QueryRequest(
                query=plan.query,
                using=plan.using,
                prefetch=_sparse_params(plan.prefetch, idf),
                filter=flt,
                params=idf if plan.using == SPARSE_VECTOR else None,
                score_threshold=plan.score_threshold,
                limit=r.limit + TIE_MARGIN,
                with_payload=list(r.fields) if r.fields is not None else True,
            )
            by_collection.setdefault(name, []).append((i, query, plan.scale))
        out: list[list[VectorHit]] = [[] for _ in requests]
        for name, planned in by_collection.items():
            responses = await self._client.query_batch_points(
                name, requests=[query for _, query, _ in planned]
            )
            for (i, _, scale), response in zip(planned, responses, strict=True):
                hits = [
                    VectorHit(str(p.id), float(p.score) * scale, decode_payload(p.payload))
                    for p in response.points
                ]
                hits.sort(key=lambda h: (-h.score, h.id))
                out[i] = hits[: requests[i].limit]
        return out

    async def scroll_episode_uids(self, kind: VectorKind, tenant: str | None) -> set[str]:
        """Episode uids that have points of `kind` (one tenant, or all with None: maintenance)."""
        records = await self._scroll(kind, tenant, ["episode_uid"])
        return {str(r.payload["episode_uid"]) for r in records if r.payload}

    async def scroll_points(self, kind: VectorKind, tenant: str) -> list[VectorHit]:
        """Every point of the tenant in `kind` (archived too), by id, with score 0."""
        records = await self._scroll(kind, tenant, True)
        hits = [VectorHit(str(r.id), 0.0, decode_payload(r.payload)) for r in records]
        return sorted(hits, key=lambda h: h.id)

    async def _scroll(
        self, kind: VectorKind, tenant: str | None, payload: bool | list[str]
    ) -> list[models.Record]:
        name = collection_name(kind, self.fingerprint)
        if name not in self._existing:
            return []
        flt = tenant_filter(tenant) if tenant is not None else None
        records: list[models.Record] = []
        offset: models.ExtendedPointId | None = None
        while True:
            page, offset = await self._client.scroll(
                name, scroll_filter=flt, limit=SCROLL_PAGE, offset=offset, with_payload=payload
            )
            records += page
            if offset is None:
                return records

    async def count(self, kind: VectorKind, tenant: str) -> int:
        """Number of the tenant's points of `kind`, archived ones included."""
        name = collection_name(kind, self.fingerprint)
        if name not in self._existing:
            return 0
        result = await self._client.count(name, count_filter=tenant_filter(tenant), exact=True)
        return result.count

    async def close(self) -> None:
        """Close the client (and release a local directory's lock); safe to call twice."""
        if not self._closed:
            self._closed = True
            await self._client.close()

    async def describe(self) -> IndexStatus:
        """Backend, collections with point counts, and durability state (for `mneme doctor`)."""
        statuses = []
        for name in await self.collections():
            info = await self._client.get_collection(name)
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
        return IndexStatus(
            backend=self.backend,
            location=self.location,
            fingerprint=self.fingerprint,
            dim=self.dim,
            collections=statuses,
            durability=durability,
            unflushed_writes=None if self.server else 0,
        )

    # ------------------------------------------------------------------ helpers

    def _mine(self, name: str) -> bool:
        return name.split("__", 1)[1] == self.fingerprint

    def _where(self) -> str:
        return f"QDRANT_URL={self.location}" if self.server else repr(self.location)


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


def _is_ours(name: str) -> bool:
    kind, sep, rest = name.partition("__")
    return bool(sep and rest) and kind in VECTOR_KINDS


async def _collection_names(client: AsyncQdrantClient) -> set[str]:
    return {c.name for c in (await client.get_collections()).collections}
