"""Leases on Neo4j: `:TenantState` nodes, write-locked, read and replaced in one transaction."""

from __future__ import annotations

from neo4j import AsyncTransaction

from memory.stores.graph.leases import Change, Lease, LeaseStore
from memory.stores.neo4j.connection import tx_rows, tx_run
from memory.stores.neo4j.kind import Neo4jKind

# MERGE on the (tenant, key) uniqueness constraint serialises creation; the SET takes the node's
# write lock before the value is read, so a concurrent transaction waits for this one to commit
# and then reads what it wrote (no lost update).
_LOCK = """
MERGE (s:TenantState {tenant: $tenant, key: $key})
ON CREATE SET s.value = '', s.lock = 0
SET s.lock = coalesce(s.lock, 0) + 1
RETURN s.value AS value
"""

_PUT = """
MATCH (s:TenantState {tenant: $tenant, key: $key})
SET s.value = $value
"""

_DELETE = """
MATCH (s:TenantState {tenant: $tenant, key: $key})
DELETE s
"""


class Neo4jLeases(Neo4jKind, LeaseStore):
    """The lease part of `Neo4jGraphStore` (the tenant-state constraint is all it needs)."""

    async def _swap(self, tenant: str, key: str, change: Change) -> Lease | None:
        async def work(tx: AsyncTransaction) -> Lease | None:
            rows = await tx_rows(tx, _LOCK, {"tenant": tenant, "key": key})
            after = change(Lease.decode(rows[0]["value"]))
            if after is None:
                await tx_run(tx, _DELETE, {"tenant": tenant, "key": key})
            else:
                await tx_run(tx, _PUT, {"tenant": tenant, "key": key, "value": after.encode()})
            return after

        return await self._tx(work)
