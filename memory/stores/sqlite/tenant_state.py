"""Small per-tenant state on SQLite: its table and SQL."""

from __future__ import annotations

from memory.stores.graph.tenant_state import TenantStateStore
from memory.stores.sqlite.kind import SqliteKind

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS tenant_state (
        tenant TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (tenant, key)
    )""",
)


class SqliteTenantState(SqliteKind, TenantStateStore):
    """The tenant-state part of `SqliteGraphStore`."""

    async def _get(self, tenant: str, key: str) -> str | None:
        rows = await self._fetch(
            "SELECT value FROM tenant_state WHERE tenant = ? AND key = ?", (tenant, key)
        )
        return str(rows[0]["value"]) if rows else None

    async def _put(self, tenant: str, key: str, value: str) -> None:
        await self._write(
            "INSERT INTO tenant_state (tenant, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value",
            (tenant, key, value),
        )

    async def _keys(self, tenant: str, prefix: str) -> list[str]:
        rows = await self._fetch(
            "SELECT key FROM tenant_state WHERE tenant = ? AND substr(key, 1, length(?)) = ?",
            (tenant, prefix, prefix),
        )
        return [str(r["key"]) for r in rows]
