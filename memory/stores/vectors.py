"""The vector index interface: what callers may ask of any vector backend, and what comes back.

Backends: `qdrant.QdrantIndex` (qdrant-client: a Qdrant server, or its local mode) and
`qdrant_edge.EdgeIndex` (the Qdrant engine in process, one shard per collection). The contract
suite `tests/contract/test_vectors.py` runs the same tests against each of them.

Contracts every backend honours:

- One collection per kind of memory and embedder, named `<kind>__<embedder fingerprint>`
  (`schema.collection_name`); collections of another embedder are a `SchemaMismatch`, never a
  silent second index beside the first.
- Every read and delete takes the tenant and touches nothing of another tenant (the `None`
  tenant of `scroll_episode_uids` is the maintenance view, never on a user's path).
- Point ids are UUIDs (callers derive them with `schema.stable_uid`), so upserts are idempotent;
  a batch is validated entirely before anything is written.
- Payload strings are stored after `schema.clean_text`; datetimes go in aware (naive = UTC) and
  `created_at` comes back as an aware UTC datetime.
- Search scores and order are the same on every backend, up to float noise (see `search`).

Value types (`SparseVector`, `VectorPoint`, `VectorHit`, `VectorFilter`) live in `base.py`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Self

from memory.schema import VectorKind
from memory.stores.base import (
    SearchRequest,
    SparseVector,
    StoredVector,
    VectorFilter,
    VectorHit,
    VectorPoint,
)
from memory.stores.errors import SchemaMismatch
from memory.tenant import tenant_id

__all__ = [
    "CollectionStatus",
    "IndexStatus",
    "SCORE_TOLERANCE",
    "VectorIndex",
]

SCORE_TOLERANCE = 1e-5
"""Scores of one query agree within this (absolute) across backends: engines compute in f32
(Edge, a server) or f64 (local mode), and fused scores are scaled by 30."""


@dataclass(frozen=True, slots=True)
class CollectionStatus:
    """One collection as `mneme doctor` shows it."""

    name: str
    points: int | None
    """Points stored (every tenant, archived included); None when not opened to count them (a
    shard of another embedder, left untouched)."""
    indexed_vectors: int | None = None
    """Vectors the engine counts as indexed (Edge: dense vectors in an HNSW graph plus sparse
    vectors in their inverted index); dense vectors outside a graph are searched exactly.
    None: not reported."""
    segments: int | None = None


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What a vector index reports about itself (`VectorIndex.describe`)."""

    backend: str
    location: str
    fingerprint: str
    dim: int
    collections: list[CollectionStatus] = field(default_factory=list)
    """Every mneme collection present (any embedder), by name."""
    durability: str = ""
    """How writes reach the disk, in a sentence (WAL, flush state)."""
    unflushed_writes: int | None = None
    """Writes acknowledged (in the WAL) since the last flush of the segments; None if unknown."""
    cluster: str | None = None
    """A Qdrant cluster's peers and replicas in a sentence (None: not a cluster)."""
    cluster_ok: bool = True
    """False when the cluster has no leader, a replica is not Active, a node does not answer
    or two replicas of a shard disagree."""


