"""Semantic features of the agent's personality, with SHOWS edges from the episodes that showed
them: the contract, and its input rules.

A feature is replaced whole on upsert (the caller reads, changes and writes it back, as for
beliefs); it is deleted only by `delete`, on an explicit counter-claim, never by decay.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from memory.schema import Feature, FeatureCategory
from memory.stores.graph.inputs import clean_record, distinct
from memory.stores.graph.kind import KindStore


class FeatureStore(KindStore):
    """The agent's persistent semantic features (values, interests, style, expertise)."""

    async def upsert(self, feature: Feature, episode_uid: str | None = None) -> Feature:
        """Insert the feature or replace every field of the one with its uid, and, given an
        episode of the tenant, a SHOWS edge from it; idempotent. The stored feature.

        Raises `StoreError` (`errors.uid_taken`) when the uid is another tenant's feature.
        """
        return await self._upsert(clean_record(feature), episode_uid)

    @abstractmethod
    async def _upsert(self, feature: Feature, episode_uid: str | None) -> Feature:
        """Insert or replace the cleaned feature (same tenant only) and add the SHOWS edge."""

    @abstractmethod
    async def get(self, tenant: str, uid: str) -> Feature | None:
        """The feature with this uid, or None."""

    async def get_many(self, tenant: str, uids: Sequence[str]) -> list[Feature]:
        """The tenant's features among `uids`, in the order asked (each once; unknown skipped)."""
        wanted = distinct(uids)
        if not wanted:
            return []
        found = {f.uid: f for f in await self._get_many(tenant, wanted)}
        return [found[u] for u in wanted if u in found]

    @abstractmethod
    async def _get_many(self, tenant: str, uids: list[str]) -> list[Feature]:
        """The tenant's features among the distinct, non-empty `uids`, in any order."""

    @abstractmethod
    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the feature and its SHOWS edges; False if it did not exist."""

    @abstractmethod
    async def sources(self, tenant: str, uid: str) -> list[str]:
        """Uids of the episodes that showed the feature, sorted."""

    @abstractmethod
    async def _list(self, tenant: str, category: FeatureCategory | None) -> list[Feature]:
        """The tenant's features, optionally of one category, in the public order."""

    async def list(self, tenant: str, category: FeatureCategory | None = None) -> list[Feature]:
        """The tenant's features (of one category, when given), by (category, created_at, uid)."""
        return await self._list(tenant, None if category is None else FeatureCategory(category))
