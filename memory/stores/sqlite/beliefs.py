"""Beliefs and their evidence edges on SQLite: their tables, index and SQL."""

from __future__ import annotations

import sqlite3

from memory.schema import Belief, Evidence
from memory.stores.errors import uid_taken
from memory.stores.graph.beliefs import BeliefStore
from memory.stores.sqlite.connection import Conn, episode_exists, immediate
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import columns, from_row, insert_sql, to_row

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS beliefs (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        topic TEXT NOT NULL,
        statement TEXT NOT NULL,
        valence REAL NOT NULL,
        confidence REAL NOT NULL,
        evidence_count INTEGER NOT NULL DEFAULT 0,
        contested INTEGER NOT NULL DEFAULT 0,
        updated_at TEXT NOT NULL,
        UNIQUE (tenant, topic)
    )""",
    """CREATE TABLE IF NOT EXISTS evidence (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        belief_uid TEXT NOT NULL REFERENCES beliefs(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        kind TEXT NOT NULL,
        strength REAL NOT NULL,
        reasoning TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (episode_uid, belief_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS evidence_belief ON evidence (belief_uid, strength)",
)

_KEEP_ON_REPLACE = ("uid", "tenant", "topic")
# Replacing a belief sets every field but its identity (uid, tenant, topic).
_UPSERT = (
    insert_sql("beliefs", Belief)
    + " ON CONFLICT (tenant, topic) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in columns(Belief) if c not in _KEEP_ON_REPLACE)
)
_ADD_EVIDENCE = insert_sql("evidence", Evidence, ("tenant",), verb="INSERT OR IGNORE")


def belief_of(row: sqlite3.Row) -> Belief:
    """A belief row as a record."""
    return from_row(Belief, row)


def _upsert(conn: Conn, b: Belief) -> Belief:
    """Insert a belief or replace the fields of the tenant's belief on its topic."""
    with immediate(conn):
        try:
            conn.execute(_UPSERT, to_row(b))
        except sqlite3.IntegrityError:
            raise uid_taken("belief", b.uid, "a belief on another topic") from None
        row = conn.execute(
            "SELECT * FROM beliefs WHERE tenant = ? AND topic = ?", (b.tenant, b.topic)
        ).fetchone()
    return belief_of(row)


def _add_evidence(conn: Conn, tenant: str, ev: Evidence) -> bool:
    """Write a provenance edge once and count it on the belief; True if written."""
    with immediate(conn):
        belief = conn.execute(
            "SELECT 1 FROM beliefs WHERE uid = ? AND tenant = ?", (ev.belief_uid, tenant)
        ).fetchone()
        if belief is None or not episode_exists(conn, tenant, ev.episode_uid):
            return False
        written = conn.execute(_ADD_EVIDENCE, to_row(ev, tenant=tenant)).rowcount
        if written:
            conn.execute(
                "UPDATE beliefs SET evidence_count = evidence_count + 1 WHERE uid = ?",
                (ev.belief_uid,),
            )
    return bool(written)


class SqliteBeliefs(SqliteKind, BeliefStore):
    """The belief part of `SqliteGraphStore`."""

    async def _upsert(self, belief: Belief) -> Belief:
        return await self._run(_upsert, belief)

    async def get(self, tenant: str, uid: str) -> Belief | None:
        """The belief with this uid, or None."""
        rows = await self._fetch(
            "SELECT * FROM beliefs WHERE uid = ? AND tenant = ?", (uid, tenant)
        )
        return belief_of(rows[0]) if rows else None

    async def _get_by_topic(self, tenant: str, topic: str) -> Belief | None:
        rows = await self._fetch(
            "SELECT * FROM beliefs WHERE tenant = ? AND topic = ?", (tenant, topic)
        )
        return belief_of(rows[0]) if rows else None

    async def _add_evidence(self, tenant: str, evidence: Evidence) -> bool:
        return await self._run(_add_evidence, tenant, evidence)

    async def _evidence(self, tenant: str, belief_uid: str, limit: int) -> list[Evidence]:
        rows = await self._fetch(
            "SELECT * FROM evidence WHERE belief_uid = ? AND tenant = ? "
            "ORDER BY strength DESC, episode_uid LIMIT ?",
            (belief_uid, tenant, limit),
        )
        return [from_row(Evidence, r) for r in rows]

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete a belief and its provenance edges. True if it existed."""
        deleted = await self._write(
            "DELETE FROM beliefs WHERE uid = ? AND tenant = ?", (uid, tenant)
        )
        return deleted > 0

    async def list(self, tenant: str) -> list[Belief]:
        """All beliefs of the tenant, by topic."""
        rows = await self._fetch("SELECT * FROM beliefs WHERE tenant = ? ORDER BY topic", (tenant,))
        return [belief_of(r) for r in rows]