class VectorIndex(ABC):
    """Dense + sparse vectors per kind of memory, for one embedder fingerprint and dimension."""

    backend: str
    """`qdrant` (qdrant-client: server or local mode) or `qdrant-edge`."""
    fingerprint: str
    """The embedder fingerprint naming this index's collections."""
    dim: int
    """Dense vector dimension of the embedder."""
    generation: int
    """Bumped after every write through this index (any kind): a cache key for readers that keep
    copies of the points (valid when this process is the only writer)."""

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    @abstractmethod
    async def open(cls, location: str, *, fingerprint: str, dim: int) -> Self:
        """Open the store at `location`; raise `StoreUnavailable` with the fix. Creates nothing."""

    @abstractmethod
    async def setup(self, *, rebuild: bool = False) -> None:
        """Create this embedder's collections and payload indexes; idempotent.

        Raises `SchemaMismatch` when the store holds collections of another embedder and none of
        this one's (a model swap not yet re-indexed) unless `rebuild` (`mneme reindex` builds them
        beside the other embedder's, which are kept), or when a same-named collection has another
        dimension or vector layout.
        """

    @abstractmethod
    async def close(self) -> None:
        """Make every acknowledged write durable and release the store; safe to call twice."""

    @abstractmethod
    async def describe(self) -> IndexStatus:
        """Backend, collections with point counts, and durability state (for `mneme doctor`)."""

    async def optimize(self) -> bool:
        """Build search indexes now (maintenance: reindex, `mneme optimize`); True if anything
        changed. Backends that index as they write (a Qdrant server) have nothing to do."""
        return False

    # ------------------------------------------------------------------ schema

    @abstractmethod
    async def missing_collections(self) -> list[str]:
        """Collections of this embedder that do not exist yet (for `mneme doctor`)."""

    @abstractmethod
    async def collections(self) -> list[str]:
        """Every mneme collection in the store (any embedder), sorted."""

    @abstractmethod
    async def drop_collections(self, fingerprint: str | None) -> list[str]:
        """Drop the collections of one embedder fingerprint (every embedder with None).

        For `mneme reindex`: the graph is the source of truth. Returns the dropped names; the
        index needs `setup()` again before it is written.
        """

    # ------------------------------------------------------------------ writes

    @abstractmethod
    async def upsert(self, kind: VectorKind, points: Sequence[VectorPoint]) -> None:
        """Insert or replace points by id; every point is validated before anything is written.

        Raises `SchemaMismatch` for a dense vector of the wrong dimension and `ValueError` for a
        non-UUID id, a missing `tenant`/`episode_uid`/`text` payload field or a malformed vector.
        Sets the index up first when needed. Returns once the points are durable (WAL or disk).
        """

    @abstractmethod
    async def delete_by_episode(
        self, tenant: str, episode_uid: str, kinds: Iterable[VectorKind] | None = None
    ) -> None:
        """Delete every point of the tenant's episode in the given kinds (all kinds by default)."""

    @abstractmethod
    async def delete_stale(
        self, kind: VectorKind, tenant: str, episode_uid: str, keep_ids: Sequence[str]
    ) -> None:
        """Delete the tenant's episode's points of `kind` whose ids are not in `keep_ids`."""

    @abstractmethod
    async def delete_points(self, kind: VectorKind, tenant: str, ids: Sequence[str]) -> None:
        """Delete points by id, only those of the tenant."""

    # ------------------------------------------------------------------ reads

    def check_query(self, dense: Sequence[float] | None, limit: int) -> None:
        """Refuse a search no backend can answer: `limit` < 1 (`ValueError`), or a dense query
        of another embedder's dimension (`SchemaMismatch`)."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        if dense is not None and len(dense) != self.dim:
            raise SchemaMismatch(
                f"query vector has {len(dense)} dimensions but the index of embedder "
                f"{self.fingerprint} expects {self.dim}; embed the query with the same embedder"
            )

    @abstractmethod
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
        - sparse only: BM25, Σ idf(t) · weight(t) over the query's terms t found in the point,
          where idf(t) = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5)) over the *tenant's* points that
          have a sparse vector (N of them, n(t) containing t), archived ones included: another
          tenant's data never moves a tenant's scores;
        - both: reciprocal-rank fusion, Σ 1 / (60 + rank) over the dense and the sparse list
          (ranks from 0, each list over-fetched to 2 × limit), times 30, so that first place in
          both lists scores 1.0;
        Order: score descending, ties by point id ascending among the limit + 8 best the engine
        returns, so backends return the same list unless a tie group is larger than that.
        Scores agree across backends within `SCORE_TOLERANCE`; two candidates whose scores
        differ by less than that may come in either order. Not the same on every backend:
        inside a fused query each leg ranks exactly equal scores in the engine's own
        order (and cuts them at 2 × limit) before fusing, so where a leg holds ties (equal BM25
        scores: same-length texts matching the same terms, common for short texts) fused ranks
        and scores differ by backend; on real sentences 71% of hybrid top-10s were identical
        (docs/experiments/vector-engines.md); dense-only and sparse-only top-10s were identical there.
        `score_threshold` is a floor on dense cosine similarity when `dense` is given (applied
        before fusion; sparse-side candidates are not held to it), else on the BM25
        score; a score equal to the floor, to float noise, may be kept or dropped.
        Archived points are excluded unless `filter.include_archived`; `created_from` is
        inclusive and `created_to` exclusive. An empty `episode_uids` or an empty query returns
        []. Raises `SchemaMismatch` for a dense query of the wrong dimension, `ValueError` for
        `limit` < 1.
        """

    @abstractmethod
    async def search_many(
        self, tenant: str, requests: Sequence[SearchRequest]
    ) -> list[list[VectorHit]]:
        """Several searches of one tenant at once: for each request, what `search` returns for
        it (same hits, scores and order), in the order asked; `search` is one of it.

        A request's `fields` names the payload fields its hits carry (None: all). Backends run
        the searches as one call where the engine allows (Qdrant Edge: one batch per shard on
        one trip to the worker thread; qdrant-client: one `query_batch_points` per collection).
        Every request is checked before any search runs, with the errors `search` raises.
        """

    async def read_vectors(
        self, kind: VectorKind, tenant: str, ids: Sequence[str], fields: Sequence[str] = ()
    ) -> dict[str, StoredVector]:
        """The stored dense vectors of the tenant's points `ids` of `kind`, by id, each with the
        payload `fields` asked for (a field the point lacks is left out).

        What was embedded is read back instead of embedded again: the vector is the one the
        point was upserted with, normalised to unit length (cosine collections store it so).
        An id the tenant has no point under (none, another tenant's, an absent collection) is
        left out; archived points are read too. Empty `ids`: {} without asking the engine.
        Raises `InvalidTenant` for a tenant id that breaks the rule.
        """
        tenant = tenant_id(tenant)  # checked, never cleaned
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        found = await self._read_vectors(kind, tenant, wanted, ("tenant", *fields))
        out: dict[str, StoredVector] = {}
        for point in found:
            if point.payload.get("tenant") != tenant:
                continue  # another tenant's point: never returned, not even its id
            payload = {k: v for k, v in point.payload.items() if k in fields}
            out[point.id] = StoredVector(point.id, point.dense, payload)
        return out

    @abstractmethod
    async def _read_vectors(
        self, kind: VectorKind, tenant: str, ids: Sequence[str], fields: Sequence[str]
    ) -> list[StoredVector]:
        """The points `ids` of `kind` that exist where the (checked) tenant's points are, with
        their dense vector and the payload `fields` (`tenant` among them: an engine reads by id
        without a filter, so `read_vectors` keeps only the caller's)."""

    @abstractmethod
    async def scroll_episode_uids(self, kind: VectorKind, tenant: str | None) -> set[str]:
        """Episode uids that have points of `kind` (one tenant, or all with None: maintenance)."""

    @abstractmethod
    async def scroll_points(self, kind: VectorKind, tenant: str) -> list[VectorHit]:
        """Every point of the tenant in `kind` (archived too), by id, with score 0."""

    @abstractmethod
    async def count(self, kind: VectorKind, tenant: str) -> int:
        """Number of the tenant's points of `kind`, archived ones included."""
