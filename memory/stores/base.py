"""Narrow, typed, async interfaces of the stores; one file per backend implements them.

Contracts every backend honours (the contract suite in `tests/contract/` checks them):

- Every call takes the tenant; no call ever reads or changes another tenant's data.
- Text is stored verbatim (after `schema.clean_text`); identifiers and text are always bound as
  query parameters, never spliced into a query.
- Datetimes go in and come out timezone-aware UTC, with microsecond precision.
- Lists come back in the order the docstring states, so both backends return identical results.
- Setup is explicit (`setup()`), idempotent and safe to run from two processes at once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.schema import (
    ESS,
    Belief,
    Entity,
    EntityHit,
    EntityType,
    Episode,
    EpisodeHit,
    EpisodeStatus,
    Evidence,
    EvidenceKind,
    Fact,
    Neighbour,
    NewEpisode,
    PersonalitySnapshot,
)


class StoreError(RuntimeError):
    """A store failed in a way the user can act on; the message says what to do."""


class StoreUnavailable(StoreError):
    """The store does not answer (down, unreachable, or locked by another process)."""


class SchemaMismatch(StoreError):
    """The store holds data of another schema version or another embedder; re-index or migrate."""


class NotFound(StoreError):
    """A record named by uid does not exist for this tenant."""


@dataclass(frozen=True, slots=True)
class CreateResult:
    """Outcome of `create_episode`: the uid and whether an episode with that content existed."""

    uid: str
    duplicate: bool


class GraphStore(ABC):
    """The graph side of memory: episodes in time order, topics, entities, beliefs, facts."""

    backend: str
    """`sqlite` or `neo4j`."""

    # ---- lifecycle

    @abstractmethod
    async def setup(self) -> None:
        """Create constraints, indexes and the schema-version record; idempotent and sequential."""

    @abstractmethod
    async def schema_version(self) -> int | None:
        """The schema version recorded in the store, or None before setup."""

    @abstractmethod
    async def ping(self) -> None:
        """Raise `StoreUnavailable` (with the fix in the message) unless the store answers."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""

    # ---- episodes

    @abstractmethod
    async def create_episode(self, episode: NewEpisode) -> CreateResult:
        """Persist an episode in one transaction and link it into the tenant's TEMPORAL_NEXT chain.

        The chain is ordered by (created_at, uid): an episode older than the tail is inserted in
        its place. When the tenant already has an episode with the same content hash, nothing is
        written and the existing uid is returned with `duplicate=True`.
        """

    @abstractmethod
    async def get_episode(self, tenant: str, uid: str) -> Episode | None:
        """The episode with this uid, or None."""

    @abstractmethod
    async def get_episodes(self, tenant: str, uids: Sequence[str]) -> list[Episode]:
        """The episodes among `uids` that exist, in the order of `uids`."""

    @abstractmethod
    async def find_episodes_by_prefix(
        self, tenant: str, prefix: str, limit: int = 10
    ) -> list[Episode]:
        """Episodes whose uid starts with `prefix` (a literal, not a pattern), by uid."""

    @abstractmethod
    async def temporal_neighbours(self, tenant: str, uid: str, k: int) -> list[Neighbour]:
        """Up to k episodes before and k after `uid` on the chain, by offset (-k..-1, 1..k)."""

    @abstractmethod
    async def set_status(
        self,
        tenant: str,
        uid: str,
        status: EpisodeStatus,
        *,
        only_forward: bool = True,
    ) -> bool:
        """Set the status; with `only_forward` a move backwards is ignored. True if it changed."""

    @abstractmethod
    async def list_by_status(
        self, tenant: str | None, statuses: Sequence[EpisodeStatus], limit: int = 1000
    ) -> list[Episode]:
        """Episodes in any of `statuses`, oldest first (created_at, uid).

        `tenant=None` is the maintenance view across tenants (the sweep and `mneme doctor`);
        nothing on a user's read path passes None.
        """

    @abstractmethod
    async def list_episode_uids(self, tenant: str | None) -> list[str]:
        """Every episode uid (of one tenant, or all for maintenance), sorted."""

    @abstractmethod
    async def list_tenants(self) -> list[str]:
        """Tenants that have any episode, sorted (maintenance only)."""

    @abstractmethod
    async def record_access(self, tenant: str, uids: Sequence[str], at: datetime) -> None:
        """Increment access_count and set last_accessed for each existing uid."""

    @abstractmethod
    async def set_ess(self, tenant: str, uid: str, ess: ESS) -> None:
        """Store the Evidence Strength Score of an episode."""

    @abstractmethod
    async def update_scores(
        self,
        tenant: str,
        uid: str,
        *,
        salience: float | None = None,
        utility_score: float | None = None,
        archived: bool | None = None,
    ) -> None:
        """Update the given bookkeeping scores of an episode; None leaves a field as it is."""

    @abstractmethod
    async def delete_episode(self, tenant: str, uid: str) -> bool:
        """Delete an episode and its edges, re-linking the chain around it. True if it existed."""

    @abstractmethod
    async def count_episodes(self, tenant: str) -> int:
        """Number of episodes of the tenant."""

    # ---- topics

    @abstractmethod
    async def link_topics(self, tenant: str, episode_uid: str, slugs: Sequence[str]) -> None:
        """MERGE the topics and a DISCUSSES edge from the episode to each; idempotent."""

    @abstractmethod
    async def episode_topics(self, tenant: str, episode_uid: str) -> list[str]:
        """Topic slugs the episode discusses, sorted."""

    @abstractmethod
    async def episodes_for_topic(self, tenant: str, slug: str, limit: int = 50) -> list[str]:
        """Uids of episodes discussing the topic, newest first (created_at desc, uid)."""

    # ---- entities

    @abstractmethod
    async def upsert_entity(self, tenant: str, name: str, type: EntityType) -> Entity:
        """Create or update an entity keyed by its normalised name; the latest type wins."""

    @abstractmethod
    async def link_mentions(self, tenant: str, episode_uid: str, names: Sequence[str]) -> None:
        """MENTIONS edges from the episode to existing entities named `names`; idempotent."""

    @abstractmethod
    async def relate_entities(self, tenant: str, a: str, b: str, relation: str = "related") -> None:
        """A RELATED_TO edge from entity `a` to entity `b` (both must exist); idempotent."""

    @abstractmethod
    async def get_entity(self, tenant: str, name: str) -> Entity | None:
        """The entity with this (normalised) name, or None."""

    @abstractmethod
    async def list_entities(self, tenant: str) -> list[Entity]:
        """All entities of the tenant, by key."""

    @abstractmethod
    async def entity_neighbourhood(
        self, tenant: str, names: Sequence[str], hops: int
    ) -> list[EntityHit]:
        """Entities within `hops` RELATED_TO hops (either direction) of the seeds, seeds at 0.

        Sorted by (distance, key).
        """

    @abstractmethod
    async def episodes_near_entities(
        self, tenant: str, names: Sequence[str], hops: int, limit: int = 50
    ) -> list[EpisodeHit]:
        """Episodes mentioning an entity within `hops` of the seeds, nearest first.

        Sorted by (distance, created_at desc, uid); each episode once, at its least distance.
        """

    @abstractmethod
    async def episode_entities(self, tenant: str, episode_uid: str) -> list[Entity]:
        """Entities the episode mentions, by key."""

    # ---- beliefs

    @abstractmethod
    async def upsert_belief(self, belief: Belief) -> Belief:
        """Create the belief, or replace the fields of the one with the same tenant and topic.

        The stored uid is kept on replacement; the stored record is returned.
        """

    @abstractmethod
    async def get_belief(self, tenant: str, uid: str) -> Belief | None:
        """The belief with this uid, or None."""

    @abstractmethod
    async def get_belief_by_topic(self, tenant: str, topic: str) -> Belief | None:
        """The belief on this topic, or None."""

    @abstractmethod
    async def list_beliefs(self, tenant: str) -> list[Belief]:
        """All beliefs of the tenant, by topic."""

    @abstractmethod
    async def add_evidence(
        self,
        tenant: str,
        episode_uid: str,
        belief_uid: str,
        kind: EvidenceKind,
        strength: float,
        reasoning: str = "",
    ) -> bool:
        """Write a provenance edge and increment the belief's evidence_count.

        Idempotent per (episode, belief): a second call changes nothing and returns False.
        """

    @abstractmethod
    async def belief_evidence(
        self, tenant: str, belief_uid: str, limit: int = 20
    ) -> list[Evidence]:
        """Provenance edges of a belief, strongest first (strength desc, episode uid)."""

    @abstractmethod
    async def delete_belief(self, tenant: str, uid: str) -> bool:
        """Delete a belief and its provenance edges. True if it existed."""

    # ---- facts

    @abstractmethod
    async def add_fact(self, fact: Fact, episode_uid: str | None = None) -> Fact:
        """Store a fact and, given an episode, a STATES edge from it; idempotent on fact uid."""

    @abstractmethod
    async def cite_fact(self, tenant: str, fact_uid: str, episode_uid: str) -> None:
        """Add a STATES edge from another episode to an existing fact; idempotent."""

    @abstractmethod
    async def supersede_fact(self, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact:
        """Store `new` and close `old` (valid_to = at, superseded_by = new.uid); nothing deleted.

        Raises `NotFound` if `old_uid` is not a fact of this tenant.
        """

    @abstractmethod
    async def get_fact(self, tenant: str, uid: str) -> Fact | None:
        """The fact with this uid, or None."""

    @abstractmethod
    async def list_facts(self, tenant: str, *, include_superseded: bool = False) -> list[Fact]:
        """Facts of the tenant, by (valid_from, uid); current ones only unless asked."""

    @abstractmethod
    async def fact_sources(self, tenant: str, fact_uid: str) -> list[str]:
        """Uids of episodes that state the fact, sorted."""

    # ---- personality snapshots

    @abstractmethod
    async def add_snapshot(self, tenant: str, text: str, at: datetime) -> PersonalitySnapshot:
        """Store a new snapshot version (previous + 1, from 1), linked to the previous by PREVIOUS."""

    @abstractmethod
    async def current_snapshot(self, tenant: str) -> PersonalitySnapshot | None:
        """The highest version, or None."""

    @abstractmethod
    async def snapshot_history(self, tenant: str) -> list[PersonalitySnapshot]:
        """Every version, newest first."""

    # ---- small per-tenant state (counters, the sponge's bookkeeping)

    @abstractmethod
    async def get_tenant_state(self, tenant: str, key: str) -> str | None:
        """The value stored under `key` for the tenant, or None."""

    @abstractmethod
    async def put_tenant_state(self, tenant: str, key: str, value: str) -> None:
        """Store `value` under `key` for the tenant, replacing any previous value."""


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
    (cosine similarity for dense-only, RRF score for fused, formula value when rescored)."""

    id: str
    score: float
    payload: dict[str, object]


@dataclass(frozen=True, slots=True)
class VectorFilter:
    """Payload conditions on top of the mandatory tenant filter."""

    episode_uids: Sequence[str] | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    include_archived: bool = False
