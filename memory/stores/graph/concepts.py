"""Concepts and diary entries, the daily sleep level's records: the contracts of two kinds.

A concept INCLUDES the episodes and facts it groups; a diary entry RECOUNTS the episodes of its
day. Both are written whole by their put (node and its edges replaced in one transaction), so a
run killed between two puts leaves every record either old or new, never half. An edge only
ever joins records of the same tenant; deleting an episode or a fact drops its edges
(ON DELETE CASCADE on SQLite, DETACH DELETE on Neo4j).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from memory.schema import Concept, DiaryEntry
from memory.stores.graph.inputs import clean_record, distinct
from memory.stores.graph.kind import KindStore


@dataclass(frozen=True, slots=True)
class Members:
    """What a concept includes: episode uids and fact uids, each sorted."""

    episodes: list[str]
    facts: list[str]


@dataclass(frozen=True, slots=True)
class Groups:
    """What an episode belongs to: concept uids and diary entry uids, each sorted."""

    concepts: list[str]
    diary: list[str]


class ConceptStore(KindStore):
    """Concept nodes with their INCLUDES edges to episodes and facts."""

    async def put(
        self, concept: Concept, episode_uids: Sequence[str], fact_uids: Sequence[str]
    ) -> Concept:
        """Insert or replace the concept and replace its INCLUDES edges with edges to the
        tenant's existing episodes and facts among the uids (others are skipped), atomically.

        Raises `StoreError` (`errors.uid_taken`) when the uid is another tenant's concept.
        """
        return await self._put(clean_record(concept), distinct(episode_uids), distinct(fact_uids))

    @abstractmethod
    async def _put(
        self, concept: Concept, episode_uids: list[str], fact_uids: list[str]
    ) -> Concept:
        """Write the cleaned concept and its edges (same tenant only) in one transaction."""

    @abstractmethod
    async def get(self, tenant: str, uid: str) -> Concept | None:
        """The concept with this uid, or None."""

    @abstractmethod
    async def members(self, tenant: str, uid: str) -> Members:
        """The episodes and facts the concept includes (empty for an unknown concept)."""

    @abstractmethod
    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the concept and its edges (never its members); False if it did not exist."""

    @abstractmethod
    async def list(self, tenant: str) -> list[Concept]:
        """The tenant's concepts, by (first_seen, uid)."""


class DiaryStore(KindStore):
    """Diary entry nodes with their RECOUNTS edges to the episodes of their day."""

    async def put(self, entry: DiaryEntry, episode_uids: Sequence[str]) -> DiaryEntry:
        """Insert or replace the entry and replace its RECOUNTS edges with edges to the
        tenant's existing episodes among the uids, atomically.

        Raises `StoreError` (`errors.uid_taken`) when the uid is another tenant's entry.
        """
        return await self._put(clean_record(entry), distinct(episode_uids))

    @abstractmethod
    async def _put(self, entry: DiaryEntry, episode_uids: list[str]) -> DiaryEntry:
        """Write the cleaned entry and its edges (same tenant only) in one transaction."""

    @abstractmethod
    async def sources(self, tenant: str, uid: str) -> list[str]:
        """Uids of the episodes the entry recounts, sorted."""

    @abstractmethod
    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the entry and its edges; False if it did not exist."""

    @abstractmethod
    async def list(
        self, tenant: str, *, first: str | None = None, last: str | None = None
    ) -> list[DiaryEntry]:
        """The tenant's diary entries, by (day, uid); with `first` / `last` (ISO days, both
        included) only the days from / up to them."""
