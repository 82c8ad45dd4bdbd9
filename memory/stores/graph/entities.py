"""Entities (MENTIONS and RELATED_TO edges) and the k-hop traversal: contract and input rules.

An entity is keyed by its normalised name (`inputs.name_key`); every method that takes names
turns them into keys here, so the backends match keys only. Public methods are the contract;
one that needs its input prepared hands it to the abstract `_hook` of the same name.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from memory.schema import Entity, EntityType, EpisodeHit, clean_text, entity_key
from memory.stores.graph.inputs import count, name_key, name_keys
from memory.stores.graph.kind import KindStore


class EntityStore(KindStore):
    """Named things mentioned in episodes, related to each other."""

    async def upsert(self, tenant: str, name: str, type: EntityType) -> Entity:
        """Create or update an entity keyed by its normalised name; the latest type wins."""
        name = clean_text(name)
        key = entity_key(name)
        if not key:
            raise ValueError("an entity needs a non-empty name")
        return await self._upsert(tenant, key, name, EntityType(type))

    @abstractmethod
    async def _upsert(self, tenant: str, key: str, name: str, type: EntityType) -> Entity:
        """Insert (tenant, key) with `name` and `type`, or set the type of the existing one."""

    async def link_mentions(self, tenant: str, episode_uid: str, names: Sequence[str]) -> None:
        """MENTIONS edges from the episode to existing entities named `names`; idempotent."""
        keys = name_keys(names)
        if keys:
            await self._link_mentions(tenant, episode_uid, keys)

    @abstractmethod
    async def _link_mentions(self, tenant: str, episode_uid: str, keys: list[str]) -> None:
        """MENTIONS edges to the existing entities among the distinct `keys`, if the episode is."""

    async def relate(
        self, tenant: str, a: str, b: str, relation: str = "related", *, replace: bool = True
    ) -> None:
        """A RELATED_TO edge from entity `a` to entity `b` (both must exist); idempotent.

        An existing edge takes `relation` when `replace`, else keeps its own (a weak relation,
        such as a co-mention, never overwrites one the text stated).
        """
        ka, kb = name_key(a), name_key(b)
        if ka and kb and ka != kb:
            await self._relate(tenant, ka, kb, clean_text(relation), replace)

    @abstractmethod
    async def _relate(self, tenant: str, a: str, b: str, relation: str, replace: bool) -> None:
        """MERGE a RELATED_TO edge from key `a` to key `b` if both exist; its relation set on
        creation, and on an existing edge only when `replace`."""

    async def named(self, tenant: str, names: Sequence[str]) -> list[Entity]:
        """The entities among `names` (normalised; unknown ones skipped), by key; an index
        lookup, so the associative path never scans a tenant's entities."""
        keys = name_keys(names)
        return await self._named(tenant, keys) if keys else []

    @abstractmethod
    async def _named(self, tenant: str, keys: list[str]) -> list[Entity]:
        """The entities whose key is among the distinct, non-empty `keys`, by key."""

    async def episodes_near(
        self, tenant: str, names: Sequence[str], hops: int, limit: int = 50
    ) -> list[EpisodeHit]:
        """Episodes mentioning an entity within `hops` of the seeds, nearest first.

        Sorted by (distance, created_at desc, uid); each episode once, at its least distance.
        """
        hops, limit = count("hops", hops), count("limit", limit)
        keys = name_keys(names)
        return await self._episodes_near(tenant, keys, hops, limit) if keys else []

    @abstractmethod
    async def _episodes_near(
        self, tenant: str, keys: list[str], hops: int, limit: int
    ) -> list[EpisodeHit]:
        """Up to `limit` episodes near the non-empty seed `keys`, in the public order."""

    @abstractmethod
    async def of_episode(self, tenant: str, episode_uid: str) -> list[Entity]:
        """Entities the episode mentions, by key."""
