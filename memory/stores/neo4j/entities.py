"""Entities, MENTIONS and RELATED_TO edges on Neo4j: their constraint and Cypher.

Entity nodes carry their key (the normalised name) beside the record's fields; lists are sorted
by key here because Cypher orders strings by UTF-16 unit, Python and SQLite by code point.
"""

from __future__ import annotations

from typing import Any, LiteralString

from memory.schema import Entity, EntityType, EpisodeHit
from memory.stores.graph.entities import EntityStore
from memory.stores.neo4j.connection import with_bound
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import from_props, to_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT entity_key IF NOT EXISTS FOR (n:Entity) REQUIRE (n.tenant, n.key) IS UNIQUE",
)

# The first spelling of the name stays the display name; the latest type wins.
_UPSERT_ENTITY = """
MERGE (n:Entity {tenant: $tenant, key: $key})
ON CREATE SET n += $props
SET n.type = $props.type
RETURN n {.*} AS n
"""

_LINK_MENTIONS = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
UNWIND $keys AS key
MATCH (n:Entity {tenant: $tenant, key: key})
MERGE (e)-[:MENTIONS]->(n)
"""

_RELATE = """
MATCH (a:Entity {tenant: $tenant, key: $a})
MATCH (b:Entity {tenant: $tenant, key: $b})
MERGE (a)-[r:RELATED_TO]->(b)
ON CREATE SET r.relation = $relation, r.tenant = $tenant
SET r.relation = CASE WHEN $replace THEN $relation ELSE r.relation END
"""

_NAMED_ENTITIES = "MATCH (n:Entity) WHERE n.tenant = $tenant AND n.key IN $keys RETURN n {.*} AS n"

_EPISODE_ENTITIES = """
MATCH (e:Episode {uid: $uid})-[:MENTIONS]->(n:Entity) WHERE e.tenant = $tenant
RETURN DISTINCT n {.*} AS n
"""

# ANY SHORTEST searches breadth-first per (seed, entity) pair, so dense graphs and cycles cost
# nodes x edges, not the number of paths; `%d` is the validated hop bound (at least 1: a
# quantifier cannot be {0,0}, so zero hops has its own query).
_NEAR = """
MATCH p = ANY SHORTEST (s:Entity)-[:RELATED_TO]-{0,%d}(n:Entity)
WHERE s.tenant = $tenant AND s.key IN $keys
WITH n, min(length(p)) AS d
"""
_SEEDS = """
MATCH (n:Entity) WHERE n.tenant = $tenant AND n.key IN $keys
WITH n, 0 AS d
"""
_NEAR_EPISODES = """
MATCH (e:Episode)-[:MENTIONS]->(n)
WITH e, min(d) AS d
RETURN e.uid AS uid, d ORDER BY d, e.created_at DESC, e.uid LIMIT $limit
"""


def _near(hops: int, tail: LiteralString) -> LiteralString:
    """The traversal to `hops` (a validated non-negative int), followed by `tail`."""
    return (_SEEDS if hops == 0 else with_bound(_NEAR, hops)) + tail


def entity_of(props: dict[str, Any]) -> Entity:
    """An entity node's properties as a record."""
    return from_props(Entity, props)


def _by_key(rows: list[dict[str, Any]]) -> list[Entity]:
    return [entity_of(n) for n in sorted((row["n"] for row in rows), key=lambda n: n["key"])]


class Neo4jEntities(Neo4jKind, EntityStore):
    """The entity part of `Neo4jGraphStore`."""

    async def _upsert(self, tenant: str, key: str, name: str, type: EntityType) -> Entity:
        props = to_props(Entity(tenant=tenant, name=name, type=type))
        rows = await self._write(_UPSERT_ENTITY, tenant=tenant, key=key, props=props)
        return entity_of(rows[0]["n"])

    async def _link_mentions(self, tenant: str, episode_uid: str, keys: list[str]) -> None:
        await self._write(_LINK_MENTIONS, tenant=tenant, uid=episode_uid, keys=keys)

    async def _relate(self, tenant: str, a: str, b: str, relation: str, replace: bool) -> None:
        await self._write(_RELATE, tenant=tenant, a=a, b=b, relation=relation, replace=replace)

    async def _named(self, tenant: str, keys: list[str]) -> list[Entity]:
        return _by_key(await self._read(_NAMED_ENTITIES, tenant=tenant, keys=keys))

    async def _episodes_near(
        self, tenant: str, keys: list[str], hops: int, limit: int
    ) -> list[EpisodeHit]:
        query = _near(hops, _NEAR_EPISODES)
        rows = await self._read(query, tenant=tenant, keys=keys, limit=limit)
        return [EpisodeHit(episode_uid=row["uid"], distance=row["d"]) for row in rows]

    async def of_episode(self, tenant: str, episode_uid: str) -> list[Entity]:
        """Entities the episode mentions, by key."""
        return _by_key(await self._read(_EPISODE_ENTITIES, tenant=tenant, uid=episode_uid))
