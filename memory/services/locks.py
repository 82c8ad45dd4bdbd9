"""Per-tenant locks of one process, by purpose.

Read-modify-write sequences on one tenant's beliefs, sponge state, thread layers or session
summaries must not interleave within a process, one tenant reflects once at a time, and one
tenant consolidates once at a time (a scheduled run and a Studio run never overlap). Across
processes the stores' own transactions and idempotent writes keep them safe, and consolidation
and bookkeeping also hold a lease in the graph store (`memory.sleep.leases`).
"""

from __future__ import annotations

import asyncio
from typing import Literal

LockKind = Literal[
    "beliefs", "sponge", "reflection", "thread", "consolidation", "sessions", "bookkeeping"
]


class TenantLocks:
    """One `asyncio.Lock` per (purpose, tenant), made on first use."""

    def __init__(self) -> None:
        self._locks: dict[tuple[LockKind, str], asyncio.Lock] = {}

    def get(self, kind: LockKind, tenant: str) -> asyncio.Lock:
        """The lock serialising `kind` updates of `tenant`."""
        key = (kind, tenant)
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock
