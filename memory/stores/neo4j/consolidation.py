"""Consolidation's reads and fact deletion on Neo4j (no schema of its own)."""

from __future__ import annotations

from memory.stores.graph.consolidation import ConsolidationStore
from memory.stores.neo4j.connection import Neo4jConnection

_CONNECTIONS = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
RETURN e.uid AS uid,
  COUNT { (e)-[:DISCUSSES|MENTIONS|STATES|SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->() }
  + COUNT { (e)-[l:CO_RETRIEVED]-() WHERE l.weight >= $strong } AS n
"""

_SOLE = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
WITH e
WHERE EXISTS {
    MATCH (e)-[:SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->(b:Belief)
    WHERE b.tenant = $tenant AND b.confidence > 0
      AND NOT EXISTS { MATCH (o:Episode)-[:SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->(b) WHERE o <> e }
  } OR EXISTS {
    MATCH (e)-[:STATES]->(f:Fact)
    WHERE f.tenant = $tenant AND f.superseded_by IS NULL
      AND NOT EXISTS { MATCH (o:Episode)-[:STATES]->(f) WHERE o <> e }
  }
RETURN DISTINCT e.uid AS uid
"""

_STATED_BY = """
MATCH (e:Episode {uid: $uid})-[:STATES]->(f:Fact) WHERE e.tenant = $tenant AND f.tenant = $tenant
RETURN f.uid AS uid ORDER BY uid
"""

_DELETE_FACT = """
OPTIONAL MATCH (f:Fact {uid: $uid}) WHERE f.tenant = $tenant
CALL (f) {
  OPTIONAL MATCH (g:Goal)-[:TRACKS]->(f)
  DETACH DELETE g
}
DETACH DELETE f
RETURN count(f) AS deleted
"""


class Neo4jConsolidation(Neo4jConnection, ConsolidationStore):
    """The consolidation part of `Neo4jGraphStore`."""

    async def _episode_connections(
        self, tenant: str, uids: list[str], min_link_weight: float
    ) -> dict[str, int]:
        rows = await self._read(_CONNECTIONS, tenant=tenant, uids=uids, strong=min_link_weight)
        return {str(r["uid"]): int(r["n"]) for r in rows}

    async def _sole_evidence(self, tenant: str, uids: list[str]) -> set[str]:
        rows = await self._read(_SOLE, tenant=tenant, uids=uids)
        return {str(r["uid"]) for r in rows}

    async def facts_stated_by(self, tenant: str, episode_uid: str) -> list[str]:
        """Uids of the facts this episode states (STATES), sorted."""
        rows = await self._read(_STATED_BY, tenant=tenant, uid=episode_uid)
        return [str(r["uid"]) for r in rows]

    async def delete_fact(self, tenant: str, uid: str) -> bool:
        """Delete a fact and its edges (STATES, ABOUT, LED_TO either way). True if it existed."""
        rows = await self._write(_DELETE_FACT, tenant=tenant, uid=uid)
        return bool(rows[0]["deleted"])
