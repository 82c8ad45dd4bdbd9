"""Small per-tenant state on Neo4j (`:TenantState` nodes): its constraint and Cypher."""

from __future__ import annotations

from memory.stores.graph.tenant_state import TenantStateStore
from memory.stores.neo4j.kind import Neo4jKind

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT tenant_state_key IF NOT EXISTS FOR (n:TenantState) "
    "REQUIRE (n.tenant, n.key) IS UNIQUE",
)

_GET_STATE = """
MATCH (s:TenantState {tenant: $tenant, key: $key})
RETURN s.value AS value
"""

_STATE_KEYS = """
MATCH (s:TenantState {tenant: $tenant}) WHERE s.key STARTS WITH $prefix
RETURN s.key AS key
"""

_PUT_STATE = """
MERGE (s:TenantState {tenant: $tenant, key: $key})
SET s.value = $value
"""


class Neo4jTenantState(Neo4jKind, TenantStateStore):
    """The tenant-state part of `Neo4jGraphStore`."""

    async def _get(self, tenant: str, key: str) -> str | None:
        rows = await self._read(_GET_STATE, tenant=tenant, key=key)
        return str(rows[0]["value"]) if rows else None

    async def _put(self, tenant: str, key: str, value: str) -> None:
        await self._write(_PUT_STATE, tenant=tenant, key=key, value=value)

    async def _keys(self, tenant: str, prefix: str) -> list[str]:
        rows = await self._read(_STATE_KEYS, tenant=tenant, prefix=prefix)
        return [str(r["key"]) for r in rows]
