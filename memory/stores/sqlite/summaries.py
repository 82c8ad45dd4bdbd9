"""Session summaries and SUMMARISES edges on SQLite: their tables, index and SQL."""

from __future__ import annotations

import sqlite3

from memory.schema import SessionSummary
from memory.stores.errors import uid_taken
from memory.stores.graph.summaries import SummaryStore
from memory.stores.sqlite.connection import Conn, immediate
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import columns, from_row, insert_sql, json_list, to_row

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS summaries (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        text TEXT NOT NULL,
        topics TEXT NOT NULL,
        started_at TEXT NOT NULL,
        ended_at TEXT NOT NULL,
        episode_uids TEXT NOT NULL,
        method TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS summaries_thread ON summaries (tenant, thread_id, started_at)",
    """CREATE TABLE IF NOT EXISTS summarises (
        summary_uid TEXT NOT NULL REFERENCES summaries(uid) ON DELETE CASCADE,
        episode_uid TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        tenant TEXT NOT NULL,
        PRIMARY KEY (summary_uid, episode_uid)
    )""",
    "CREATE INDEX IF NOT EXISTS summarises_episode ON summarises (episode_uid)",
)

_Q_SUMMARY = "SELECT * FROM summaries WHERE uid = ? AND tenant = ?"
_UPSERT = (
    insert_sql("summaries", SessionSummary)
    + " ON CONFLICT (uid) DO UPDATE SET "
    + ", ".join(
        f"{c} = excluded.{c}" for c in columns(SessionSummary) if c not in ("uid", "tenant")
    )
    + " WHERE summaries.tenant = excluded.tenant"
)
# Edges to the tenant's episodes among the listed uids only (another tenant's uid gets none).
_LINK = """
INSERT OR IGNORE INTO summarises (summary_uid, episode_uid, tenant)
SELECT ?, e.uid, e.tenant FROM episodes e
WHERE +e.tenant = ? AND e.uid IN (SELECT value FROM json_each(?))
"""


def summary_of(row: sqlite3.Row) -> SessionSummary:
    """A summary row as a record."""
    return from_row(SessionSummary, row)


def _upsert(conn: Conn, summary: SessionSummary) -> SessionSummary:
    with immediate(conn):
        conn.execute(_UPSERT, to_row(summary))
        row = conn.execute(_Q_SUMMARY, (summary.uid, summary.tenant)).fetchone()
        if row is None:
            raise uid_taken("summary", summary.uid)
        conn.execute("DELETE FROM summarises WHERE summary_uid = ?", (summary.uid,))
        conn.execute(_LINK, (summary.uid, summary.tenant, json_list(summary.episode_uids)))
    return summary_of(row)


class SqliteSummaries(SqliteKind, SummaryStore):
    """The summary part of `SqliteGraphStore`."""

    async def _upsert(self, summary: SessionSummary) -> SessionSummary:
        return await self._run(_upsert, summary)

    async def _get_many(self, tenant: str, uids: list[str]) -> list[SessionSummary]:
        rows = await self._fetch(
            "SELECT * FROM summaries WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))",
            (tenant, json_list(uids)),
        )
        return [summary_of(r) for r in rows]

    async def of_episode(self, tenant: str, episode_uid: str) -> list[str]:
        """Uids of the summaries with a SUMMARISES edge to the episode, sorted."""
        rows = await self._fetch(
            "SELECT summary_uid FROM summarises WHERE episode_uid = ? AND tenant = ? "
            "ORDER BY summary_uid",
            (episode_uid, tenant),
        )
        return [r[0] for r in rows]

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the summary and its edges; False if it did not exist."""
        return (
            await self._write("DELETE FROM summaries WHERE uid = ? AND tenant = ?", (uid, tenant))
            > 0
        )

    async def _list(self, tenant: str, thread_id: str | None) -> list[SessionSummary]:
        rows = await self._fetch(
            "SELECT * FROM summaries WHERE tenant = :tenant "
            "AND (:thread IS NULL OR thread_id = :thread) ORDER BY started_at, uid",
            {"tenant": tenant, "thread": thread_id},
        )
        return [summary_of(r) for r in rows]
