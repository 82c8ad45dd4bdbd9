"""Personality snapshots on Neo4j, chained by PREVIOUS: their constraint and Cypher."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.schema import PersonalitySnapshot
from memory.stores.graph.snapshots import SnapshotStore
from memory.stores.neo4j.connection import LOCK_TENANT
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import from_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT snapshot_key IF NOT EXISTS FOR (n:PersonalitySnapshot) "
    "REQUIRE (n.tenant, n.version) IS UNIQUE",
)

# Under the tenant lock, so two writers cannot both take the same next version.
_ADD_SNAPSHOT = (
    LOCK_TENANT
    + """
WITH t
OPTIONAL MATCH (prev:PersonalitySnapshot {tenant: $tenant}) WHERE prev.version IS NOT NULL
WITH prev ORDER BY prev.tenant DESC, prev.version DESC LIMIT 1
CREATE (s:PersonalitySnapshot {tenant: $tenant, version: coalesce(prev.version, 0) + 1,
                               text: $text, created_at: $at})
FOREACH (_ IN CASE WHEN prev IS NULL THEN [] ELSE [1] END | CREATE (s)-[:PREVIOUS]->(prev))
RETURN s {.*} AS s
"""
)

_SNAPSHOTS = """
MATCH (s:PersonalitySnapshot {tenant: $tenant}) WHERE s.version IS NOT NULL
RETURN s {.*} AS s ORDER BY s.tenant DESC, s.version DESC LIMIT $limit
"""


def snapshot_of(props: dict[str, Any]) -> PersonalitySnapshot:
    """A snapshot node's properties as a record."""
    return from_props(PersonalitySnapshot, props)


class Neo4jSnapshots(Neo4jKind, SnapshotStore):
    """The snapshot part of `Neo4jGraphStore`."""

    async def _add(self, tenant: str, text: str, at: datetime) -> PersonalitySnapshot:
        rows = await self._write(_ADD_SNAPSHOT, tenant=tenant, text=text, at=at)
        return snapshot_of(rows[0]["s"])

    async def current(self, tenant: str) -> PersonalitySnapshot | None:
        """The highest version, or None."""
        rows = await self._read(_SNAPSHOTS, tenant=tenant, limit=1)
        return snapshot_of(rows[0]["s"]) if rows else None

    async def history(self, tenant: str) -> list[PersonalitySnapshot]:
        """Every version, newest first."""
        rows = await self._read(_SNAPSHOTS, tenant=tenant, limit=2**62)
        return [snapshot_of(row["s"]) for row in rows]
