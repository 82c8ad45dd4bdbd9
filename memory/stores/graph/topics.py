"""Topics an episode discusses (DISCUSSES edges): the contract, and its input rules.

Public methods are the contract; one that needs its input cleaned hands clean values to the
abstract `_hook` of the same name, which each backend implements.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from memory.schema import clean_text
from memory.stores.graph.inputs import distinct
from memory.stores.graph.kind import KindStore


class TopicStore(KindStore):
    """Topics by slug and the episodes that discuss them."""

    async def link(self, tenant: str, episode_uid: str, slugs: Sequence[str]) -> None:
        """MERGE the topics and a DISCUSSES edge from the episode to each; idempotent."""
        cleaned = distinct(clean_text(s) for s in slugs)
        if cleaned:
            await self._link(tenant, episode_uid, cleaned)

    @abstractmethod
    async def _link(self, tenant: str, episode_uid: str, slugs: list[str]) -> None:
        """MERGE the distinct, cleaned `slugs` and DISCUSSES edges, if the episode exists."""

    @abstractmethod
    async def of_episode(self, tenant: str, episode_uid: str) -> list[str]:
        """Topic slugs the episode discusses, sorted."""

    @abstractmethod
    async def count(self, tenant: str) -> int:
        """How many topics at least one of the tenant's episodes discusses."""
