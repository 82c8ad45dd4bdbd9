"""Leases on SQLite: rows of `tenant_state`, read and replaced in one `BEGIN IMMEDIATE`."""

from __future__ import annotations

from memory.stores.graph.leases import Change, Lease, LeaseStore
from memory.stores.sqlite.connection import Conn, immediate
from memory.stores.sqlite.kind import SqliteKind

_GET = "SELECT value FROM tenant_state WHERE tenant = ? AND key = ?"
_PUT = (
    "INSERT INTO tenant_state (tenant, key, value) VALUES (?, ?, ?) "
    "ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value"
)
_DELETE = "DELETE FROM tenant_state WHERE tenant = ? AND key = ?"


def _swap(conn: Conn, tenant: str, key: str, change: Change) -> Lease | None:
    # The write lock is taken before the read, so no other process can take the lease between.
    with immediate(conn):
        row = conn.execute(_GET, (tenant, key)).fetchone()
        after = change(Lease.decode(row[0] if row else None))
        if after is None:
            conn.execute(_DELETE, (tenant, key))
        else:
            conn.execute(_PUT, (tenant, key, after.encode()))
        return after


class SqliteLeases(SqliteKind, LeaseStore):
    """The lease part of `SqliteGraphStore` (no table of its own)."""

    async def _swap(self, tenant: str, key: str, change: Change) -> Lease | None:
        return await self._run(_swap, tenant, key, change)
