"""Beliefs and their evidence edges on Neo4j: their constraints and Cypher.

An evidence edge is a SUPPORTS_BELIEF or CONTRADICTS_BELIEF relationship from the episode to the
belief; its kind is the relationship type, its other fields are relationship properties.
"""

from __future__ import annotations

from typing import Any

from neo4j import AsyncTransaction
from neo4j.exceptions import ConstraintError

from memory.schema import Belief, Evidence, EvidenceKind
from memory.stores.errors import uid_taken
from memory.stores.graph.beliefs import BeliefStore
from memory.stores.neo4j.connection import LOCK_TENANT, tx_rows, tx_run
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import Props, from_props, to_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT belief_uid IF NOT EXISTS FOR (n:Belief) REQUIRE n.uid IS UNIQUE",
    "CREATE CONSTRAINT belief_topic IF NOT EXISTS FOR (n:Belief) REQUIRE (n.tenant, n.topic) IS UNIQUE",
)

# Replacing a belief sets every field but its identity (the uid stays, the topic is the key).
_UPSERT_BELIEF = """
MERGE (b:Belief {tenant: $tenant, topic: $topic})
ON CREATE SET b.uid = $uid
SET b += $props
RETURN b {.*} AS b
"""

_GET_BELIEF = "MATCH (b:Belief {uid: $uid}) WHERE b.tenant = $tenant RETURN b {.*} AS b"
_BELIEF_BY_TOPIC = "MATCH (b:Belief {tenant: $tenant, topic: $topic}) RETURN b {.*} AS b"
_LIST_BELIEFS = (
    "MATCH (b:Belief) WHERE b.tenant = $tenant AND b.topic IS NOT NULL RETURN b {.*} AS b"
)

_EVIDENCE_ENDS = """
MATCH (b:Belief {uid: $belief}) WHERE b.tenant = $tenant
MATCH (e:Episode {uid: $episode}) WHERE e.tenant = $tenant
OPTIONAL MATCH (e)-[r:SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->(b)
RETURN count(*) AS rows, count(r) AS edges
"""
# One query per kind: relationship types are constants, never parameters.
_ADD_EVIDENCE = {
    kind: f"""
MATCH (b:Belief {{uid: $belief}}) WHERE b.tenant = $tenant
MATCH (e:Episode {{uid: $episode}}) WHERE e.tenant = $tenant
CREATE (e)-[r:{kind.value}]->(b)
SET r = $props, b.evidence_count = b.evidence_count + 1
"""
    for kind in EvidenceKind
}
_EDGE_ENDS = ("episode_uid", "belief_uid", "kind")
"""Evidence fields held by the relationship's ends and type rather than its properties."""

_BELIEF_EVIDENCE = """
MATCH (e:Episode)-[r:SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->(b:Belief {uid: $uid})
WHERE b.tenant = $tenant
RETURN e.uid AS episode_uid, type(r) AS kind, r {.*} AS r
ORDER BY r.strength DESC, e.uid LIMIT $limit
"""

_DELETE_BELIEF = """
MATCH (b:Belief {uid: $uid}) WHERE b.tenant = $tenant
DETACH DELETE b
RETURN count(*) AS deleted
"""


def belief_of(props: dict[str, Any]) -> Belief:
    """A belief node's properties as a record."""
    return from_props(Belief, props)


class Neo4jBeliefs(Neo4jKind, BeliefStore):
    """The belief part of `Neo4jGraphStore`."""

    async def _upsert(self, belief: Belief) -> Belief:
        props = to_props(belief, exclude=("uid", "topic"))
        try:
            rows = await self._write(
                _UPSERT_BELIEF,
                tenant=belief.tenant,
                topic=belief.topic,
                uid=belief.uid,
                props=props,
            )
        except ConstraintError:
            raise uid_taken("belief", belief.uid, "a belief on another topic") from None
        return belief_of(rows[0]["b"])

    async def get(self, tenant: str, uid: str) -> Belief | None:
        """The belief with this uid, or None."""
        rows = await self._read(_GET_BELIEF, tenant=tenant, uid=uid)
        return belief_of(rows[0]["b"]) if rows else None

    async def _get_by_topic(self, tenant: str, topic: str) -> Belief | None:
        rows = await self._read(_BELIEF_BY_TOPIC, tenant=tenant, topic=topic)
        return belief_of(rows[0]["b"]) if rows else None

    async def _add_evidence(self, tenant: str, evidence: Evidence) -> bool:
        ends: Props = {"tenant": tenant, "episode": evidence.episode_uid}
        ends["belief"] = evidence.belief_uid
        props = to_props(evidence, exclude=_EDGE_ENDS) | {"tenant": tenant}

        async def work(tx: AsyncTransaction) -> bool:
            # The tenant lock makes "check, then create" atomic against concurrent callers.
            await tx_run(tx, LOCK_TENANT, {"tenant": tenant})
            found = await tx_rows(tx, _EVIDENCE_ENDS, ends)
            if not found[0]["rows"] or found[0]["edges"]:
                await tx.rollback()  # an end is missing, or the pair already has an edge
                return False
            await tx_run(tx, _ADD_EVIDENCE[evidence.kind], ends | {"props": props})
            return True

        return await self._tx(work)

    async def _evidence(self, tenant: str, belief_uid: str, limit: int) -> list[Evidence]:
        rows = await self._read(_BELIEF_EVIDENCE, tenant=tenant, uid=belief_uid, limit=limit)
        return [
            from_props(
                Evidence,
                row["r"],
                episode_uid=row["episode_uid"],
                belief_uid=belief_uid,
                kind=EvidenceKind(row["kind"]),
            )
            for row in rows
        ]

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete a belief and its provenance edges. True if it existed."""
        rows = await self._write(_DELETE_BELIEF, tenant=tenant, uid=uid)
        return bool(rows[0]["deleted"])

    async def list(self, tenant: str) -> list[Belief]:
        """All beliefs of the tenant, by topic."""
        rows = await self._read(_LIST_BELIEFS, tenant=tenant)
        return [belief_of(b) for b in sorted((row["b"] for row in rows), key=lambda b: b["topic"])]
