"""Facts (knowledge propositions, STATES edges from episodes): the contract, and its input rules.

Newer facts supersede older ones without deleting them. Public methods are the contract; one that
needs its input cleaned or checked hands clean values to the abstract `_hook` of the same name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime

from memory.schema import Fact, as_utc
from memory.stores.errors import NotFound
from memory.stores.graph.inputs import clean_record


class FactStore(ABC):
    """Facts with their validity and the episodes that state them."""

    async def add_fact(self, fact: Fact, episode_uid: str | None = None) -> Fact:
        """Store a fact and, given an episode, a STATES edge from it; idempotent on fact uid."""
        return await self._add_fact(clean_record(fact), episode_uid)

    @abstractmethod
    async def _add_fact(self, fact: Fact, episode_uid: str | None) -> Fact:
        """Insert the cleaned fact unless its uid exists, cite it, and return the stored fact.

        Raises `StoreError` (`errors.uid_taken`) when the uid is another tenant's fact.
        """

    @abstractmethod
    async def cite_fact(self, tenant: str, fact_uid: str, episode_uid: str) -> None:
        """Add a STATES edge from another episode to an existing fact; idempotent."""

    async def supersede_fact(self, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact:
        """Store `new` and close `old` (valid_to = at, superseded_by = new.uid); nothing deleted.

        Raises `NotFound` if `old_uid` is not a fact of this tenant.
        """
        if new.tenant != tenant:
            raise ValueError("the superseding fact must belong to the same tenant")
        if new.uid == old_uid:
            raise ValueError("a fact cannot supersede itself; give the new fact a fresh uid")
        stored = await self._supersede_fact(tenant, old_uid, clean_record(new), as_utc(at))
        if stored is None:
            raise NotFound(f"no fact {old_uid!r} for this tenant; nothing to supersede")
        return stored

    @abstractmethod
    async def _supersede_fact(
        self, tenant: str, old_uid: str, new: Fact, at: datetime
    ) -> Fact | None:
        """In one transaction: None (nothing written) unless `old_uid` is the tenant's fact;
        else insert `new` as `add_fact` does, close the old one and return the stored new one."""

    @abstractmethod
    async def get_fact(self, tenant: str, uid: str) -> Fact | None:
        """The fact with this uid, or None."""

    @abstractmethod
    async def list_facts(self, tenant: str, *, include_superseded: bool = False) -> list[Fact]:
        """Facts of the tenant, by (valid_from, uid); current ones only unless asked."""

    @abstractmethod
    async def fact_sources(self, tenant: str, fact_uid: str) -> list[str]:
        """Uids of episodes that state the fact, sorted."""
