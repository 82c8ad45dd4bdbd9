"""Personality snapshots, versioned per tenant and chained by PREVIOUS: contract and input rules.

Public methods are the contract; one that needs its input cleaned hands clean values to the
abstract `_hook` of the same name, which each backend implements.
"""

from __future__ import annotations

from abc import abstractmethod
from datetime import datetime

from memory.schema import PersonalitySnapshot, as_utc, clean_text
from memory.stores.graph.kind import KindStore


class SnapshotStore(KindStore):
    """Versions of the personality narrative (the sponge)."""

    async def add(self, tenant: str, text: str, at: datetime) -> PersonalitySnapshot:
        """Store a new snapshot version (previous + 1, from 1), linked to the previous by PREVIOUS."""
        return await self._add(tenant, clean_text(text), as_utc(at))

    @abstractmethod
    async def _add(self, tenant: str, text: str, at: datetime) -> PersonalitySnapshot:
        """Atomically store the cleaned `text` as the tenant's next version and return it."""

    @abstractmethod
    async def current(self, tenant: str) -> PersonalitySnapshot | None:
        """The highest version, or None."""

    @abstractmethod
    async def history(self, tenant: str) -> list[PersonalitySnapshot]:
        """Every version, newest first."""
