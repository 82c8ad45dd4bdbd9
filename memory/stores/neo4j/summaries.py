"""Session summaries and SUMMARISES edges on Neo4j: their constraint, index and Cypher."""

from __future__ import annotations

from typing import Any

from memory.schema import SessionSummary
from memory.stores.errors import uid_taken
from memory.stores.graph.summaries import SummaryStore
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import from_props, to_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT summary_uid IF NOT EXISTS FOR (n:Summary) REQUIRE n.uid IS UNIQUE",
    "CREATE INDEX summary_thread IF NOT EXISTS FOR (n:Summary) ON (n.tenant, n.thread_id)",
)

# Replacing a summary sets every field but its identity and its edges to exactly the listed
# episodes of the tenant; no row back: another tenant's uid.
_UPSERT_SUMMARY = """
MERGE (s:Summary {uid: $uid})
ON CREATE SET s.tenant = $tenant
WITH s WHERE s.tenant = $tenant
SET s += $props
WITH s
CALL (s) {
  OPTIONAL MATCH (s)-[old:SUMMARISES]->()
  DELETE old
}
CALL (s) {
  UNWIND $episodes AS euid
  MATCH (e:Episode {uid: euid}) WHERE e.tenant = $tenant
  MERGE (s)-[:SUMMARISES]->(e)
}
RETURN s {.*} AS s
"""

_GET_SUMMARIES = "MATCH (s:Summary) WHERE s.uid IN $uids AND s.tenant = $tenant RETURN s {.*} AS s"
_LIST_SUMMARIES = """
MATCH (s:Summary) WHERE s.tenant = $tenant AND ($thread IS NULL OR s.thread_id = $thread)
RETURN s {.*} AS s ORDER BY s.started_at, s.uid
"""
_SUMMARIES_OF = """
MATCH (s:Summary)-[:SUMMARISES]->(e:Episode {uid: $uid})
WHERE s.tenant = $tenant AND e.tenant = $tenant
RETURN DISTINCT s.uid AS uid ORDER BY uid
"""
_DELETE_SUMMARY = """
MATCH (s:Summary {uid: $uid}) WHERE s.tenant = $tenant
DETACH DELETE s
RETURN count(*) AS deleted
"""


def summary_of(props: dict[str, Any]) -> SessionSummary:
    """A summary node's properties as a record."""
    return from_props(SessionSummary, props)


class Neo4jSummaries(Neo4jKind, SummaryStore):
    """The summary part of `Neo4jGraphStore`."""

    async def _upsert(self, summary: SessionSummary) -> SessionSummary:
        rows = await self._write(
            _UPSERT_SUMMARY,
            uid=summary.uid,
            tenant=summary.tenant,
            props=to_props(summary, exclude=("uid", "tenant")),
            episodes=list(summary.episode_uids),
        )
        if not rows:
            raise uid_taken("summary", summary.uid)
        return summary_of(rows[0]["s"])

    async def _get_many(self, tenant: str, uids: list[str]) -> list[SessionSummary]:
        rows = await self._read(_GET_SUMMARIES, tenant=tenant, uids=uids)
        return [summary_of(row["s"]) for row in rows]

    async def of_episode(self, tenant: str, episode_uid: str) -> list[str]:
        """Uids of the summaries with a SUMMARISES edge to the episode, sorted."""
        rows = await self._read(_SUMMARIES_OF, tenant=tenant, uid=episode_uid)
        return [row["uid"] for row in rows]

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the summary and its edges; False if it did not exist."""
        rows = await self._write(_DELETE_SUMMARY, tenant=tenant, uid=uid)
        return bool(rows and rows[0]["deleted"])

    async def _list(self, tenant: str, thread_id: str | None) -> list[SessionSummary]:
        rows = await self._read(_LIST_SUMMARIES, tenant=tenant, thread=thread_id)
        return [summary_of(row["s"]) for row in rows]
