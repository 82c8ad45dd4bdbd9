"""Session summaries with SUMMARISES edges to their episodes: the contract, and its input rules.

A summary is replaced whole on upsert (its session was rebuilt: more turns, a forgotten one, a
better text); its edges are set to exactly the tenant's episodes among `episode_uids`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from memory.schema import SessionSummary, clean_text
from memory.stores.graph.inputs import clean_record, distinct
from memory.stores.graph.kind import KindStore


class SummaryStore(KindStore):
    """Summaries of finished sessions (`memory.write.sessions`), one level above the episodes."""

    async def upsert(self, summary: SessionSummary) -> SessionSummary:
        """Insert the summary or replace every field of the one with its uid, and set its
        SUMMARISES edges to exactly the tenant's episodes among `episode_uids` (unknown ones
        get no edge), in one transaction; idempotent. The stored summary.

        Raises `StoreError` (`errors.uid_taken`) when the uid is another tenant's summary.
        """
        return await self._upsert(clean_record(summary))

    @abstractmethod
    async def _upsert(self, summary: SessionSummary) -> SessionSummary:
        """Insert or replace the cleaned summary (same tenant only) and its edges."""

    async def get_many(self, tenant: str, uids: Sequence[str]) -> list[SessionSummary]:
        """The tenant's summaries among `uids`, in the order asked (each once; unknown skipped)."""
        wanted = distinct(uids)
        if not wanted:
            return []
        found = {s.uid: s for s in await self._get_many(tenant, wanted)}
        return [found[u] for u in wanted if u in found]

    @abstractmethod
    async def _get_many(self, tenant: str, uids: list[str]) -> list[SessionSummary]:
        """The tenant's summaries among the distinct, non-empty `uids`, in any order."""

    @abstractmethod
    async def of_episode(self, tenant: str, episode_uid: str) -> list[str]:
        """Uids of the summaries with a SUMMARISES edge to the episode, sorted."""

    @abstractmethod
    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the summary and its edges; False if it did not exist."""

    @abstractmethod
    async def _list(self, tenant: str, thread_id: str | None) -> list[SessionSummary]:
        """The tenant's summaries, optionally of one thread, in the public order."""

    async def list(self, tenant: str, thread_id: str | None = None) -> list[SessionSummary]:
        """The tenant's summaries (of one thread, when given), by (started_at, uid)."""
        return await self._list(tenant, None if thread_id is None else clean_text(thread_id))
