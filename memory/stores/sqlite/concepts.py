"""Concepts, diary entries and their INCLUDES / RECOUNTS edges on SQLite: tables and SQL."""

from __future__ import annotations

import sqlite3

from memory.schema import Concept, DiaryEntry, Record
from memory.stores.errors import uid_taken
from memory.stores.graph.concepts import ConceptStore, DiaryStore, Members
from memory.stores.sqlite.connection import Conn, add_columns, immediate
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import columns, from_row, insert_sql, json_list, to_row

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS concepts (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        label TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        terms TEXT NOT NULL DEFAULT '[]',
        episode_count INTEGER NOT NULL DEFAULT 0,
        day_count INTEGER NOT NULL DEFAULT 0,
        first_seen TEXT NOT NULL,
        last_seen TEXT NOT NULL,
        loop TEXT NOT NULL DEFAULT '',
        loop_count INTEGER NOT NULL DEFAULT 0,
        loop_emotion TEXT NOT NULL DEFAULT '',
        updated_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS concepts_tenant ON concepts (tenant, first_seen)",
    """CREATE TABLE IF NOT EXISTS includes_episode (
        concept_uid TEXT NOT NULL REFERENCES concepts(uid) ON DELETE CASCADE,
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        PRIMARY KEY (concept_uid, episode_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS includes_episode_ep ON includes_episode (episode_uid)",
    """CREATE TABLE IF NOT EXISTS includes_fact (
        concept_uid TEXT NOT NULL REFERENCES concepts(uid) ON DELETE CASCADE,
        fact_uid TEXT NOT NULL REFERENCES facts(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        PRIMARY KEY (concept_uid, fact_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS includes_fact_fact ON includes_fact (fact_uid)",
    """CREATE TABLE IF NOT EXISTS diary (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        day TEXT NOT NULL,
        text TEXT NOT NULL,
        episode_count INTEGER NOT NULL DEFAULT 0,
        concepts TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS diary_tenant ON diary (tenant, day)",
    """CREATE TABLE IF NOT EXISTS recounts (
        diary_uid TEXT NOT NULL REFERENCES diary(uid) ON DELETE CASCADE,
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        PRIMARY KEY (diary_uid, episode_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS recounts_ep ON recounts (episode_uid)",
)


def migrate_v3(conn: Conn) -> None:
    """Schema 3 -> 4: concepts gain `loop_emotion` ('' for every existing one)."""
    add_columns(conn, [("concepts", "loop_emotion TEXT NOT NULL DEFAULT ''")])


def _upsert_sql(table: str, model: type[Record]) -> str:
    # Replacing sets every field but the identity (uid, tenant); another tenant's uid is kept.
    return (
        insert_sql(table, model)
        + " ON CONFLICT (uid) DO UPDATE SET "
        + ", ".join(f"{c} = excluded.{c}" for c in columns(model) if c not in ("uid", "tenant"))
        + f" WHERE {table}.tenant = excluded.tenant"
    )


_UPSERT_CONCEPT = _upsert_sql("concepts", Concept)
_UPSERT_DIARY = _upsert_sql("diary", DiaryEntry)
_Q_CONCEPT = "SELECT * FROM concepts WHERE uid = ? AND tenant = ?"
_Q_DIARY = "SELECT * FROM diary WHERE uid = ? AND tenant = ?"
# Edges only to the tenant's own records that exist.
_LINK = {
    "includes_episode": (
        "INSERT OR IGNORE INTO includes_episode (concept_uid, episode_uid, tenant) "
        "SELECT ?, uid, tenant FROM episodes "
        "WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))"
    ),
    "includes_fact": (
        "INSERT OR IGNORE INTO includes_fact (concept_uid, fact_uid, tenant) "
        "SELECT ?, uid, tenant FROM facts "
        "WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))"
    ),
    "recounts": (
        "INSERT OR IGNORE INTO recounts (diary_uid, episode_uid, tenant) "
        "SELECT ?, uid, tenant FROM episodes "
        "WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))"
    ),
}
_UNLINK = {
    "includes_episode": "DELETE FROM includes_episode WHERE concept_uid = ?",
    "includes_fact": "DELETE FROM includes_fact WHERE concept_uid = ?",
    "recounts": "DELETE FROM recounts WHERE diary_uid = ?",
}


def _put(
    conn: Conn,
    upsert: str,
    query: str,
    record: Concept | DiaryEntry,
    edges: dict[str, list[str]],
) -> sqlite3.Row:
    with immediate(conn):
        conn.execute(upsert, to_row(record))
        row: sqlite3.Row | None = conn.execute(query, (record.uid, record.tenant)).fetchone()
        if row is None:
            raise uid_taken(type(record).__name__.lower(), record.uid)
        for table, uids in edges.items():
            conn.execute(_UNLINK[table], (record.uid,))
            conn.execute(_LINK[table], (record.uid, record.tenant, json_list(uids)))
    return row


class SqliteConcepts(SqliteKind, ConceptStore):
    """The concepts of `SqliteGraphStore`."""

    async def _put(
        self, concept: Concept, episode_uids: list[str], fact_uids: list[str]
    ) -> Concept:
        edges = {"includes_episode": episode_uids, "includes_fact": fact_uids}
        row = await self._run(_put, _UPSERT_CONCEPT, _Q_CONCEPT, concept, edges)
        return from_row(Concept, row)

    async def get(self, tenant: str, uid: str) -> Concept | None:
        """The concept with this uid, or None."""
        rows = await self._fetch(_Q_CONCEPT, (uid, tenant))
        return from_row(Concept, rows[0]) if rows else None

    async def members(self, tenant: str, uid: str) -> Members:
        """The episodes and facts the concept includes (empty for an unknown concept)."""
        episodes = await self._fetch(
            "SELECT episode_uid FROM includes_episode WHERE concept_uid = ? AND tenant = ? "
            "ORDER BY episode_uid",
            (uid, tenant),
        )
        facts = await self._fetch(
            "SELECT fact_uid FROM includes_fact WHERE concept_uid = ? AND tenant = ? "
            "ORDER BY fact_uid",
            (uid, tenant),
        )
        return Members(episodes=[r[0] for r in episodes], facts=[r[0] for r in facts])

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the concept and its edges (never its members); False if it did not exist."""
        gone = await self._write("DELETE FROM concepts WHERE uid = ? AND tenant = ?", (uid, tenant))
        return gone > 0

    async def list(self, tenant: str) -> list[Concept]:
        """The tenant's concepts, by (first_seen, uid)."""
        rows = await self._fetch(
            "SELECT * FROM concepts WHERE tenant = ? ORDER BY first_seen, uid", (tenant,)
        )
        return [from_row(Concept, r) for r in rows]


class SqliteDiary(SqliteKind, DiaryStore):
    """The diary entries of `SqliteGraphStore`."""

    async def _put(self, entry: DiaryEntry, episode_uids: list[str]) -> DiaryEntry:
        row = await self._run(_put, _UPSERT_DIARY, _Q_DIARY, entry, {"recounts": episode_uids})
        return from_row(DiaryEntry, row)

    async def sources(self, tenant: str, uid: str) -> list[str]:
        """Uids of the episodes the entry recounts, sorted."""
        rows = await self._fetch(
            "SELECT episode_uid FROM recounts WHERE diary_uid = ? AND tenant = ? "
            "ORDER BY episode_uid",
            (uid, tenant),
        )
        return [r[0] for r in rows]

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the entry and its edges; False if it did not exist."""
        return (
            await self._write("DELETE FROM diary WHERE uid = ? AND tenant = ?", (uid, tenant)) > 0
        )

    async def list(
        self, tenant: str, *, first: str | None = None, last: str | None = None
    ) -> list[DiaryEntry]:
        """The tenant's diary entries, by (day, uid); with `first` / `last` (ISO days, both
        included) only the days from / up to them."""
        sql, args = "SELECT * FROM diary WHERE tenant = ?", [tenant]
        for bound, op in ((first, ">="), (last, "<=")):  # a range seek on (tenant, day)
            if bound is not None:
                sql += f" AND day {op} ?"
                args.append(bound)
        rows = await self._fetch(sql + " ORDER BY day, uid", tuple(args))
        return [from_row(DiaryEntry, r) for r in rows]
