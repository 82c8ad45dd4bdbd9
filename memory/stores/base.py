"""Narrow, typed, async interfaces of the stores; one package per backend implements them.

`GraphStore` is the graph side. It holds one operations object per record kind
(`memory.stores.graph`: `episodes`, `topics`, `entities`, `beliefs`, `facts`, `features`,
`snapshots`, `summaries`, `state` (tenant state), `concepts`, `diary`, `coretrieval`, `leases`,
`goals` and `emotions`), so a caller writes `graph.episodes.get(tenant, uid)` and sees one kind
at a time; the store itself has only the store-wide calls (setup, schema version, ping, erase a
tenant, close). The vector value types below are shared by the vector index and its callers.

Contracts every backend honours (the contract suite in `tests/contract/` checks them):

- Every call takes the tenant; no call ever reads or changes another tenant's data.
- Text is stored verbatim (after `schema.clean_text`, applied once by the interfaces); identifiers
  and text are always bound as query parameters, never spliced into a query.
- Datetimes go in and come out timezone-aware UTC, with microsecond precision.
- Lists come back in the order the docstring states, so both backends return identical results.
- Setup is explicit (`setup()`), idempotent and safe to run from two processes at once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.schema import VectorKind
from memory.stores.errors import (
    NotFound,
    SchemaMismatch,
    StoreError,
    StoreLocked,
    StoreUnavailable,
)
from memory.stores.graph.beliefs import BeliefStore
from memory.stores.graph.concepts import ConceptStore, DiaryStore
from memory.stores.graph.coretrieval import CoRetrievalStore
from memory.stores.graph.entities import EntityStore
from memory.stores.graph.episodes import CreateResult, EpisodeStore
from memory.stores.graph.facts import FactStore
from memory.stores.graph.features import FeatureStore
from memory.stores.graph.goals import EmotionStore, GoalStore
from memory.stores.graph.leases import Lease, LeaseStore
from memory.stores.graph.snapshots import SnapshotStore
from memory.stores.graph.summaries import SummaryStore
from memory.stores.graph.tenant_state import TenantStateStore
from memory.stores.graph.topics import TopicStore
from memory.tenant import tenant_id

__all__ = [
    "CreateResult",
    "GraphStore",
    "Lease",
    "NotFound",
    "SchemaMismatch",
    "SearchRequest",
    "SparseVector",
    "StoreError",
    "StoredVector",
    "StoreLocked",
    "StoreUnavailable",
    "VectorFilter",
    "VectorHit",
    "VectorPoint",
]


class GraphStore(ABC):
    """The graph side of memory: one operations object per record kind, over one connection,
    and the calls that concern the whole store."""

    backend: str
    """`sqlite` or `neo4j`."""

    episodes: EpisodeStore
    """Episodes in time order (the TEMPORAL_NEXT chain), their status and scores, and what each
    is connected to."""
    topics: TopicStore
    """Topics the episodes discuss."""
    entities: EntityStore
    """Named things the episodes mention, related to each other."""
    beliefs: BeliefStore
    """The agent's beliefs and the episodes that are their evidence."""
    facts: FactStore
    """Facts with their validity, sources, subjects and causes."""
    features: FeatureStore
    """The agent's semantic features."""
    snapshots: SnapshotStore
    """Versions of the personality narrative."""
    summaries: SummaryStore
    """Summaries of finished sessions."""
    state: TenantStateStore
    """Small string values per tenant and key."""
    concepts: ConceptStore
    """Concepts of the daily sleep level and what they include."""
    diary: DiaryStore
    """Diary entries of the daily sleep level and the episodes they recount."""
    coretrieval: CoRetrievalStore
    """Links between episodes retrieved together."""
    leases: LeaseStore
    """Named per-tenant leases (one holder at a time, across processes)."""
    goals: GoalStore
    """Goals, each tracking a goal fact."""
    emotions: EmotionStore
    """Emotions felt in episodes."""

    @abstractmethod
    async def setup(self) -> None:
        """Create constraints, indexes and the schema-version record; idempotent and sequential."""

    @abstractmethod
    async def schema_version(self) -> int | None:
        """The schema version recorded in the store, or None before setup."""

    @abstractmethod
    async def ping(self) -> None:
        """Raise `StoreUnavailable` (with the fix in the message) unless the store answers."""

    async def erase_tenant(self, tenant: str) -> int:
        """Delete every node, edge and state row of the tenant; the number of records deleted
        (nodes or rows: edges are counted on SQLite, where they are rows, not on Neo4j).

        Idempotent (a second call deletes nothing and returns 0) and safe to re-run after a
        crash part way: SQLite does it in one transaction, Neo4j in batches that each commit.
        No other tenant's data is touched: an id that breaks the tenant rule (`memory.tenant`)
        raises `InvalidTenant` and deletes nothing.
        """
        return await self._erase_tenant(tenant_id(tenant))

    @abstractmethod
    async def _erase_tenant(self, tenant: str) -> int:
        """Delete everything of the (checked) tenant; the number of records deleted."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""


# --------------------------------------------------------------------------- vectors


@dataclass(frozen=True, slots=True)
class SparseVector:
    """A sparse lexical vector: token ids (sorted, unique) and their weights."""

    indices: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """One point to upsert: a deterministic id (uuid5), its vectors and payload.

    `payload` must hold at least `tenant`, `episode_uid` and `text`; the index adds nothing.
    """

    id: str
    dense: Sequence[float]
    sparse: SparseVector | None
    payload: dict[str, object]


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A search result. `score` is higher for better matches; its scale depends on the query
    (cosine similarity for dense-only, BM25 for sparse-only, scaled RRF score for fused)."""

    id: str
    score: float
    payload: dict[str, object]


@dataclass(frozen=True, slots=True)
class StoredVector:
    """A point's stored dense vector (unit length: the collections measure cosine) and the
    payload fields asked for (`VectorIndex.read_vectors`)."""

    id: str
    dense: list[float]
    payload: dict[str, object]


@dataclass(frozen=True, slots=True)
class VectorFilter:
    """Payload conditions on top of the mandatory tenant filter."""

    episode_uids: Sequence[str] | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    include_archived: bool = False


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search of `VectorIndex.search_many`: the arguments of `VectorIndex.search`, and the
    payload fields its hits carry."""

    kind: VectorKind
    dense: Sequence[float] | None = None
    sparse: SparseVector | None = None
    limit: int = 10
    filter: VectorFilter | None = None
    score_threshold: float | None = None
    fields: tuple[str, ...] | None = None
    """Payload fields each hit carries (None: all of them). Reading and converting payloads is
    most of the cost of a hit, so a caller that reads three fields asks for those three."""
