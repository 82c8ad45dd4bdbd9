"""Personality snapshots on SQLite: their table and SQL.

PREVIOUS is implicit here: version n's previous is version n - 1 of the same tenant.
"""

from __future__ import annotations

from datetime import datetime

from memory.schema import PersonalitySnapshot
from memory.stores.graph.snapshots import SnapshotStore
from memory.stores.sqlite.connection import Conn, immediate
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import from_row, insert_sql, to_row

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS snapshots (
        tenant TEXT NOT NULL,
        version INTEGER NOT NULL,
        text TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (tenant, version)
    )""",
)

_INSERT = insert_sql("snapshots", PersonalitySnapshot)


def _add(conn: Conn, tenant: str, text: str, at: datetime) -> PersonalitySnapshot:
    """Store the next snapshot version of the tenant."""
    with immediate(conn):
        (version,) = conn.execute(
            "SELECT COALESCE(MAX(version), 0) + 1 FROM snapshots WHERE tenant = ?", (tenant,)
        ).fetchone()
        snapshot = PersonalitySnapshot(tenant=tenant, version=version, text=text, created_at=at)
        conn.execute(_INSERT, to_row(snapshot))
    return snapshot


class SqliteSnapshots(SqliteKind, SnapshotStore):
    """The snapshot part of `SqliteGraphStore`."""

    async def _add(self, tenant: str, text: str, at: datetime) -> PersonalitySnapshot:
        return await self._run(_add, tenant, text, at)

    async def current(self, tenant: str) -> PersonalitySnapshot | None:
        """The highest version, or None."""
        rows = await self._fetch(
            "SELECT * FROM snapshots WHERE tenant = ? ORDER BY version DESC LIMIT 1",
            (tenant,),
        )
        return from_row(PersonalitySnapshot, rows[0]) if rows else None

    async def history(self, tenant: str) -> list[PersonalitySnapshot]:
        """Every version, newest first."""
        rows = await self._fetch(
            "SELECT * FROM snapshots WHERE tenant = ? ORDER BY version DESC", (tenant,)
        )
        return [from_row(PersonalitySnapshot, r) for r in rows]
