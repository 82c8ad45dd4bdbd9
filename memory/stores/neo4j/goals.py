"""Goals (TRACKS a fact) and emotions (FELT_IN an episode) on Neo4j: constraints and Cypher.

Deleting a fact deletes its goal and deleting an episode its emotions, in the same query
(`memory.stores.neo4j.facts`, `memory.stores.neo4j.episodes`), so neither is left dangling.
"""

from __future__ import annotations

from datetime import datetime

from neo4j import AsyncTransaction

from memory.schema import Emotion, Goal, GoalStatus, as_utc
from memory.stores.errors import uid_taken
from memory.stores.graph.goals import EmotionStore, GoalStore
from memory.stores.neo4j.connection import tx_rows
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import from_props, to_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT goal_uid IF NOT EXISTS FOR (n:Goal) REQUIRE n.uid IS UNIQUE",
    "CREATE INDEX goal_tenant IF NOT EXISTS FOR (n:Goal) ON (n.tenant)",
    "CREATE CONSTRAINT emotion_uid IF NOT EXISTS FOR (n:Emotion) REQUIRE n.uid IS UNIQUE",
    "CREATE INDEX emotion_tenant IF NOT EXISTS FOR (n:Emotion) ON (n.tenant)",
)

# Run in one transaction: the goal is written only with its fact, never over another
# tenant's uid.
_GOAL_OWNER = "MATCH (g:Goal {uid: $uid}) RETURN g.tenant AS tenant"
_HAS_FACT = "MATCH (f:Fact {uid: $fact_uid}) WHERE f.tenant = $tenant RETURN f.uid AS uid"
_PUT_GOAL = """
MATCH (f:Fact {uid: $fact_uid}) WHERE f.tenant = $tenant
MERGE (g:Goal {uid: $uid})
SET g = $props
WITH f, g
CALL (g, f) {
  OPTIONAL MATCH (g)-[old:TRACKS]->(x) WHERE x <> f
  DELETE old
}
MERGE (g)-[:TRACKS]->(f)
RETURN g {.*} AS g
"""
_GET_GOAL = "MATCH (g:Goal {uid: $uid}) WHERE g.tenant = $tenant RETURN g {.*} AS g"
_LIST_GOALS = """
MATCH (g:Goal) WHERE g.tenant = $tenant AND ($status IS NULL OR g.status = $status)
RETURN g {.*} AS g ORDER BY g.stated_at, g.uid
"""
_RESET_GOALS = """
MATCH (g:Goal) WHERE g.tenant = $tenant AND g.evidence_uid = $episode
SET g.status = 'active', g.reason = $reason, g.evidence_uid = null, g.changed_at = $at
RETURN count(g) AS n
"""
_PUT_EMOTIONS = """
MATCH (e:Episode {uid: $episode}) WHERE e.tenant = $tenant
CALL (e) {
  OPTIONAL MATCH (old:Emotion)-[:FELT_IN]->(e)
  DETACH DELETE old
}
CALL (e) {
  UNWIND $emotions AS row
  CREATE (m:Emotion)
  SET m = row
  CREATE (m)-[:FELT_IN]->(e)
}
RETURN count(*) AS n
"""
_LIST_EMOTIONS = """
MATCH (m:Emotion) WHERE m.tenant = $tenant
RETURN m {.*} AS m ORDER BY m.felt_at, m.episode_uid, m.name
"""
# One episode's: from the episode node (its uid is indexed), not the tenant's emotions.
_EPISODE_EMOTIONS = """
MATCH (m:Emotion)-[:FELT_IN]->(e:Episode {uid: $episode})
WHERE e.tenant = $tenant AND m.tenant = $tenant
RETURN m {.*} AS m ORDER BY m.name
"""


class Neo4jGoals(Neo4jKind, GoalStore):
    """The goals of `Neo4jGraphStore`."""

    async def _put(self, goal: Goal) -> Goal | None:
        params = {
            "uid": goal.uid,
            "tenant": goal.tenant,
            "fact_uid": goal.fact_uid,
            "props": to_props(goal),
        }

        async def work(tx: AsyncTransaction) -> Goal | None:
            owner = await tx_rows(tx, _GOAL_OWNER, params)
            if owner and owner[0]["tenant"] != goal.tenant:
                raise uid_taken("goal", goal.uid)
            if not await tx_rows(tx, _HAS_FACT, params):
                return None
            rows = await tx_rows(tx, _PUT_GOAL, params)
            return from_props(Goal, rows[0]["g"])

        return await self._tx(work)

    async def get(self, tenant: str, uid: str) -> Goal | None:
        """The goal with this uid, or None."""
        rows = await self._read(_GET_GOAL, tenant=tenant, uid=uid)
        return from_props(Goal, rows[0]["g"]) if rows else None

    async def reset_evidence(self, tenant: str, episode_uid: str, reason: str, at: datetime) -> int:
        """Goals whose status rests on this episode become active again (that reason, no
        evidence, changed at `at`); how many did."""
        rows = await self._write(
            _RESET_GOALS, tenant=tenant, episode=episode_uid, reason=reason, at=as_utc(at)
        )
        return int(rows[0]["n"]) if rows else 0

    async def _list(self, tenant: str, status: GoalStatus | None) -> list[Goal]:
        rows = await self._read(
            _LIST_GOALS, tenant=tenant, status=None if status is None else status.value
        )
        return [from_props(Goal, r["g"]) for r in rows]


class Neo4jEmotions(Neo4jKind, EmotionStore):
    """The emotions of `Neo4jGraphStore`."""

    async def _put(self, tenant: str, episode_uid: str, emotions: list[Emotion]) -> list[Emotion]:
        await self._write(
            _PUT_EMOTIONS,
            tenant=tenant,
            episode=episode_uid,
            emotions=[to_props(e) for e in emotions],
        )
        return await self.list(tenant, episode_uid)

    async def list(self, tenant: str, episode_uid: str | None = None) -> list[Emotion]:
        """The tenant's emotions (of one episode, or all), by (felt_at, episode_uid, name)."""
        if episode_uid is None:
            rows = await self._read(_LIST_EMOTIONS, tenant=tenant)
        else:
            rows = await self._read(_EPISODE_EMOTIONS, tenant=tenant, episode=episode_uid)
        return [from_props(Emotion, r["m"]) for r in rows]
