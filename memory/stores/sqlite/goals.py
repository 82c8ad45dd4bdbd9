"""Goals (TRACKS a fact) and emotions (FELT_IN an episode) on SQLite: tables and SQL."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memory.schema import Emotion, Goal, GoalStatus
from memory.stores.errors import uid_taken
from memory.stores.graph.goals import EmotionStore, GoalStore
from memory.stores.sqlite.connection import Conn, episode_exists, immediate
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import columns, from_row, insert_sql, to_row, ts

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS goals (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        fact_uid TEXT NOT NULL REFERENCES facts(uid) ON DELETE CASCADE,
        text TEXT NOT NULL,
        subject TEXT NOT NULL DEFAULT 'user',
        status TEXT NOT NULL DEFAULT 'active',
        reason TEXT NOT NULL DEFAULT '',
        evidence_uid TEXT,
        stated_at TEXT NOT NULL,
        changed_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS goals_tenant ON goals (tenant, stated_at)",
    "CREATE INDEX IF NOT EXISTS goals_fact ON goals (fact_uid)",
    "CREATE INDEX IF NOT EXISTS goals_evidence ON goals (tenant, evidence_uid)",
    """CREATE TABLE IF NOT EXISTS emotions (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        person TEXT NOT NULL DEFAULT 'user',
        name TEXT NOT NULL,
        intensity REAL NOT NULL,
        felt_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS emotions_tenant ON emotions (tenant, felt_at)",
    "CREATE INDEX IF NOT EXISTS emotions_episode ON emotions (episode_uid)",
)

# Replacing sets every field but the identity; another tenant's uid is kept (no row changes).
_UPSERT_GOAL = (
    insert_sql("goals", Goal)
    + " ON CONFLICT (uid) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in columns(Goal) if c not in ("uid", "tenant"))
    + " WHERE goals.tenant = excluded.tenant"
)
_HAS_FACT = "SELECT 1 FROM facts WHERE uid = ? AND tenant = ?"
_Q_GOAL = "SELECT * FROM goals WHERE uid = ? AND tenant = ?"
_INSERT_EMOTION = insert_sql("emotions", Emotion)


def _put_goal(conn: Conn, goal: Goal) -> sqlite3.Row | None:
    with immediate(conn):
        if conn.execute(_HAS_FACT, (goal.fact_uid, goal.tenant)).fetchone() is None:
            return None  # checked first: a goal is written only with its fact
        conn.execute(_UPSERT_GOAL, to_row(goal))
        row: sqlite3.Row | None = conn.execute(_Q_GOAL, (goal.uid, goal.tenant)).fetchone()
        if row is None:
            raise uid_taken("goal", goal.uid)
    return row


def _put_emotions(conn: Conn, tenant: str, episode_uid: str, emotions: list[Emotion]) -> None:
    with immediate(conn):
        if not episode_exists(conn, tenant, episode_uid):
            return
        conn.execute(
            "DELETE FROM emotions WHERE episode_uid = ? AND +tenant = ?", (episode_uid, tenant)
        )
        for emotion in emotions:
            conn.execute(_INSERT_EMOTION, to_row(emotion))


class SqliteGoals(SqliteKind, GoalStore):
    """The goals of `SqliteGraphStore`."""

    async def _put(self, goal: Goal) -> Goal | None:
        row = await self._run(_put_goal, goal)
        return None if row is None else from_row(Goal, row)

    async def get(self, tenant: str, uid: str) -> Goal | None:
        """The goal with this uid, or None."""
        rows = await self._fetch(_Q_GOAL, (uid, tenant))
        return from_row(Goal, rows[0]) if rows else None

    async def reset_evidence(self, tenant: str, episode_uid: str, reason: str, at: datetime) -> int:
        """Goals whose status rests on this episode become active again (that reason, no
        evidence, changed at `at`); how many did."""
        return await self._write(
            "UPDATE goals SET status = 'active', reason = ?, evidence_uid = NULL, changed_at = ? "
            "WHERE tenant = ? AND evidence_uid = ?",
            (reason, ts(at), tenant, episode_uid),
        )

    async def _list(self, tenant: str, status: GoalStatus | None) -> list[Goal]:
        wanted = None if status is None else status.value
        rows = await self._fetch(
            "SELECT * FROM goals WHERE tenant = ? AND (? IS NULL OR status = ?) "
            "ORDER BY stated_at, uid",
            (tenant, wanted, wanted),
        )
        return [from_row(Goal, r) for r in rows]


class SqliteEmotions(SqliteKind, EmotionStore):
    """The emotions of `SqliteGraphStore`."""

    async def _put(self, tenant: str, episode_uid: str, emotions: list[Emotion]) -> list[Emotion]:
        await self._run(_put_emotions, tenant, episode_uid, emotions)
        return await self.list(tenant, episode_uid)

    async def list(self, tenant: str, episode_uid: str | None = None) -> list[Emotion]:
        """The tenant's emotions (of one episode, or all), by (felt_at, episode_uid, name)."""
        if episode_uid is None:
            rows = await self._fetch(
                "SELECT * FROM emotions WHERE tenant = ? ORDER BY felt_at, episode_uid, name",
                (tenant,),
            )
        else:  # by the episode's index, not the tenant's
            rows = await self._fetch(
                "SELECT * FROM emotions WHERE episode_uid = ? AND +tenant = ? ORDER BY name",
                (episode_uid, tenant),
            )
        return [from_row(Emotion, r) for r in rows]
