"""Concepts, diary entries and their INCLUDES / RECOUNTS edges on Neo4j: constraints and Cypher."""

from __future__ import annotations

from memory.schema import Concept, DiaryEntry
from memory.stores.errors import uid_taken
from memory.stores.graph.concepts import ConceptStore, DiaryStore, Members
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import from_props, to_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT concept_uid IF NOT EXISTS FOR (n:Concept) REQUIRE n.uid IS UNIQUE",
    "CREATE INDEX concept_tenant IF NOT EXISTS FOR (n:Concept) ON (n.tenant)",
    "CREATE CONSTRAINT diary_uid IF NOT EXISTS FOR (n:DiaryEntry) REQUIRE n.uid IS UNIQUE",
    "CREATE INDEX diary_tenant IF NOT EXISTS FOR (n:DiaryEntry) ON (n.tenant)",
)

# One auto-commit query each: the node and all its edges change together or not at all. No
# row back: the uid is another tenant's.
_PUT_CONCEPT = """
MERGE (c:Concept {uid: $uid})
ON CREATE SET c.tenant = $tenant
WITH c WHERE c.tenant = $tenant
SET c += $props
WITH c
CALL (c) {
  OPTIONAL MATCH (c)-[old:INCLUDES]->()
  DELETE old
}
CALL (c) {
  UNWIND $episodes AS u
  MATCH (m:Episode {uid: u}) WHERE m.tenant = $tenant
  MERGE (c)-[:INCLUDES]->(m)
}
CALL (c) {
  UNWIND $facts AS u
  MATCH (m:Fact {uid: u}) WHERE m.tenant = $tenant
  MERGE (c)-[:INCLUDES]->(m)
}
RETURN c {.*} AS c
"""
_GET_CONCEPT = "MATCH (c:Concept {uid: $uid}) WHERE c.tenant = $tenant RETURN c {.*} AS c"
_LIST_CONCEPTS = """
MATCH (c:Concept) WHERE c.tenant = $tenant RETURN c {.*} AS c ORDER BY c.first_seen, c.uid
"""
_MEMBERS = """
MATCH (c:Concept {uid: $uid})-[:INCLUDES]->(m) WHERE c.tenant = $tenant
RETURN m.uid AS uid, m:Episode AS episode ORDER BY uid
"""
_DELETE_CONCEPT = """
MATCH (c:Concept {uid: $uid}) WHERE c.tenant = $tenant
DETACH DELETE c
RETURN count(*) AS deleted
"""
_PUT_DIARY = """
MERGE (d:DiaryEntry {uid: $uid})
ON CREATE SET d.tenant = $tenant
WITH d WHERE d.tenant = $tenant
SET d += $props
WITH d
CALL (d) {
  OPTIONAL MATCH (d)-[old:RECOUNTS]->()
  DELETE old
}
CALL (d) {
  UNWIND $episodes AS u
  MATCH (e:Episode {uid: u}) WHERE e.tenant = $tenant
  MERGE (d)-[:RECOUNTS]->(e)
}
RETURN d {.*} AS d
"""
_LIST_DIARY = """
MATCH (d:DiaryEntry) WHERE d.tenant = $tenant
  AND ($first IS NULL OR d.day >= $first) AND ($last IS NULL OR d.day <= $last)
RETURN d {.*} AS d ORDER BY d.day, d.uid
"""
_DIARY_SOURCES = """
MATCH (d:DiaryEntry {uid: $uid})-[:RECOUNTS]->(e:Episode) WHERE d.tenant = $tenant
RETURN e.uid AS uid ORDER BY uid
"""
_DELETE_DIARY = """
MATCH (d:DiaryEntry {uid: $uid}) WHERE d.tenant = $tenant
DETACH DELETE d
RETURN count(*) AS deleted
"""


class Neo4jConcepts(Neo4jKind, ConceptStore):
    """The concepts of `Neo4jGraphStore`."""

    async def _put(
        self, concept: Concept, episode_uids: list[str], fact_uids: list[str]
    ) -> Concept:
        rows = await self._write(
            _PUT_CONCEPT,
            uid=concept.uid,
            tenant=concept.tenant,
            props=to_props(concept, exclude=("uid", "tenant")),
            episodes=episode_uids,
            facts=fact_uids,
        )
        if not rows:
            raise uid_taken("concept", concept.uid)
        return from_props(Concept, rows[0]["c"])

    async def get(self, tenant: str, uid: str) -> Concept | None:
        """The concept with this uid, or None."""
        rows = await self._read(_GET_CONCEPT, tenant=tenant, uid=uid)
        return from_props(Concept, rows[0]["c"]) if rows else None

    async def members(self, tenant: str, uid: str) -> Members:
        """The episodes and facts the concept includes (empty for an unknown concept)."""
        rows = await self._read(_MEMBERS, tenant=tenant, uid=uid)
        return Members(
            episodes=[r["uid"] for r in rows if r["episode"]],
            facts=[r["uid"] for r in rows if not r["episode"]],
        )

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the concept and its edges (never its members); False if it did not exist."""
        rows = await self._write(_DELETE_CONCEPT, tenant=tenant, uid=uid)
        return bool(rows and rows[0]["deleted"])

    async def list(self, tenant: str) -> list[Concept]:
        """The tenant's concepts, by (first_seen, uid)."""
        rows = await self._read(_LIST_CONCEPTS, tenant=tenant)
        return [from_props(Concept, r["c"]) for r in rows]


class Neo4jDiary(Neo4jKind, DiaryStore):
    """The diary entries of `Neo4jGraphStore`."""

    async def _put(self, entry: DiaryEntry, episode_uids: list[str]) -> DiaryEntry:
        rows = await self._write(
            _PUT_DIARY,
            uid=entry.uid,
            tenant=entry.tenant,
            props=to_props(entry, exclude=("uid", "tenant")),
            episodes=episode_uids,
        )
        if not rows:
            raise uid_taken("diaryentry", entry.uid)
        return from_props(DiaryEntry, rows[0]["d"])

    async def sources(self, tenant: str, uid: str) -> list[str]:
        """Uids of the episodes the entry recounts, sorted."""
        rows = await self._read(_DIARY_SOURCES, tenant=tenant, uid=uid)
        return [r["uid"] for r in rows]

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the entry and its edges; False if it did not exist."""
        rows = await self._write(_DELETE_DIARY, tenant=tenant, uid=uid)
        return bool(rows and rows[0]["deleted"])

    async def list(
        self, tenant: str, *, first: str | None = None, last: str | None = None
    ) -> list[DiaryEntry]:
        """The tenant's diary entries, by (day, uid); with `first` / `last` (ISO days, both
        included) only the days from / up to them."""
        rows = await self._read(_LIST_DIARY, tenant=tenant, first=first, last=last)
        return [from_props(DiaryEntry, r["d"]) for r in rows]
