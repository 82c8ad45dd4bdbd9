"""Episodes and the TEMPORAL_NEXT chain on SQLite: their tables, indexes and SQL.

The chain is a table of (src, dst) edges, each end unique, so an episode has at most one
predecessor and one successor; creating or deleting an episode splices it in one transaction.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memory.schema import ESS, Episode, EpisodeSource, EpisodeStatus, Neighbour, episode_content
from memory.stores.errors import uid_taken
from memory.stores.graph.concepts import Groups
from memory.stores.graph.episodes import CreateResult, EpisodeStore
from memory.stores.sqlite import edges
from memory.stores.sqlite.connection import Conn, add_columns, immediate
from memory.stores.sqlite.coretrieval import link_pairs
from memory.stores.sqlite.kind import SqliteKind
from memory.stores.sqlite.rows import dt, encode, from_row, insert_sql, json_list, to_row, ts

DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS episodes (
        uid TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        content TEXT NOT NULL,
        user_text TEXT NOT NULL,
        agent_text TEXT NOT NULL,
        created_at TEXT NOT NULL,
        last_accessed TEXT,
        access_count INTEGER NOT NULL DEFAULT 0,
        ess TEXT,
        status TEXT NOT NULL,
        archived INTEGER NOT NULL DEFAULT 0,
        utility_score REAL NOT NULL DEFAULT 0,
        salience REAL NOT NULL DEFAULT 0.5,
        pinned INTEGER NOT NULL DEFAULT 0,
        source TEXT NOT NULL DEFAULT 'stated'
    )""",
    "CREATE INDEX IF NOT EXISTS episodes_tenant_time ON episodes (tenant, created_at, uid)",
    "CREATE INDEX IF NOT EXISTS episodes_tenant_status ON episodes (tenant, status)",
    "CREATE INDEX IF NOT EXISTS episodes_status ON episodes (status)",
    """CREATE TABLE IF NOT EXISTS temporal_next (
        tenant TEXT NOT NULL,
        src TEXT NOT NULL UNIQUE REFERENCES episodes(uid) ON DELETE CASCADE,
        dst TEXT NOT NULL UNIQUE REFERENCES episodes(uid) ON DELETE CASCADE,
        PRIMARY KEY (src, dst)
    )""",
    "CREATE INDEX IF NOT EXISTS episodes_tenant_thread ON episodes (tenant, thread_id, created_at, uid)",
)

Q_EPISODE = "SELECT * FROM episodes WHERE uid = ? AND tenant = ?"
_INSERT = insert_sql("episodes", Episode)
_LINK = "INSERT INTO temporal_next (tenant, src, dst) VALUES (?, ?, ?)"

Q_RECENT = (
    "SELECT created_at FROM episodes WHERE tenant = ? ORDER BY created_at DESC, uid DESC LIMIT ?"
)
"""The newest episodes' times, read backwards off the (tenant, created_at, uid) index."""

Q_THREAD = (
    "SELECT * FROM episodes WHERE tenant = ? AND thread_id = ? ORDER BY created_at, uid LIMIT ?"
)
Q_THREAD_AFTER = (
    "SELECT * FROM episodes WHERE tenant = ? AND thread_id = ? AND (created_at, uid) > (?, ?) "
    "ORDER BY created_at, uid LIMIT ?"
)
"""A thread's episodes in time order, off the (tenant, thread_id, created_at, uid) index."""

_LINKS = """
SELECT t.src, t.dst,
    trim(a.user_text, char(32, 9, 10, 13)) <> ''
        AND trim(a.agent_text, char(32, 9, 10, 13)) <> '' AS src_paired,
    trim(b.user_text, char(32, 9, 10, 13)) <> ''
        AND trim(b.agent_text, char(32, 9, 10, 13)) <> '' AS dst_paired
FROM temporal_next t
JOIN episodes a ON a.uid = t.src
JOIN episodes b ON b.uid = t.dst
WHERE t.src IN (SELECT value FROM json_each(:uids))
  AND +t.dst IN (SELECT value FROM json_each(:uids))
  AND +t.tenant = :tenant AND +a.tenant = :tenant AND a.thread_id = b.thread_id
"""
"""Driven by the listed srcs through the src index; `+t.dst` keeps the planner from probing
the (src, dst) index once per pair of listed uids, `+tenant` from walking the tenant's rows."""

