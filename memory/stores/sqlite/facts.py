"""Facts with STATES, ABOUT and LED_TO edges on SQLite: their tables, indexes, migration and SQL."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memory.schema import TIMELESS_ATTRIBUTES, Cause, Fact
from memory.stores.errors import uid_taken
from memory.stores.graph.facts import FactFilter, FactStore
from memory.stores.sqlite.connection import (
    Conn,
    add_columns,
    episode_exists,
    immediate,
)
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import from_row, insert_sql, json_list, to_row, ts

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS facts (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        text TEXT NOT NULL,
        confidence REAL NOT NULL,
        valid_from TEXT NOT NULL,
        valid_to TEXT,
        superseded_by TEXT,
        kind TEXT NOT NULL DEFAULT 'attribute',
        subject TEXT NOT NULL DEFAULT 'user',
        attribute TEXT NOT NULL DEFAULT '',
        value TEXT NOT NULL DEFAULT '',
        learned_at TEXT,
        grounding REAL NOT NULL DEFAULT 1.0,
        concepts TEXT NOT NULL DEFAULT '[]',
        precision TEXT NOT NULL DEFAULT 'relative'
    )""",
    "CREATE INDEX IF NOT EXISTS facts_tenant ON facts (tenant, valid_from)",
    "CREATE INDEX IF NOT EXISTS facts_subject ON facts (tenant, subject, attribute)",
    "CREATE INDEX IF NOT EXISTS facts_kind ON facts (tenant, kind)",
    """CREATE TABLE IF NOT EXISTS states (
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        fact_uid TEXT NOT NULL REFERENCES facts(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        PRIMARY KEY (episode_uid, fact_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS states_fact ON states (fact_uid)",
    """CREATE TABLE IF NOT EXISTS about (
        fact_uid TEXT NOT NULL REFERENCES facts(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        entity_key TEXT NOT NULL,
        PRIMARY KEY (fact_uid, entity_key),
        FOREIGN KEY (tenant, entity_key) REFERENCES entities(tenant, key) ON DELETE CASCADE
    )""",
    "CREATE INDEX IF NOT EXISTS about_entity ON about (tenant, entity_key)",
    """CREATE TABLE IF NOT EXISTS led_to (
        cause_uid TEXT NOT NULL,
        cause_kind TEXT NOT NULL,
        fact_uid TEXT NOT NULL REFERENCES facts(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        PRIMARY KEY (fact_uid, cause_uid)
    )""",
)

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("facts", "kind TEXT NOT NULL DEFAULT 'attribute'"),
    ("facts", "subject TEXT NOT NULL DEFAULT 'user'"),
    ("facts", "attribute TEXT NOT NULL DEFAULT ''"),
    ("facts", "value TEXT NOT NULL DEFAULT ''"),
    ("facts", "learned_at TEXT"),
    ("facts", "grounding REAL NOT NULL DEFAULT 1.0"),
    ("facts", "concepts TEXT NOT NULL DEFAULT '[]'"),
)
"""Columns added since schema version 1 (table, column definition), added to an older file."""


def migrate_v1(conn: Conn) -> None:
    """Schema 1 -> 2 for facts: the typed, bi-temporal columns (inside the setup transaction)."""
    add_columns(conn, MIGRATIONS)


_KEY = (
    "lower(replace(replace(trim(CASE WHEN instr(attribute, ':') > 0 THEN "
    "substr(attribute, 1, instr(attribute, ':') - 1) ELSE attribute END), ' ', '_'), '-', '_'))"
)
"""`memory.schema.attribute_key` in SQL (a run of spaces becomes one `_` there, one per space
here: the attribute keys written so far have single spaces)."""


def migrate_v5(conn: Conn) -> None:
    """Schema 5 -> 6 for facts: `precision`, `unbounded` for the facts whose kind and attribute
    are timeless by nature (`TIMELESS_ATTRIBUTES`), `relative` for the others."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'facts'").fetchone():
        return  # no facts table yet: the DDL creates it with the column
    add_columns(conn, [("facts", "precision TEXT NOT NULL DEFAULT 'relative'")])
    for kind, keys in TIMELESS_ATTRIBUTES.items():
        conn.execute(
            f"UPDATE facts SET precision = 'unbounded' WHERE kind = ? "  # noqa: S608
            f"AND {_KEY} IN (SELECT value FROM json_each(?))",
            (kind.value, json_list(sorted(keys))),
        )


_Q_FACT = "SELECT * FROM facts WHERE uid = ? AND tenant = ?"
_INSERT = insert_sql("facts", Fact, verb="INSERT OR IGNORE")
_LIST = """SELECT * FROM facts WHERE tenant = :tenant AND (:all OR superseded_by IS NULL)
    AND (:kinds IS NULL OR kind IN (SELECT value FROM json_each(:kinds)))
    AND (:subject IS NULL OR subject = :subject)
    AND (:attribute IS NULL OR attribute = :attribute)
    ORDER BY valid_from, uid"""

_STATED_BY = (
    "SELECT fact_uid AS uid FROM states WHERE tenant = ? AND episode_uid = ? ORDER BY fact_uid"
)


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


def _delete(conn: Conn, tenant: str, uid: str) -> bool:
    """Delete a fact and its edges; the facts it superseded are current again."""
    with immediate(conn):
        if conn.execute(_Q_FACT, (uid, tenant)).fetchone() is None:
            return False
        conn.execute(
            "UPDATE facts SET superseded_by = NULL, valid_to = NULL "
            "WHERE tenant = ? AND superseded_by = ?",
            (tenant, uid),
        )
        conn.execute("DELETE FROM led_to WHERE tenant = ? AND cause_uid = ?", (tenant, uid))
        # ON DELETE CASCADE removes its STATES, ABOUT and incoming LED_TO rows.
        conn.execute("DELETE FROM facts WHERE uid = ? AND tenant = ?", (uid, tenant))
    return True


def _link_subject(conn: Conn, tenant: str, fact_uid: str, key: str) -> bool:
    with immediate(conn):
        fact = conn.execute(_Q_FACT, (fact_uid, tenant)).fetchone()
        entity = conn.execute(
            "SELECT 1 FROM entities WHERE tenant = ? AND key = ?", (tenant, key)
        ).fetchone()
        if fact is None or entity is None:
            return False
        conn.execute(
            "INSERT OR IGNORE INTO about (fact_uid, tenant, entity_key) VALUES (?, ?, ?)",
            (fact_uid, tenant, key),
        )
    return True


def _link_cause(conn: Conn, tenant: str, fact_uid: str, cause_uid: str) -> bool:
    with immediate(conn):
        if conn.execute(_Q_FACT, (fact_uid, tenant)).fetchone() is None:
            return False
        if conn.execute(_Q_FACT, (cause_uid, tenant)).fetchone() is not None:
            kind = "fact"
        elif episode_exists(conn, tenant, cause_uid):
            kind = "episode"
        else:
            return False
        conn.execute(
            "INSERT OR IGNORE INTO led_to (cause_uid, cause_kind, fact_uid, tenant) "
            "VALUES (?, ?, ?, ?)",
            (cause_uid, kind, fact_uid, tenant),
        )
    return True


class SqliteFacts(SqliteKind, FactStore):
    """The fact part of `SqliteGraphStore`."""

    async def _add(self, fact: Fact, episode_uid: str | None) -> Fact:
        return await self._run(_add, fact, episode_uid)

    async def cite(self, tenant: str, fact_uid: str, episode_uid: str) -> None:
        """Add a STATES edge from another episode to an existing fact; idempotent."""
        await self._run(_cite_existing, tenant, fact_uid, episode_uid)

    async def _supersede(self, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact | None:
        return await self._run(_supersede, tenant, old_uid, new, at)

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the fact and its edges, re-opening what it superseded; True if it existed."""
        return await self._run(_delete, tenant, uid)

    async def get(self, tenant: str, uid: str) -> Fact | None:
        """The fact with this uid, or None."""
        rows = await self._fetch(_Q_FACT, (uid, tenant))
        return fact_of(rows[0]) if rows else None

    async def _get_many(self, tenant: str, uids: list[str]) -> list[Fact]:
        rows = await self._fetch(
            "SELECT * FROM facts WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))",
            (tenant, json_list(uids)),
        )
        return [fact_of(r) for r in rows]

    async def sources(self, tenant: str, fact_uid: str) -> list[str]:
        """Uids of episodes that state the fact, sorted."""
        rows = await self._fetch(
            "SELECT episode_uid FROM states WHERE fact_uid = ? AND tenant = ? ORDER BY episode_uid",
            (fact_uid, tenant),
        )
        return [r[0] for r in rows]

    async def _sources_many(self, tenant: str, uids: list[str]) -> dict[str, list[str]]:
        rows = await self._fetch(
            "SELECT fact_uid, episode_uid FROM states WHERE tenant = ? "
            "AND fact_uid IN (SELECT value FROM json_each(?))",
            (tenant, json_list(uids)),
        )
        out: dict[str, list[str]] = {}
        for fact_uid, episode_uid in rows:
            out.setdefault(fact_uid, []).append(episode_uid)
        return out

    async def _link_subject(self, tenant: str, fact_uid: str, key: str) -> bool:
        return await self._run(_link_subject, tenant, fact_uid, key)

    async def _link_cause(self, tenant: str, fact_uid: str, cause_uid: str) -> bool:
        return await self._run(_link_cause, tenant, fact_uid, cause_uid)

    async def causes(self, tenant: str, fact_uid: str) -> list[Cause]:
        """What led to the fact (LED_TO edges into it), by (kind, uid)."""
        # An episode cause may have been deleted since (facts are never deleted alone).
        rows = await self._fetch(
            "SELECT cause_kind, cause_uid FROM led_to l WHERE tenant = ? AND fact_uid = ? "
            "AND (cause_kind = 'fact' OR EXISTS "
            "(SELECT 1 FROM episodes e WHERE e.uid = l.cause_uid AND e.tenant = l.tenant)) "
            "ORDER BY cause_kind, cause_uid",
            (tenant, fact_uid),
        )
        return [Cause(kind=r[0], uid=r[1]) for r in rows]

    async def stated_by(self, tenant: str, episode_uid: str) -> list[str]:
        """Uids of the facts this episode states (STATES), sorted."""
        rows = await self._fetch(_STATED_BY, (tenant, episode_uid))
        return [str(r["uid"]) for r in rows]

    async def _list(self, tenant: str, include_superseded: bool, flt: FactFilter) -> list[Fact]:
        params = {
            "tenant": tenant,
            "all": int(include_superseded),
            "kinds": None if flt.kinds is None else json_list([k.value for k in flt.kinds]),
            "subject": flt.subject,
            "attribute": flt.attribute,
        }
        return [fact_of(r) for r in await self._fetch(_LIST, params)]
