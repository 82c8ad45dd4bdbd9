"""Entities, MENTIONS and RELATED_TO edges on SQLite: their tables, indexes and SQL.

The k-hop traversal is a recursive CTE: under 15 ms to 3 hops on 5,000 entities
(docs/experiments/storage-backends.md).
"""

from __future__ import annotations

import sqlite3

from memory.schema import Entity, EntityType, EpisodeHit
from memory.stores.graph.entities import EntityStore
from memory.stores.sqlite.connection import Conn, episode_exists, immediate
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import from_row, insert_sql, json_list, to_row

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS entities (
        tenant TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,
        PRIMARY KEY (tenant, key)
    )""",
    """CREATE TABLE IF NOT EXISTS mentions (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        entity_key TEXT NOT NULL,
        PRIMARY KEY (episode_uid, entity_key),
        FOREIGN KEY (tenant, entity_key) REFERENCES entities(tenant, key) ON DELETE CASCADE
    )""",
    "CREATE INDEX IF NOT EXISTS mentions_entity ON mentions (tenant, entity_key)",
    """CREATE TABLE IF NOT EXISTS related_to (
        tenant TEXT NOT NULL, src_key TEXT NOT NULL, dst_key TEXT NOT NULL, relation TEXT NOT NULL,
        PRIMARY KEY (tenant, src_key, dst_key),
        FOREIGN KEY (tenant, src_key) REFERENCES entities(tenant, key) ON DELETE CASCADE,
        FOREIGN KEY (tenant, dst_key) REFERENCES entities(tenant, key) ON DELETE CASCADE
    )""",
    "CREATE INDEX IF NOT EXISTS related_dst_src ON related_to (tenant, dst_key, src_key)",
)

_Q_ENTITY = "SELECT * FROM entities WHERE tenant = ? AND key = ?"
# The first spelling of the name stays the display name; the latest type wins.
_UPSERT = (
    insert_sql("entities", Entity, ("key",))
    + " ON CONFLICT (tenant, key) DO UPDATE SET type = excluded.type"
)

# Entities within :hops RELATED_TO hops of the seeds, either direction (one recursive step per
# direction, so each uses an index); UNION (not UNION ALL) drops repeated (key, d) pairs, so
# cycles cannot make the walk grow past nodes x hops.
_WALK = """
WITH RECURSIVE walk(key, d) AS (
    SELECT key, 0 FROM entities
    WHERE tenant = :tenant AND key IN (SELECT value FROM json_each(:seeds))
    UNION
    SELECT r.dst_key, w.d + 1 FROM walk w
    JOIN related_to r ON r.tenant = :tenant AND r.src_key = w.key WHERE w.d < :hops
    UNION
    SELECT r.src_key, w.d + 1 FROM walk w
    JOIN related_to r ON r.tenant = :tenant AND r.dst_key = w.key WHERE w.d < :hops
),
near(key, d) AS (SELECT key, MIN(d) FROM walk GROUP BY key)
"""
_NEAR_EPISODES = (
    _WALK  # noqa: S608 - constant SQL fragments only; every value is a bound parameter
    + """SELECT ep.uid, MIN(n.d) AS d, ep.created_at
    FROM near n
    CROSS JOIN mentions m ON m.tenant = :tenant AND m.entity_key = n.key
    JOIN episodes ep ON ep.uid = m.episode_uid AND ep.tenant = :tenant
    GROUP BY ep.uid
    ORDER BY d, ep.created_at DESC, ep.uid
    LIMIT :limit"""
)

_RELATE = (
    "INSERT INTO related_to (tenant, src_key, dst_key, relation) "
    "SELECT :tenant, x.key, y.key, :relation FROM entities x JOIN entities y "
    "ON y.tenant = :tenant AND y.key = :b WHERE x.tenant = :tenant AND x.key = :a "
    "ON CONFLICT (tenant, src_key, dst_key) DO "
)
_RELATE_REPLACE = _RELATE + "UPDATE SET relation = excluded.relation"
_RELATE_KEEP = _RELATE + "NOTHING"


def entity_of(row: sqlite3.Row) -> Entity:
    """An entity row as a record."""
    return from_row(Entity, row)


def _upsert(conn: Conn, tenant: str, key: str, name: str, type: EntityType) -> Entity:
    """Create or update an entity by key and return it."""
    entity = Entity(tenant=tenant, name=name, type=type)
    with immediate(conn):
        conn.execute(_UPSERT, to_row(entity, key=key))
        row = conn.execute(_Q_ENTITY, (tenant, key)).fetchone()
    return entity_of(row)


def _link(conn: Conn, tenant: str, uid: str, keys: str) -> None:
    """MENTIONS edges from an existing episode to the existing entities among `keys`."""
    with immediate(conn):
        if not episode_exists(conn, tenant, uid):
            return
        conn.execute(
            "INSERT OR IGNORE INTO mentions (episode_uid, tenant, entity_key) "
            "SELECT :uid, :tenant, key FROM entities "
            "WHERE tenant = :tenant AND key IN (SELECT value FROM json_each(:keys))",
            {"uid": uid, "tenant": tenant, "keys": keys},
        )


class SqliteEntities(SqliteKind, EntityStore):
    """The entity part of `SqliteGraphStore`."""

    async def _upsert(self, tenant: str, key: str, name: str, type: EntityType) -> Entity:
        return await self._run(_upsert, tenant, key, name, type)

    async def _link_mentions(self, tenant: str, episode_uid: str, keys: list[str]) -> None:
        await self._run(_link, tenant, episode_uid, json_list(keys))

    async def _relate(self, tenant: str, a: str, b: str, relation: str, replace: bool) -> None:
        await self._write(
            _RELATE_REPLACE if replace else _RELATE_KEEP,
            {"tenant": tenant, "a": a, "b": b, "relation": relation},
        )

    async def _named(self, tenant: str, keys: list[str]) -> list[Entity]:
        rows = await self._fetch(
            "SELECT * FROM entities WHERE tenant = ? AND key IN (SELECT value FROM json_each(?)) "
            "ORDER BY key",
            (tenant, json_list(keys)),
        )
        return [entity_of(r) for r in rows]

    async def _episodes_near(
        self, tenant: str, keys: list[str], hops: int, limit: int
    ) -> list[EpisodeHit]:
        params = {"tenant": tenant, "seeds": json_list(keys), "hops": hops, "limit": limit}
        rows = await self._fetch(_NEAR_EPISODES, params)
        return [EpisodeHit(episode_uid=r["uid"], distance=r["d"]) for r in rows]

    async def of_episode(self, tenant: str, episode_uid: str) -> list[Entity]:
        """Entities the episode mentions, by key."""
        rows = await self._fetch(
            "SELECT e.* FROM mentions m JOIN entities e ON e.tenant = m.tenant AND e.key = "
            "m.entity_key WHERE m.episode_uid = ? AND m.tenant = ? ORDER BY e.key",
            (episode_uid, tenant),
        )
        return [entity_of(r) for r in rows]
