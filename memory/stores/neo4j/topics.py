"""Topics and DISCUSSES edges on Neo4j: their constraint and Cypher."""

from __future__ import annotations

from memory.stores.graph.topics import TopicStore
from memory.stores.neo4j.kind import Neo4jKind

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT topic_key IF NOT EXISTS FOR (n:Topic) REQUIRE (n.tenant, n.slug) IS UNIQUE",
)

_LINK_TOPICS = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
UNWIND $slugs AS slug
MERGE (t:Topic {tenant: $tenant, slug: slug})
MERGE (e)-[:DISCUSSES]->(t)
"""

_EPISODE_TOPICS = """
MATCH (e:Episode {uid: $uid})-[:DISCUSSES]->(t:Topic) WHERE e.tenant = $tenant
RETURN DISTINCT t.slug AS slug
"""

_TOPIC_EPISODES = """
MATCH (e:Episode)-[:DISCUSSES]->(t:Topic {tenant: $tenant, slug: $slug})
WITH DISTINCT e
RETURN e.uid AS uid ORDER BY e.created_at DESC, e.uid LIMIT $limit
"""

_COUNT_TOPICS = """
MATCH (t:Topic {tenant: $tenant}) WHERE EXISTS { MATCH (:Episode)-[:DISCUSSES]->(t) }
RETURN count(t) AS n
"""


class Neo4jTopics(Neo4jKind, TopicStore):
    """The topic part of `Neo4jGraphStore`."""

    async def _link(self, tenant: str, episode_uid: str, slugs: list[str]) -> None:
        await self._write(_LINK_TOPICS, tenant=tenant, uid=episode_uid, slugs=slugs)

    async def of_episode(self, tenant: str, episode_uid: str) -> list[str]:
        """Topic slugs the episode discusses, sorted."""
        rows = await self._read(_EPISODE_TOPICS, tenant=tenant, uid=episode_uid)
        return sorted(row["slug"] for row in rows)

    async def count(self, tenant: str) -> int:
        """How many topics at least one of the tenant's episodes discusses."""
        rows = await self._read(_COUNT_TOPICS, tenant=tenant)
        return int(rows[0]["n"])
