"""Topics and DISCUSSES edges on SQLite: their tables, index and SQL."""

from __future__ import annotations

from memory.stores.graph.topics import TopicStore
from memory.stores.sqlite.connection import Conn, episode_exists, immediate
from memory.stores.sqlite.kind import SqliteKind

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS topics (
        tenant TEXT NOT NULL, slug TEXT NOT NULL, PRIMARY KEY (tenant, slug)
    )""",
    """CREATE TABLE IF NOT EXISTS discusses (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        slug TEXT NOT NULL,
        PRIMARY KEY (episode_uid, slug),
        FOREIGN KEY (tenant, slug) REFERENCES topics(tenant, slug) ON DELETE CASCADE
    )""",
    "CREATE INDEX IF NOT EXISTS discusses_topic ON discusses (tenant, slug)",
)


def _link(conn: Conn, tenant: str, uid: str, slugs: list[str]) -> None:
    """MERGE topics and DISCUSSES edges from an existing episode."""
    with immediate(conn):
        if not episode_exists(conn, tenant, uid):
            return
        for slug in slugs:
            conn.execute(
                "INSERT OR IGNORE INTO topics (tenant, slug) VALUES (?, ?)", (tenant, slug)
            )
            conn.execute(
                "INSERT OR IGNORE INTO discusses (episode_uid, tenant, slug) VALUES (?, ?, ?)",
                (uid, tenant, slug),
            )


class SqliteTopics(SqliteKind, TopicStore):
    """The topic part of `SqliteGraphStore`."""

    async def _link(self, tenant: str, episode_uid: str, slugs: list[str]) -> None:
        await self._run(_link, tenant, episode_uid, slugs)

    async def of_episode(self, tenant: str, episode_uid: str) -> list[str]:
        """Topic slugs the episode discusses, sorted."""
        rows = await self._fetch(
            "SELECT slug FROM discusses WHERE episode_uid = ? AND tenant = ? ORDER BY slug",
            (episode_uid, tenant),
        )
        return [r[0] for r in rows]

    async def count(self, tenant: str) -> int:
        """How many topics at least one of the tenant's episodes discusses."""
        rows = await self._fetch(
            "SELECT COUNT(DISTINCT slug) FROM discusses WHERE tenant = ?", (tenant,)
        )
        return int(rows[0][0])
