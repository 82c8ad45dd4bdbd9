"""Facts (knowledge propositions) with their edges: the contract, and its input rules.

Edges: STATES (episode -> fact: the episodes that state it), ABOUT (fact -> entity: its
subject, when the subject is a named entity), LED_TO (fact or episode -> fact: what motivated a
decision or plan). Newer facts supersede older ones without deleting them. Public methods are
the contract; one that needs its input cleaned or checked hands clean values to the abstract
`_hook` of the same name.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.schema import Cause, Fact, FactKind, as_utc, clean_text
from memory.stores.errors import NotFound
from memory.stores.graph.inputs import clean_record, distinct, name_key
from memory.stores.graph.kind import KindStore


@dataclass(frozen=True, slots=True)
class FactFilter:
    """Conditions of `list` beyond the tenant (None: any)."""

    kinds: tuple[FactKind, ...] | None = None
    subject: str | None = None
    attribute: str | None = None


class FactStore(KindStore):
    """Facts with their validity, the episodes that state them, their subjects and causes."""

    async def add(self, fact: Fact, episode_uid: str | None = None) -> Fact:
        """Store a fact and, given an episode, a STATES edge from it; idempotent on fact uid."""
        return await self._add(clean_record(fact), episode_uid)

    @abstractmethod
    async def _add(self, fact: Fact, episode_uid: str | None) -> Fact:
        """Insert the cleaned fact unless its uid exists, cite it, and return the stored fact.

        Raises `StoreError` (`errors.uid_taken`) when the uid is another tenant's fact.
        """

    @abstractmethod
    async def cite(self, tenant: str, fact_uid: str, episode_uid: str) -> None:
        """Add a STATES edge from another episode to an existing fact; idempotent."""

    async def supersede(self, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact:
        """Store `new` and close `old` (valid_to = at, superseded_by = new.uid); nothing deleted.

        Raises `NotFound` if `old_uid` is not a fact of this tenant.
        """
        if new.tenant != tenant:
            raise ValueError("the superseding fact must belong to the same tenant")
        if new.uid == old_uid:
            raise ValueError("a fact cannot supersede itself; give the new fact a fresh uid")
        stored = await self._supersede(tenant, old_uid, clean_record(new), as_utc(at))
        if stored is None:
            raise NotFound(f"no fact {old_uid!r} for this tenant; nothing to supersede")
        return stored

    @abstractmethod
    async def _supersede(self, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact | None:
        """In one transaction: None (nothing written) unless `old_uid` is the tenant's fact;
        else insert `new` as `add` does, close the old one and return the stored new one."""

    @abstractmethod
    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the tenant's fact and its edges (STATES, ABOUT, LED_TO in and out); True if it
        existed. The facts it superseded become current again (`superseded_by` and `valid_to`
        cleared): what replaced them is gone. For `serve.api`'s delete of the only episode
        that stated it; the knowledge pipeline itself never deletes a fact."""

    @abstractmethod
    async def get(self, tenant: str, uid: str) -> Fact | None:
        """The fact with this uid, or None."""

    async def get_many(self, tenant: str, uids: Sequence[str]) -> list[Fact]:
        """The tenant's facts among `uids`, in the order asked (each once; unknown skipped)."""
        wanted = distinct(uids)
        if not wanted:
            return []
        found = {f.uid: f for f in await self._get_many(tenant, wanted)}
        return [found[u] for u in wanted if u in found]

    @abstractmethod
    async def _get_many(self, tenant: str, uids: list[str]) -> list[Fact]:
        """The tenant's facts among the distinct, non-empty `uids`, in any order."""

    @abstractmethod
    async def sources(self, tenant: str, fact_uid: str) -> list[str]:
        """Uids of episodes that state the fact, sorted."""

    async def sources_many(self, tenant: str, uids: Sequence[str]) -> dict[str, list[str]]:
        """For each distinct fact uid asked, the sorted uids of the episodes that state it
        (an empty list for a fact without sources or not of this tenant)."""
        wanted = distinct(uids)
        found = await self._sources_many(tenant, wanted) if wanted else {}
        return {u: sorted(found.get(u, [])) for u in wanted}

    @abstractmethod
    async def _sources_many(self, tenant: str, uids: list[str]) -> dict[str, list[str]]:
        """Episode uids stating each of the non-empty `uids` (facts without any may be left out)."""

    async def link_subject(self, tenant: str, fact_uid: str, name: str) -> bool:
        """An ABOUT edge from the fact to the entity named `name`; False (nothing written) unless
        both are the tenant's. Idempotent."""
        key = name_key(name)
        return bool(key) and await self._link_subject(tenant, fact_uid, key)

    @abstractmethod
    async def _link_subject(self, tenant: str, fact_uid: str, key: str) -> bool:
        """MERGE the ABOUT edge if the fact and the entity with this key exist; whether they do."""

    async def link_cause(self, tenant: str, fact_uid: str, cause_uid: str) -> bool:
        """A LED_TO edge from a fact or an episode (`cause_uid`) to the fact; False (nothing
        written) unless both are the tenant's and differ. Idempotent."""
        if fact_uid == cause_uid:
            return False
        return await self._link_cause(tenant, fact_uid, cause_uid)

    @abstractmethod
    async def _link_cause(self, tenant: str, fact_uid: str, cause_uid: str) -> bool:
        """MERGE the LED_TO edge when the fact and the cause (a fact, else an episode) exist."""

    @abstractmethod
    async def causes(self, tenant: str, fact_uid: str) -> list[Cause]:
        """What led to the fact (LED_TO edges into it), by (kind, uid)."""

    @abstractmethod
    async def stated_by(self, tenant: str, episode_uid: str) -> list[str]:
        """Uids of the facts this episode states (STATES), sorted; with `sources_many`, which
        of them it alone states."""

    @abstractmethod
    async def _list(self, tenant: str, include_superseded: bool, flt: FactFilter) -> list[Fact]:
        """The tenant's facts matching `flt` (kinds non-empty when given), in the public order."""

    async def list(
        self,
        tenant: str,
        *,
        include_superseded: bool = False,
        kinds: Sequence[FactKind] | None = None,
        subject: str | None = None,
        attribute: str | None = None,
    ) -> list[Fact]:
        """Facts of the tenant, by (valid_from, uid); current ones only unless asked.

        `kinds`, `subject` and `attribute` narrow the list (exact matches; None: any).
        """
        flt = FactFilter(
            kinds=None if kinds is None else tuple(FactKind(k) for k in kinds),
            subject=None if subject is None else clean_text(subject),
            attribute=None if attribute is None else clean_text(attribute),
        )
        if flt.kinds == ():
            return []
        return await self._list(tenant, include_superseded, flt)
