"""Leases: one holder at a time per (tenant, name), across processes, with an expiry.

A lease is kept in the tenant-state records (key `lease:<name>`, a JSON value with the holder
and the expiry), so it needs no table, label or schema change of its own. Taking, renewing and
releasing are each one write transaction that reads the lease and replaces it, so two
processes racing for a free lease cannot both get it. A holder that dies stops renewing and its
lease is free once its expiry passes. Times are the callers' wall clocks: processes that share a
Neo4j from several machines need clocks that agree to well within the lease's length.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory.schema import as_utc, clean_text
from memory.stores.graph.kind import KindStore

KEY_PREFIX = "lease:"
"""Tenant-state keys of leases: `lease:` and the lease's name."""


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a lease, and until when (aware UTC)."""

    holder: str
    expires: datetime

    def encode(self) -> str:
        """The tenant-state value of this lease."""
        return json.dumps({"holder": self.holder, "expires": self.expires.isoformat()})

    @classmethod
    def decode(cls, value: str | None) -> Lease | None:
        """The lease stored as `value`, or None for none (or an unreadable value: free)."""
        try:
            raw = json.loads(value) if value else None
            if not isinstance(raw, dict):
                return None
            return cls(str(raw["holder"]), as_utc(datetime.fromisoformat(raw["expires"])))
        except (ValueError, KeyError, TypeError):
            return None


Change = Callable[[Lease | None], Lease | None]
"""What to store given the lease stored now (None: delete it)."""


class LeaseStore(KindStore):
    """Per-tenant named leases (the consolidation lease of `memory.sleep.leases`)."""

    async def take(
        self, tenant: str, name: str, holder: str, now: datetime, ttl: timedelta
    ) -> Lease:
        """Take the lease for `holder` until `now + ttl` if it is free, expired at `now` or
        already `holder`'s (a renewal); the lease as it is afterwards, whose holder is
        `holder` exactly when it was taken."""
        holder, at = _checked(holder), as_utc(now)
        if ttl <= timedelta(0):
            raise ValueError(f"a lease's ttl must be positive, not {ttl}")
        wanted = Lease(holder, at + ttl)

        def take(current: Lease | None) -> Lease | None:
            if current is None or current.holder == holder or current.expires <= at:
                return wanted
            return current

        after = await self._swap(tenant, _key(name), take)
        assert after is not None  # take never deletes
        return after

    async def release(self, tenant: str, name: str, holder: str) -> bool:
        """Give the lease up if `holder` holds it; True if it did (another's is left alone)."""
        holder = _checked(holder)
        released = False

        def release(current: Lease | None) -> Lease | None:
            nonlocal released
            released = current is not None and current.holder == holder
            return None if released or current is None else current

        await self._swap(tenant, _key(name), release)
        return released

    @abstractmethod
    async def _swap(self, tenant: str, key: str, change: Change) -> Lease | None:
        """In one write transaction: read the lease under `key`, store `change(lease)` there
        (None: free it) and return that."""


def _key(name: str) -> str:
    name = clean_text(name).strip()
    if not name:
        raise ValueError("a lease needs a name")
    return KEY_PREFIX + name


def _checked(holder: str) -> str:
    holder = clean_text(holder).strip()
    if not holder:
        raise ValueError("a lease needs a holder")
    return holder
