"""Leases on Neo4j: `:TenantState` nodes, write-locked, read and replaced in one transaction
(never deleted: a free lease is an empty value)."""

from __future__ import annotations

from neo4j import AsyncTransaction

from memory.stores.graph.leases import Change, Lease, LeaseStore
from memory.stores.neo4j.connection import tx_rows, tx_run
from memory.stores.neo4j.kind import Neo4jKind

# MERGE on the (tenant, key) uniqueness constraint serialises creation; the SET takes the node's
# write lock before the value is read, so a concurrent transaction waits for this one to commit
# and then reads what it wrote (no lost update). A released lease keeps its node, emptied: had
# the release deleted it, a take that matched the node before the delete committed would read
# it as free, store its lease on no node and report it as taken, and the next take would get
# it too (two holders at once; `test_a_take_racing_a_release_is_stored_when_it_is_reported`).
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


class Neo4jLeases(Neo4jKind, LeaseStore):
    """The lease part of `Neo4jGraphStore` (the tenant-state constraint is all it needs)."""

    async def _swap(self, tenant: str, key: str, change: Change) -> Lease | None:
        async def work(tx: AsyncTransaction) -> Lease | None:
            rows = await tx_rows(tx, _LOCK, {"tenant": tenant, "key": key})
            after = change(Lease.decode(rows[0]["value"]))
            value = "" if after is None else after.encode()  # "": free (`Lease.decode`)
            await tx_run(tx, _PUT, {"tenant": tenant, "key": key, "value": value})
            return after

        return await self._tx(work)
