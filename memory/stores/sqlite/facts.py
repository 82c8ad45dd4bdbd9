"""Facts and STATES edges on SQLite: their tables, indexes and SQL."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memory.schema import Fact
from memory.stores.errors import uid_taken
from memory.stores.graph.facts import FactStore
from memory.stores.sqlite.connection import Conn, SqliteConnection, episode_exists, immediate
from memory.stores.sqlite.rows import from_row, insert_sql, to_row, ts

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS facts (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        text TEXT NOT NULL,
        confidence REAL NOT NULL,
        valid_from TEXT NOT NULL,
        valid_to TEXT,
        superseded_by TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS facts_tenant ON facts (tenant, valid_from)",
    """CREATE TABLE IF NOT EXISTS states (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        fact_uid TEXT NOT NULL REFERENCES facts(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        PRIMARY KEY (episode_uid, fact_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS states_fact ON states (fact_uid)",
)

_Q_FACT = "SELECT * FROM facts WHERE uid = ? AND tenant = ?"
_INSERT = insert_sql("facts", Fact, verb="INSERT OR IGNORE")


def fact_of(row: sqlite3.Row) -> Fact:
    """A fact row as a record."""
    return from_row(Fact, row)


def _insert(conn: Conn, fact: Fact) -> Fact:
    """Insert unless the uid exists (idempotent); the stored fact. Runs inside a transaction."""
    conn.execute(_INSERT, to_row(fact))
    row = conn.execute(_Q_FACT, (fact.uid, fact.tenant)).fetchone()
    if row is None:
        raise uid_taken("fact", fact.uid)
    return fact_of(row)


def _cite(conn: Conn, tenant: str, fact_uid: str, episode_uid: str) -> None:
    """A STATES edge if the episode is the tenant's (inside a transaction)."""
    if episode_exists(conn, tenant, episode_uid):
        conn.execute(
            "INSERT OR IGNORE INTO states (episode_uid, fact_uid, tenant) VALUES (?, ?, ?)",
            (episode_uid, fact_uid, tenant),
        )


def _add(conn: Conn, fact: Fact, episode_uid: str | None) -> Fact:
    """Store a fact (idempotent on uid) and, given an episode, its STATES edge."""
    with immediate(conn):
        stored = _insert(conn, fact)
        if episode_uid is not None:
            _cite(conn, fact.tenant, fact.uid, episode_uid)
    return stored


def _cite_existing(conn: Conn, tenant: str, fact_uid: str, episode_uid: str) -> None:
    """A STATES edge from an existing episode to an existing fact; idempotent."""
    with immediate(conn):
        if conn.execute(_Q_FACT, (fact_uid, tenant)).fetchone() is not None:
            _cite(conn, tenant, fact_uid, episode_uid)


def _supersede(conn: Conn, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact | None:
    """Store `new` and close `old_uid` with it; None (nothing written) if old is not the tenant's."""
    with immediate(conn):
        if conn.execute(_Q_FACT, (old_uid, tenant)).fetchone() is None:
            return None
        stored = _insert(conn, new)
        conn.execute(
            "UPDATE facts SET valid_to = ?, superseded_by = ? WHERE uid = ?",
            (ts(at), new.uid, old_uid),
        )
    return stored


class SqliteFacts(SqliteConnection, FactStore):
    """The fact part of `SqliteGraphStore`."""

    async def _add_fact(self, fact: Fact, episode_uid: str | None) -> Fact:
        return await self._run(_add, fact, episode_uid)

    async def cite_fact(self, tenant: str, fact_uid: str, episode_uid: str) -> None:
        """Add a STATES edge from another episode to an existing fact; idempotent."""
        await self._run(_cite_existing, tenant, fact_uid, episode_uid)

    async def _supersede_fact(
        self, tenant: str, old_uid: str, new: Fact, at: datetime
    ) -> Fact | None:
        return await self._run(_supersede, tenant, old_uid, new, at)

    async def get_fact(self, tenant: str, uid: str) -> Fact | None:
        """The fact with this uid, or None."""
        rows = await self._fetch(_Q_FACT, (uid, tenant))
        return fact_of(rows[0]) if rows else None

    async def list_facts(self, tenant: str, *, include_superseded: bool = False) -> list[Fact]:
        """Facts of the tenant, by (valid_from, uid); current ones only unless asked."""
        rows = await self._fetch(
            "SELECT * FROM facts WHERE tenant = ? AND (? OR superseded_by IS NULL) "
            "ORDER BY valid_from, uid",
            (tenant, int(include_superseded)),
        )
        return [fact_of(r) for r in rows]

    async def fact_sources(self, tenant: str, fact_uid: str) -> list[str]:
        """Uids of episodes that state the fact, sorted."""
        rows = await self._fetch(
            "SELECT episode_uid FROM states WHERE fact_uid = ? AND tenant = ? ORDER BY episode_uid",
            (fact_uid, tenant),
        )
        return [r[0] for r in rows]
