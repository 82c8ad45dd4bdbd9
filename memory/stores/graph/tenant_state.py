"""Small per-tenant state (counters, the sponge's bookkeeping): the contract and its input rules.

Unlike other records, the key is cleaned too: it is free text chosen by callers. The tenant is
checked like every store's, never cleaned (`memory.tenant`).
"""

from __future__ import annotations

from abc import abstractmethod

from memory.schema import clean_text
from memory.stores.graph.kind import KindStore


class TenantStateStore(KindStore):
    """String values under keys, one namespace per tenant."""

    async def get(self, tenant: str, key: str) -> str | None:
        """The value stored under `key` for the tenant, or None."""
        return await self._get(tenant, clean_text(key))

    @abstractmethod
    async def _get(self, tenant: str, key: str) -> str | None:
        """The value under (tenant, the cleaned key), or None."""

    async def put(self, tenant: str, key: str, value: str) -> None:
        """Store `value` under `key` for the tenant, replacing any previous value."""
        await self._put(tenant, clean_text(key), clean_text(value))

    @abstractmethod
    async def _put(self, tenant: str, key: str, value: str) -> None:
        """Store the cleaned value under (tenant, the cleaned key), replacing any previous one."""

    async def keys(self, tenant: str, prefix: str = "") -> list[str]:
        """The tenant's keys that start with `prefix` (cleaned as keys are), in code-point order."""
        return sorted(await self._keys(tenant, clean_text(prefix)))

    @abstractmethod
    async def _keys(self, tenant: str, prefix: str) -> list[str]:
        """The tenant's keys starting with the cleaned prefix, in any order."""
