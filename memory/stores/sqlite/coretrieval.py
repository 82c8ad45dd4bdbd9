"""Co-retrieval links on SQLite: the `co_retrieved` table, written inside `record_access`."""

from __future__ import annotations

import math
from datetime import datetime

from memory.stores.graph.coretrieval import CoRetrievalStore, Link, link_from
from memory.stores.sqlite.connection import Conn, immediate
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import dt, json_list, ts

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS co_retrieved (
        tenant TEXT NOT NULL,
        a TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        b TEXT NOT NULL REFERENCES episodes(uid) ON DELETE CASCADE,
        count INTEGER NOT NULL,
        last_at TEXT NOT NULL,
        weight REAL NOT NULL,
        PRIMARY KEY (a, b),
        CHECK (a < b)
    )""",
    "CREATE INDEX IF NOT EXISTS co_retrieved_b ON co_retrieved (b)",
    "CREATE INDEX IF NOT EXISTS co_retrieved_tenant ON co_retrieved (tenant)",
)

_UPSERT = """
INSERT INTO co_retrieved (tenant, a, b, count, last_at, weight) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (a, b) DO UPDATE SET
    count = excluded.count, last_at = excluded.last_at, weight = excluded.weight
"""

_LINKS = "SELECT * FROM co_retrieved WHERE tenant = ?"
_LINKS_OF = """
SELECT * FROM co_retrieved WHERE +tenant = :tenant AND (
    a IN (SELECT value FROM json_each(:uids)) OR b IN (SELECT value FROM json_each(:uids)))
"""


def link_pairs(conn: Conn, tenant: str, pairs: list[tuple[str, str]], at: datetime) -> None:
    """Strengthen the link of each pair whose episodes the tenant has (inside a transaction)."""
    ends = json_list(sorted({u for pair in pairs for u in pair}))
    have = {
        r[0]
        for r in conn.execute(
            "SELECT uid FROM episodes WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))",
            (tenant, ends),
        )
    }
    for a, b in pairs:
        if a not in have or b not in have:
            continue
        row = conn.execute(
            "SELECT count FROM co_retrieved WHERE a = ? AND b = ?", (a, b)
        ).fetchone()
        count = (row[0] if row else 0) + 1
        conn.execute(_UPSERT, (tenant, a, b, count, ts(at), math.log1p(count)))


def _reweigh(
    conn: Conn, tenant: str, weights: dict[tuple[str, str], float], drop: list[tuple[str, str]]
) -> None:
    with immediate(conn):
        for (a, b), weight in weights.items():
            conn.execute(
                "UPDATE co_retrieved SET weight = ? WHERE tenant = ? AND a = ? AND b = ?",
                (weight, tenant, a, b),
            )
        for a, b in drop:
            conn.execute(
                "DELETE FROM co_retrieved WHERE tenant = ? AND a = ? AND b = ?", (tenant, a, b)
            )


class SqliteCoRetrieval(SqliteKind, CoRetrievalStore):
    """The co-retrieval part of `SqliteGraphStore`."""

    async def _reweigh(
        self, tenant: str, weights: dict[tuple[str, str], float], drop: list[tuple[str, str]]
    ) -> None:
        await self._run(_reweigh, tenant, weights, drop)

    async def _list(self, tenant: str, uids: list[str] | None) -> list[Link]:
        if uids is None:
            rows = await self._fetch(_LINKS, (tenant,))
        else:
            rows = await self._fetch(_LINKS_OF, {"tenant": tenant, "uids": json_list(uids)})
        return [link_from(r, dt(r["last_at"])) for r in rows]