_NEIGHBOURS_OF = """
WITH RECURSIVE
seeds(uid) AS (SELECT value FROM json_each(:uids)),
fwd(seed, uid, off) AS (
    SELECT t.src, t.dst, 1 FROM temporal_next t
    WHERE t.src IN (SELECT uid FROM seeds) AND +t.tenant = :tenant
    UNION ALL
    SELECT f.seed, t.dst, f.off + 1 FROM fwd f JOIN temporal_next t ON t.src = f.uid
    WHERE f.off < :k
),
bwd(seed, uid, off) AS (
    SELECT t.dst, t.src, -1 FROM temporal_next t
    WHERE t.dst IN (SELECT uid FROM seeds) AND +t.tenant = :tenant
    UNION ALL
    SELECT b.seed, t.src, b.off - 1 FROM bwd b JOIN temporal_next t ON t.dst = b.uid
    WHERE b.off > -:k
)
SELECT n.seed AS seed, n.off, e.* FROM (SELECT * FROM bwd UNION ALL SELECT * FROM fwd) n
JOIN episodes e ON e.uid = n.uid AND e.tenant = :tenant
ORDER BY n.seed, n.off
"""


def _create(conn: Conn, ep: Episode) -> CreateResult:
    """Insert an episode and splice it into its tenant's chain, unless its uid exists."""
    key = {"tenant": ep.tenant, "created_at": ts(ep.created_at), "uid": ep.uid}
    with immediate(conn):
        row = conn.execute("SELECT tenant FROM episodes WHERE uid = ?", (ep.uid,)).fetchone()
        if row is not None:
            if row[0] != ep.tenant:
                raise uid_taken("episode", ep.uid)
            return CreateResult(uid=ep.uid, duplicate=True)
        # The chain is ordered by (created_at, uid): splice between the greatest smaller key and
        # the smallest greater key (usually: append after the tail).
        pred = conn.execute(
            "SELECT uid FROM episodes WHERE tenant = :tenant AND (created_at, uid) < "
            "(:created_at, :uid) ORDER BY created_at DESC, uid DESC LIMIT 1",
            key,
        ).fetchone()
        succ = conn.execute(
            "SELECT uid FROM episodes WHERE tenant = :tenant AND (created_at, uid) > "
            "(:created_at, :uid) ORDER BY created_at, uid LIMIT 1",
            key,
        ).fetchone()
        try:
            conn.execute(_INSERT, to_row(ep))
        except sqlite3.IntegrityError:
            raise uid_taken("episode", ep.uid) from None
        if pred is not None and succ is not None:
            conn.execute("DELETE FROM temporal_next WHERE src = ? AND dst = ?", (pred[0], succ[0]))
        if pred is not None:
            conn.execute(_LINK, (ep.tenant, pred[0], ep.uid))
        if succ is not None:
            conn.execute(_LINK, (ep.tenant, ep.uid, succ[0]))
    return CreateResult(uid=ep.uid, duplicate=False)


def _attach(conn: Conn, tenant: str, uid: str, agent_text: str) -> bool:
    """Set the reply of a recorded turn; a status past pending goes back to stored."""
    with immediate(conn):
        row = conn.execute(
            "SELECT user_text, agent_text FROM episodes WHERE uid = ? AND tenant = ?", (uid, tenant)
        ).fetchone()
        if row is None:
            return False
        if row[1] == agent_text:
            return True
        content = episode_content(row[0], agent_text)
        conn.execute(
            "UPDATE episodes SET agent_text = ?, content = ?, status = "
            "CASE WHEN status = 'pending' THEN 'pending' ELSE 'stored' END "
            "WHERE uid = ? AND tenant = ?",
            (agent_text, content, uid, tenant),
        )
    return True


