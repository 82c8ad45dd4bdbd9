"""What consolidation ("sleep") asks of the graph: connections, sole evidence, forgetting.

Cross-kind reads about episodes (how connected one is, whether knowledge rests on it alone)
and the one write forgetting needs beyond `delete_episode`: deleting a fact that only a
forgotten episode stated.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from memory.stores.graph.coretrieval import STRONG_LINK
from memory.stores.graph.inputs import distinct


class ConsolidationStore(ABC):
    """Reads and deletes of sleep's stages (`memory.sleep.rescore`, `.forgetting`, `.plan`)."""

    async def episode_connections(
        self, tenant: str, uids: Sequence[str], *, min_link_weight: float = STRONG_LINK
    ) -> dict[str, int]:
        """For each existing episode among `uids`: its number of edges to topics (DISCUSSES),
        entities (MENTIONS), facts (STATES) and beliefs (evidence), each counted once, plus
        its co-retrieval links (either end) of weight >= `min_link_weight`."""
        wanted = distinct(uids)
        if not wanted:
            return {}
        return await self._episode_connections(tenant, wanted, float(min_link_weight))

    @abstractmethod
    async def _episode_connections(
        self, tenant: str, uids: list[str], min_link_weight: float
    ) -> dict[str, int]:
        """Edge counts of the existing episodes among the distinct, non-empty `uids`."""

    async def sole_evidence(self, tenant: str, uids: Sequence[str]) -> set[str]:
        """The episodes among `uids` that are the only evidence episode of a belief with
        confidence above 0, or the only episode stating a current (not superseded) fact."""
        wanted = distinct(uids)
        return await self._sole_evidence(tenant, wanted) if wanted else set()

    @abstractmethod
    async def _sole_evidence(self, tenant: str, uids: list[str]) -> set[str]:
        """The sole-evidence episodes among the distinct, non-empty `uids`."""

    @abstractmethod
    async def facts_stated_by(self, tenant: str, episode_uid: str) -> list[str]:
        """Uids of the facts this episode states (STATES), sorted; with `sources_of_facts`,
        which of them it alone states."""

    @abstractmethod
    async def delete_fact(self, tenant: str, uid: str) -> bool:
        """Delete a fact and its edges (STATES, ABOUT, LED_TO either way). True if it existed."""
