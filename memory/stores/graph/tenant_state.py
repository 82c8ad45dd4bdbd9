"""Small per-tenant state (counters, the sponge's bookkeeping): the contract and its input rules.

Unlike other records, the tenant and key are cleaned too: both are free text chosen by callers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from memory.schema import clean_text


class TenantStateStore(ABC):
    """String values under keys, one namespace per tenant."""

    async def get(self, tenant: str, key: str) -> str | None:
        """The value stored under `key` for the tenant, or None."""
        return await self._get(clean_text(tenant), clean_text(key))

    @abstractmethod
    async def _get(self, tenant: str, key: str) -> str | None:
        """The value under the cleaned (tenant, key), or None."""

    async def put(self, tenant: str, key: str, value: str) -> None:
        """Store `value` under `key` for the tenant, replacing any previous value."""
        await self._put(clean_text(tenant), clean_text(key), clean_text(value))

    @abstractmethod
    async def _put(self, tenant: str, key: str, value: str) -> None:
        """Store the cleaned value under the cleaned (tenant, key), replacing any previous one."""
