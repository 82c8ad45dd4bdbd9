"""Beliefs and their provenance (evidence edges from episodes): the contract, and its input rules.

Public methods are the contract; one that needs its input cleaned or checked hands clean values
to the abstract `_hook` of the same name, which each backend implements.
"""

from __future__ import annotations

from abc import abstractmethod

from memory.schema import Belief, Evidence, EvidenceKind, clean_text, utcnow
from memory.stores.graph.inputs import clean_record, count
from memory.stores.graph.kind import KindStore


class BeliefStore(KindStore):
    """One belief per (tenant, topic), with evidence edges that count towards it."""

    async def upsert(self, belief: Belief) -> Belief:
        """Create the belief, or replace the fields of the one with the same tenant and topic.

        The stored uid is kept on replacement; the stored record is returned.
        """
        return await self._upsert(clean_record(belief))

    @abstractmethod
    async def _upsert(self, belief: Belief) -> Belief:
        """Insert the cleaned belief or replace every field but the uid of the one on its topic."""

    @abstractmethod
    async def get(self, tenant: str, uid: str) -> Belief | None:
        """The belief with this uid, or None."""

    async def get_by_topic(self, tenant: str, topic: str) -> Belief | None:
        """The belief on this topic, or None."""
        return await self._get_by_topic(tenant, clean_text(topic))

    @abstractmethod
    async def _get_by_topic(self, tenant: str, topic: str) -> Belief | None:
        """The belief on the cleaned `topic`, or None."""

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
        evidence = Evidence(  # validates kind and strength before anything is written
            episode_uid=episode_uid,
            belief_uid=belief_uid,
            kind=kind,
            strength=strength,
            reasoning=reasoning,
            created_at=utcnow(),
        )
        return await self._add_evidence(tenant, clean_record(evidence))

    @abstractmethod
    async def _add_evidence(self, tenant: str, evidence: Evidence) -> bool:
        """Atomically write the edge and count it, unless an end is missing or the pair has one."""

    async def evidence(self, tenant: str, belief_uid: str, limit: int = 20) -> list[Evidence]:
        """Provenance edges of a belief, strongest first (strength desc, episode uid)."""
        return await self._evidence(tenant, belief_uid, count("limit", limit))

    @abstractmethod
    async def _evidence(self, tenant: str, belief_uid: str, limit: int) -> list[Evidence]:
        """Up to `limit` evidence edges of the belief, by (strength desc, episode uid)."""

    @abstractmethod
    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete a belief and its provenance edges. True if it existed."""

    @abstractmethod
    async def list(self, tenant: str) -> list[Belief]:
        """All beliefs of the tenant, by topic."""
