"""Goals and emotions: the contracts of two kinds.

A goal TRACKS one goal fact and goes with it: deleting the fact deletes its goal (ON DELETE
CASCADE on SQLite, in the same query on Neo4j). An emotion is FELT_IN one episode and goes with
it the same way. A goal's `evidence_uid` names an episode without an edge: whoever deletes
that episode first calls `reset_evidence` (`memory.knowledge.goals.release_episode`), so no goal
keeps a status resting on a turn that is gone. Every write is one transaction.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from datetime import datetime

from memory.schema import Emotion, Goal, GoalStatus
from memory.stores.graph.inputs import clean_record, distinct
from memory.stores.graph.kind import KindStore


class GoalStore(KindStore):
    """Goal nodes, each TRACKS its goal fact."""

    async def put(self, goal: Goal) -> Goal | None:
        """Insert or replace the goal, tracking its fact; None (nothing written) when the fact
        is not the tenant's.

        Raises `StoreError` (`errors.uid_taken`) when the uid is another tenant's goal.
        """
        return await self._put(clean_record(goal))

    @abstractmethod
    async def _put(self, goal: Goal) -> Goal | None:
        """Write the cleaned goal and its TRACKS edge (same tenant only)."""

    @abstractmethod
    async def get(self, tenant: str, uid: str) -> Goal | None:
        """The goal with this uid, or None."""

    @abstractmethod
    async def reset_evidence(self, tenant: str, episode_uid: str, reason: str, at: datetime) -> int:
        """Goals whose status rests on this episode become active again (that reason, no
        evidence, changed at `at`); how many did."""

    @abstractmethod
    async def _list(self, tenant: str, status: GoalStatus | None) -> list[Goal]:
        """The goals, filtered by a checked status."""

    async def list(self, tenant: str, status: GoalStatus | None = None) -> list[Goal]:
        """The tenant's goals (of this status, or all), by (stated_at, uid)."""
        return await self._list(tenant, None if status is None else GoalStatus(status))


class EmotionStore(KindStore):
    """Emotion nodes, each FELT_IN one episode."""

    async def put(
        self, tenant: str, episode_uid: str, emotions: Sequence[Emotion]
    ) -> list[Emotion]:
        """Replace the episode's emotions with these (each of this tenant and episode), in one
        transaction; nothing is written for an episode the tenant does not have. Returns
        what is stored, by name."""
        cleaned = [clean_record(e) for e in emotions]
        for e in cleaned:
            if e.tenant != tenant or e.episode_uid != episode_uid:
                raise ValueError(f"emotion {e.uid!r} is not of episode {episode_uid!r}")
        if len(distinct(e.uid for e in cleaned)) != len(cleaned):
            raise ValueError("two emotions with one uid")
        return await self._put(tenant, episode_uid, cleaned)

    @abstractmethod
    async def _put(self, tenant: str, episode_uid: str, emotions: list[Emotion]) -> list[Emotion]:
        """Replace the episode's emotions (checked) in one transaction."""

    @abstractmethod
    async def list(self, tenant: str, episode_uid: str | None = None) -> list[Emotion]:
        """The tenant's emotions (of one episode, or all), by (felt_at, episode_uid, name)."""