def migrate_v1(conn: Conn) -> None:
    """Schema 1 -> 2: rebuild `episodes` without the (tenant, content_hash) uniqueness: SQLite
    cannot drop a constraint, so the table is copied (the 12-step ALTER TABLE recipe); the
    caller has turned foreign keys off and holds the write transaction."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'episodes'").fetchone():
        return  # a file with no episodes table yet: the DDL creates it as version 2 makes it
    conn.execute(DDL[0].replace("IF NOT EXISTS episodes", "episodes_v2"))
    # The columns both tables hold, by name (from the files' own schemas, never input): later
    # versions add columns, which take their defaults, and drop some (`content_hash`, 5).
    new = {r[1] for r in conn.execute("PRAGMA table_info(episodes_v2)")}
    old = ", ".join(r[1] for r in conn.execute("PRAGMA table_info(episodes)") if r[1] in new)
    conn.execute(f"INSERT INTO episodes_v2 ({old}) SELECT {old} FROM episodes")  # noqa: S608
    conn.execute("DROP TABLE episodes")
    conn.execute("ALTER TABLE episodes_v2 RENAME TO episodes")
    for statement in DDL[1:4]:
        conn.execute(statement)


def migrate_v2(conn: Conn) -> None:
    """Schema 2 -> 3: episodes gain `pinned` (0 for every existing one)."""
    add_columns(conn, [("episodes", "pinned INTEGER NOT NULL DEFAULT 0")])


def _set_pinned(conn: Conn, tenant: str, uid: str, pinned: bool) -> Episode | None:
    """Pin or unpin; pinning an archived episode restores it (not archived, back to stored)."""
    with immediate(conn):
        if conn.execute(Q_EPISODE, (uid, tenant)).fetchone() is None:
            return None
        if pinned:
            conn.execute(
                "UPDATE episodes SET pinned = 1, archived = 0, status = CASE WHEN archived = 1 "
                "AND status IN ('indexed', 'processed') THEN 'stored' ELSE status END "
                "WHERE uid = ? AND tenant = ?",
                (uid, tenant),
            )
        else:
            conn.execute(
                "UPDATE episodes SET pinned = 0 WHERE uid = ? AND tenant = ?", (uid, tenant)
            )
        return episode_of(conn.execute(Q_EPISODE, (uid, tenant)).fetchone())


def _access(
    conn: Conn, tenant: str, uids: list[str], at: datetime, pairs: list[tuple[str, str]]
) -> None:
    """Count the accesses and strengthen the co-retrieval links, in one transaction."""
    with immediate(conn):
        conn.execute(
            "UPDATE episodes SET access_count = access_count + 1, last_accessed = ? "
            "WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))",
            (ts(at), tenant, json_list(uids)),
        )
        link_pairs(conn, tenant, pairs, at)


def _delete(conn: Conn, tenant: str, uid: str) -> bool:
    """Delete an episode and its edges, linking its chain neighbours to each other."""
    with immediate(conn):
        if conn.execute(Q_EPISODE, (uid, tenant)).fetchone() is None:
            return False
        pred = conn.execute("SELECT src FROM temporal_next WHERE dst = ?", (uid,)).fetchone()
        succ = conn.execute("SELECT dst FROM temporal_next WHERE src = ?", (uid,)).fetchone()
        # ON DELETE CASCADE removes every edge of the episode; the nodes it linked to stay.
        conn.execute("DELETE FROM episodes WHERE uid = ?", (uid,))
        if pred is not None and succ is not None:
            conn.execute(_LINK, (tenant, pred[0], succ[0]))
    return True


def episode_of(row: sqlite3.Row) -> Episode:
    """An episode row as a record."""
    return from_row(Episode, row)


class SqliteEpisodes(SqliteKind, EpisodeStore):
    """The episode part of `SqliteGraphStore`."""

    async def _insert(self, episode: Episode) -> CreateResult:
        return await self._run(_create, episode)

    async def _attach_reply(self, tenant: str, uid: str, agent_text: str) -> bool:
        return await self._run(_attach, tenant, uid, agent_text)

    async def get(self, tenant: str, uid: str) -> Episode | None:
        """The episode with this uid, or None."""
        rows = await self._fetch(Q_EPISODE, (uid, tenant))
        return episode_of(rows[0]) if rows else None

    async def _get_many(self, tenant: str, uids: list[str]) -> list[Episode]:
        rows = await self._fetch(
            "SELECT * FROM episodes WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))",
            (tenant, json_list(uids)),
        )
        return [episode_of(r) for r in rows]

    async def _thread_links(
        self, tenant: str, uids: list[str]
    ) -> list[tuple[str, str, bool, bool]]:
        rows = await self._fetch(_LINKS, {"tenant": tenant, "uids": json_list(uids)})
        return [(r["src"], r["dst"], bool(r["src_paired"]), bool(r["dst_paired"])) for r in rows]

    async def _neighbours_many(
        self, tenant: str, uids: list[str], k: int
    ) -> dict[str, list[Neighbour]]:
        rows = await self._fetch(
            _NEIGHBOURS_OF, {"tenant": tenant, "uids": json_list(uids), "k": k}
        )
        out: dict[str, list[Neighbour]] = {}
        for r in rows:
            out.setdefault(r["seed"], []).append(Neighbour(offset=r["off"], episode=episode_of(r)))
        return out

    async def _in_thread(
        self, tenant: str, thread_id: str, after: tuple[datetime, str] | None, limit: int
    ) -> list[Episode]:
        if after is None:
            rows = await self._fetch(Q_THREAD, (tenant, thread_id, limit))
        else:
            rows = await self._fetch(
                Q_THREAD_AFTER, (tenant, thread_id, ts(after[0]), after[1], limit)
            )
        return [episode_of(r) for r in rows]

    async def _set_status(
        self, tenant: str, uid: str, status: EpisodeStatus, movable: list[EpisodeStatus]
    ) -> bool:
        changed = await self._write(
            "UPDATE episodes SET status = ? WHERE uid = ? AND tenant = ? "
            "AND status IN (SELECT value FROM json_each(?))",
            (status.value, uid, tenant, json_list([s.value for s in movable])),
        )
        return changed > 0

    async def _list_by_status(
        self, tenant: str | None, statuses: list[EpisodeStatus], limit: int
    ) -> list[Episode]:
        wanted = json_list([s.value for s in statuses])
        if tenant is None:
            sql = (
                "SELECT * FROM episodes WHERE status IN (SELECT value FROM json_each(?)) "
                "ORDER BY created_at, uid LIMIT ?"
            )
            params: tuple[object, ...] = (wanted, limit)
        else:
            sql = (
                "SELECT * FROM episodes WHERE tenant = ? AND status IN "
                "(SELECT value FROM json_each(?)) ORDER BY created_at, uid LIMIT ?"
            )
            params = (tenant, wanted, limit)
        return [episode_of(r) for r in await self._fetch(sql, params)]

    async def list_uids(self, tenant: str | None) -> list[str]:
        """Every episode uid (of one tenant, or all for maintenance), sorted."""
        if tenant is None:
            rows = await self._fetch("SELECT uid FROM episodes ORDER BY uid", ())
        else:
            rows = await self._fetch(
                "SELECT uid FROM episodes WHERE tenant = ? ORDER BY uid", (tenant,)
            )
        return [r[0] for r in rows]

    async def list_tenants(self) -> list[str]:
        """Tenants that have any episode, sorted (maintenance only)."""
        rows = await self._fetch("SELECT DISTINCT tenant FROM episodes ORDER BY tenant", ())
        return [r[0] for r in rows]

    async def _record_access(
        self, tenant: str, uids: list[str], at: datetime, pairs: list[tuple[str, str]]
    ) -> None:
        await self._run(_access, tenant, uids, at, pairs)

    async def set_ess(self, tenant: str, uid: str, ess: ESS) -> None:
        """Store the Evidence Strength Score of an episode."""
        await self._write(
            "UPDATE episodes SET ess = ? WHERE uid = ? AND tenant = ?",
            (encode(Episode, "ess", ess), uid, tenant),
        )

    async def set_source(self, tenant: str, uid: str, source: EpisodeSource) -> None:
        """Record where an episode's words came from."""
        sql = "UPDATE episodes SET source = ? WHERE uid = ? AND tenant = ?"
        await self._write(sql, (source.value, uid, tenant))

    async def _update_scores(
        self,
        tenant: str,
        uid: str,
        salience: float | None,
        utility_score: float | None,
        archived: bool | None,
    ) -> None:
        await self._write(
            "UPDATE episodes SET salience = COALESCE(?, salience), "
            "utility_score = COALESCE(?, utility_score), archived = COALESCE(?, archived) "
            "WHERE uid = ? AND tenant = ?",
            (salience, utility_score, None if archived is None else int(archived), uid, tenant),
        )

    async def _set_pinned(self, tenant: str, uid: str, pinned: bool) -> Episode | None:
        return await self._run(_set_pinned, tenant, uid, pinned)

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete an episode and its edges, re-linking the chain around it. True if it existed."""
        return await self._run(_delete, tenant, uid)

    async def count(self, tenant: str) -> int:
        """Number of episodes of the tenant."""
        rows = await self._fetch("SELECT COUNT(*) FROM episodes WHERE tenant = ?", (tenant,))
        return int(rows[0][0])

    async def _recent_activity(self, tenant: str, n: int) -> list[datetime]:
        return [dt(r[0]) for r in await self._fetch(Q_RECENT, (tenant, n))]

    async def _connections(
        self, tenant: str, uids: list[str], min_link_weight: float
    ) -> dict[str, int]:
        params = {"tenant": tenant, "uids": json_list(uids), "strong": min_link_weight}
        rows = await self._fetch(edges.CONNECTIONS, params)
        return {str(r["uid"]): int(r["n"]) for r in rows}

    async def _sole_evidence(self, tenant: str, uids: list[str]) -> set[str]:
        rows = await self._fetch(edges.SOLE, {"tenant": tenant, "uids": json_list(uids)})
        return {str(r["uid"]) for r in rows}

    async def _terms(self, tenant: str, uids: list[str]) -> dict[str, list[str]]:
        rows = await self._fetch(edges.TERMS, {"tenant": tenant, "uids": json_list(uids)})
        out: dict[str, list[str]] = {}
        for r in rows:
            out.setdefault(str(r["uid"]), []).append(str(r["term"]))
        existing = await self._fetch(edges.EXISTING, (tenant, json_list(uids)))
        return {str(r[0]): sorted(set(out.get(str(r[0]), []))) for r in existing}

    async def groups(self, tenant: str, uid: str) -> Groups:
        """The concepts that include the episode and the diary entries that recount it."""
        concepts = await self._fetch(edges.GROUP_CONCEPTS, (uid, tenant))
        diary = await self._fetch(edges.GROUP_DIARY, (uid, tenant))
        return Groups(concepts=[r[0] for r in concepts], diary=[r[0] for r in diary])
