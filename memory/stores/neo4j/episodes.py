"""Episodes and the TEMPORAL_NEXT chain on Neo4j: their constraints, indexes and Cypher.

Writes that change the chain take the tenant's lock first (`LOCK_TENANT`), so concurrent writers
of one tenant cannot both link to the same tail.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import AsyncTransaction
from neo4j.exceptions import ConstraintError

from memory.schema import (
    ESS,
    TIMELESS_ATTRIBUTES,
    Episode,
    EpisodeSource,
    EpisodeStatus,
    Neighbour,
    episode_content,
)
from memory.stores.errors import uid_taken
from memory.stores.graph.concepts import Groups
from memory.stores.graph.episodes import CreateResult, EpisodeStore
from memory.stores.neo4j import edges
from memory.stores.neo4j.connection import (
    LOCK_TENANT,
    tx_rows,
    tx_run,
    with_bound,
)
from memory.stores.neo4j.coretrieval import link_pairs
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import dt, field_props, from_props, to_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT episode_uid IF NOT EXISTS FOR (n:Episode) REQUIRE n.uid IS UNIQUE",
    "CREATE INDEX episode_tenant_time IF NOT EXISTS FOR (n:Episode) ON (n.tenant, n.created_at)",
    "CREATE INDEX episode_tenant_status IF NOT EXISTS FOR (n:Episode) ON (n.tenant, n.status)",
    "CREATE INDEX episode_status IF NOT EXISTS FOR (n:Episode) ON (n.status)",
    "CREATE INDEX episode_tenant_thread IF NOT EXISTS FOR (n:Episode) ON (n.tenant, n.thread_id)",
)

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("DROP CONSTRAINT episode_hash IF EXISTS",),
    4: ("MATCH (e:Episode) WHERE e.content_hash IS NOT NULL REMOVE e.content_hash",),
    5: (
        "MATCH (e:Episode) WHERE e.source IS NULL SET e.source = 'stated'",
        *(
            "MATCH (f:Fact) WHERE f.precision IS NULL SET f.precision = CASE WHEN "
            f"f.kind = '{kind.value}' AND toLower(replace(replace(trim(split(f.attribute, ':')[0]), "
            f"' ', '_'), '-', '_')) IN {sorted(keys)!r} THEN 'unbounded' ELSE null END"
            for kind, keys in TIMELESS_ATTRIBUTES.items()
        ),
        "MATCH (f:Fact) WHERE f.precision IS NULL SET f.precision = 'relative'",
    ),
}
"""Schema n -> n+1 statements: 1 -> 2 drops the (tenant, content_hash) uniqueness; 2 -> 3 needs
none (an episode node without `pinned` reads as not pinned; CO_RETRIEVED is a new edge), nor
3 -> 4 (a concept node without `loop_emotion` reads as none); 4 -> 5 removes the episodes'
`content_hash`, which nothing read; 5 -> 6 gives every episode its source (`stated`) and every
fact its temporal precision (`unbounded` when its kind and attribute are timeless by nature,
`TIMELESS_ATTRIBUTES`, else `relative`). The statements are built from our own constants, never
from input."""

_FIND_TENANT = "MATCH (d:Episode {uid: $uid}) RETURN d.tenant AS tenant"

# One statement, so one round trip: take the tenant lock, look for the uid, and only when it is
# new create the episode and splice it into the chain between its predecessor (the
# greatest (created_at, uid) below it) and its successor (the smallest above it). Each neighbour
# is the nearer of two candidates, same instant or earlier/later instant; both lookups walk the
# (tenant, created_at) index in order (ORDER BY starts with p.tenant for that), so an insert
# reads a handful of index entries however long the chain is.
_CREATE_EPISODE = (
    LOCK_TENANT
    + """
WITH t
OPTIONAL MATCH (d:Episode {uid: $uid})
CALL (d) {
    UNWIND CASE WHEN d IS NULL THEN [1] ELSE [] END AS _new
    CALL () {
        OPTIONAL MATCH (p:Episode)
            WHERE p.tenant = $tenant AND p.created_at = $created_at AND p.uid < $uid
        RETURN p AS same_before ORDER BY p.uid DESC LIMIT 1
    }
    CALL () {
        OPTIONAL MATCH (p:Episode) WHERE p.tenant = $tenant AND p.created_at < $created_at
        RETURN p AS before ORDER BY p.tenant DESC, p.created_at DESC, p.uid DESC LIMIT 1
    }
    CALL () {
        OPTIONAL MATCH (s:Episode)
            WHERE s.tenant = $tenant AND s.created_at = $created_at AND s.uid > $uid
        RETURN s AS same_after ORDER BY s.uid LIMIT 1
    }
    CALL () {
        OPTIONAL MATCH (s:Episode) WHERE s.tenant = $tenant AND s.created_at > $created_at
        RETURN s AS after ORDER BY s.tenant, s.created_at, s.uid LIMIT 1
    }
    WITH coalesce(same_before, before) AS p, coalesce(same_after, after) AS s
    CREATE (e:Episode)
    SET e = $props
    WITH p, s, e
    OPTIONAL MATCH (p)-[r:TEMPORAL_NEXT]->(s)
    DELETE r
    FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | CREATE (p)-[:TEMPORAL_NEXT]->(e))
    FOREACH (_ IN CASE WHEN s IS NULL THEN [] ELSE [1] END | CREATE (e)-[:TEMPORAL_NEXT]->(s))
}
RETURN d.tenant AS existing
"""
)

_READ_SIDES = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
RETURN e.user_text AS user_text, e.agent_text AS agent_text
"""

# The reply of a recorded turn; a status past pending goes back to stored.
_ATTACH_REPLY = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
SET e.agent_text = $agent_text, e.content = $content,
    e.status = CASE WHEN e.status = 'pending' THEN 'pending' ELSE 'stored' END
"""

# Its emotions go with it (`memory.stores.neo4j.goals`).
_DELETE_EPISODE = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
CALL (e) {
  OPTIONAL MATCH (m:Emotion)-[:FELT_IN]->(e)
  DETACH DELETE m
}
OPTIONAL MATCH (p:Episode)-[:TEMPORAL_NEXT]->(e)
OPTIONAL MATCH (e)-[:TEMPORAL_NEXT]->(s:Episode)
DETACH DELETE e
WITH p, s
FOREACH (_ IN CASE WHEN p IS NULL OR s IS NULL THEN [] ELSE [1] END |
    CREATE (p)-[:TEMPORAL_NEXT]->(s))
RETURN count(*) AS deleted
"""

# Tenant-wide scans: the IS NOT NULL on the second property lets the planner seek the composite
# (tenant, ...) index instead of scanning every tenant's nodes (one statement each below).
_TENANT_EPISODES = "MATCH (e:Episode) WHERE e.tenant = $tenant AND e.created_at IS NOT NULL"

# Tenant nodes are the tenants that ever wrote; those with an episode left are listed.
_TENANTS = """
MATCH (t:Tenant)
WHERE EXISTS { MATCH (e:Episode) WHERE e.tenant = t.id AND e.created_at IS NOT NULL }
RETURN t.id AS tenant
"""

_GET_EPISODE = "MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant RETURN e {.*} AS e"

_GET_EPISODES = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
RETURN e {.*} AS e
"""

_LINKS = """
MATCH (a:Episode)-[:TEMPORAL_NEXT]->(b:Episode)
WHERE a.uid IN $uids AND a.tenant = $tenant AND b.uid IN $uids AND a.thread_id = b.thread_id
RETURN a.uid AS src, b.uid AS dst,
    (trim(a.user_text) <> '' AND trim(a.agent_text) <> '') AS src_paired,
    (trim(b.user_text) <> '' AND trim(b.agent_text) <> '') AS dst_paired
"""

_NEIGHBOURS_OF = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
CALL (e) {
    MATCH p = (e)-[:TEMPORAL_NEXT*1..%d]->(n:Episode)
    RETURN length(p) AS offset, n
    UNION ALL
    MATCH p = (n:Episode)-[:TEMPORAL_NEXT*1..%d]->(e)
    RETURN -length(p) AS offset, n
}
RETURN e.uid AS seed, offset, n {.*} AS e ORDER BY seed, offset
"""

_SET_STATUS = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant AND e.status IN $from
SET e.status = $status
RETURN count(e) AS changed
"""

_BY_STATUS = """
MATCH (e:Episode) WHERE e.tenant = $tenant AND e.status IN $statuses
RETURN e {.*} AS e ORDER BY e.created_at, e.uid LIMIT $limit
"""
_BY_STATUS_ALL = """
MATCH (e:Episode) WHERE e.status IN $statuses
RETURN e {.*} AS e ORDER BY e.created_at, e.uid LIMIT $limit
"""

_RECORD_ACCESS = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
SET e.access_count = e.access_count + 1, e.last_accessed = $at
"""

_SET_PROPS = "MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant SET e += $props"

_UPDATE_SCORES = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
SET e.salience = coalesce($salience, e.salience),
    e.utility_score = coalesce($utility_score, e.utility_score),
    e.archived = coalesce($archived, e.archived)
"""

# The status CASE reads `archived` as it was before this SET (a restored episode is rebuilt).
_SET_PINNED = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
SET e.status = CASE WHEN $pinned AND coalesce(e.archived, false)
                         AND e.status IN ['indexed', 'processed'] THEN 'stored'
                    ELSE e.status END,
    e.archived = CASE WHEN $pinned THEN false ELSE e.archived END,
    e.pinned = $pinned
RETURN e {.*} AS e
"""


# The newest first, read backwards off the (tenant, created_at) index: ORDER BY starts with
# e.tenant so the planner takes the index order and stops after $n entries.
_THREAD = """
MATCH (e:Episode) WHERE e.tenant = $tenant AND e.thread_id = $thread_id
  AND ($after_at IS NULL OR e.created_at > $after_at
       OR (e.created_at = $after_at AND e.uid > $after_uid))
RETURN e {.*} AS e ORDER BY e.created_at, e.uid LIMIT $limit
"""

Q_RECENT = (
    _TENANT_EPISODES
    + " RETURN e.created_at AS at ORDER BY e.tenant DESC, e.created_at DESC LIMIT $n"
)


def episode_of(props: dict[str, Any]) -> Episode:
    """An episode node's properties as a record."""
    return from_props(Episode, props)


class Neo4jEpisodes(Neo4jKind, EpisodeStore):
    """The episode part of `Neo4jGraphStore`."""

    async def _insert(self, episode: Episode) -> CreateResult:
        props = to_props(episode)
        params = {
            "tenant": episode.tenant,
            "uid": episode.uid,
            "created_at": props["created_at"],
            "props": props,
        }
        try:
            rows = await self._write(_CREATE_EPISODE, **params)
        except ConstraintError:
            # The uid was created by another tenant's writer (it holds another lock) meanwhile.
            found = await self._read(_FIND_TENANT, uid=episode.uid)
            if found and found[0]["tenant"] == episode.tenant:
                return CreateResult(uid=episode.uid, duplicate=True)
            raise uid_taken("episode", episode.uid) from None
        # An existing uid wrote nothing but the tenant's lock counter.
        existing = rows[0]["existing"]
        if existing is None:
            return CreateResult(uid=episode.uid, duplicate=False)
        if existing != episode.tenant:
            raise uid_taken("episode", episode.uid)
        return CreateResult(uid=episode.uid, duplicate=True)

    async def _attach_reply(self, tenant: str, uid: str, agent_text: str) -> bool:
        async def work(tx: AsyncTransaction) -> bool:
            rows = await tx_rows(tx, _READ_SIDES, {"tenant": tenant, "uid": uid})
            if not rows:
                return False
            if rows[0]["agent_text"] == agent_text:
                return True
            content = episode_content(str(rows[0]["user_text"]), agent_text)
            params = {"tenant": tenant, "uid": uid, "agent_text": agent_text, "content": content}
            await tx_run(tx, _ATTACH_REPLY, params)
            return True

        return await self._tx(work)

    async def get(self, tenant: str, uid: str) -> Episode | None:
        """The episode with this uid, or None."""
        rows = await self._read(_GET_EPISODE, tenant=tenant, uid=uid)
        return episode_of(rows[0]["e"]) if rows else None

    async def _get_many(self, tenant: str, uids: list[str]) -> list[Episode]:
        rows = await self._read(_GET_EPISODES, tenant=tenant, uids=uids)
        return [episode_of(row["e"]) for row in rows]

    async def _thread_links(
        self, tenant: str, uids: list[str]
    ) -> list[tuple[str, str, bool, bool]]:
        rows = await self._read(_LINKS, tenant=tenant, uids=uids)
        return [
            (row["src"], row["dst"], bool(row["src_paired"]), bool(row["dst_paired"]))
            for row in rows
        ]

    async def _neighbours_many(
        self, tenant: str, uids: list[str], k: int
    ) -> dict[str, list[Neighbour]]:
        rows = await self._read(with_bound(_NEIGHBOURS_OF, k, k), tenant=tenant, uids=uids)
        out: dict[str, list[Neighbour]] = {}
        for row in rows:
            out.setdefault(row["seed"], []).append(
                Neighbour(offset=row["offset"], episode=episode_of(row["e"]))
            )
        return out

    async def _set_status(
        self, tenant: str, uid: str, status: EpisodeStatus, movable: list[EpisodeStatus]
    ) -> bool:
        movable_values = [s.value for s in movable]
        rows = await self._write(
            _SET_STATUS, tenant=tenant, uid=uid, status=status.value, **{"from": movable_values}
        )
        return bool(rows[0]["changed"])

    async def _in_thread(
        self, tenant: str, thread_id: str, after: tuple[datetime, str] | None, limit: int
    ) -> list[Episode]:
        rows = await self._read(
            _THREAD,
            tenant=tenant,
            thread_id=thread_id,
            after_at=None if after is None else after[0],
            after_uid=None if after is None else after[1],
            limit=limit,
        )
        return [episode_of(row["e"]) for row in rows]

    async def _list_by_status(
        self, tenant: str | None, statuses: list[EpisodeStatus], limit: int
    ) -> list[Episode]:
        wanted = [s.value for s in statuses]
        if tenant is None:
            rows = await self._read(_BY_STATUS_ALL, statuses=wanted, limit=limit)
        else:
            rows = await self._read(_BY_STATUS, tenant=tenant, statuses=wanted, limit=limit)
        return [episode_of(row["e"]) for row in rows]

    async def list_uids(self, tenant: str | None) -> list[str]:
        """Every episode uid (of one tenant, or all for maintenance), sorted."""
        if tenant is None:
            rows = await self._read("MATCH (e:Episode) RETURN e.uid AS uid")
        else:
            rows = await self._read(f"{_TENANT_EPISODES} RETURN e.uid AS uid", tenant=tenant)
        # Sorted here: Python (like SQLite) orders strings by code point, Cypher by UTF-16 unit.
        return sorted(row["uid"] for row in rows)

    async def list_tenants(self) -> list[str]:
        """Tenants that have any episode, sorted (maintenance only)."""
        rows = await self._read(_TENANTS)
        return sorted(row["tenant"] for row in rows)

    async def _record_access(
        self, tenant: str, uids: list[str], at: datetime, pairs: list[tuple[str, str]]
    ) -> None:
        if not pairs:
            await self._write(_RECORD_ACCESS, tenant=tenant, uids=uids, at=at)
            return

        async def work(tx: AsyncTransaction) -> None:
            await tx_run(tx, LOCK_TENANT, {"tenant": tenant})  # first, as every chain writer
            await tx_run(tx, _RECORD_ACCESS, {"tenant": tenant, "uids": uids, "at": at})
            await link_pairs(tx, tenant, pairs, at)

        await self._tx(work)

    async def set_ess(self, tenant: str, uid: str, ess: ESS) -> None:
        """Store the Evidence Strength Score of an episode."""
        props = field_props(Episode, "ess", ess)
        await self._write(_SET_PROPS, tenant=tenant, uid=uid, props=props)

    async def set_source(self, tenant: str, uid: str, source: EpisodeSource) -> None:
        """Record where an episode's words came from."""
        props = field_props(Episode, "source", source)
        await self._write(_SET_PROPS, tenant=tenant, uid=uid, props=props)

    async def _update_scores(
        self,
        tenant: str,
        uid: str,
        salience: float | None,
        utility_score: float | None,
        archived: bool | None,
    ) -> None:
        await self._write(
            _UPDATE_SCORES,
            tenant=tenant,
            uid=uid,
            salience=salience,
            utility_score=utility_score,
            archived=archived,
        )

    async def _set_pinned(self, tenant: str, uid: str, pinned: bool) -> Episode | None:
        rows = await self._write(_SET_PINNED, tenant=tenant, uid=uid, pinned=pinned)
        return episode_of(rows[0]["e"]) if rows else None

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete an episode and its edges, re-linking the chain around it. True if it existed."""

        async def work(tx: AsyncTransaction) -> bool:
            await tx_run(tx, LOCK_TENANT, {"tenant": tenant})
            rows = await tx_rows(tx, _DELETE_EPISODE, {"tenant": tenant, "uid": uid})
            if not rows[0]["deleted"]:
                await tx.rollback()
                return False
            return True

        return await self._tx(work)

    async def count(self, tenant: str) -> int:
        """Number of episodes of the tenant."""
        rows = await self._read(f"{_TENANT_EPISODES} RETURN count(e) AS n", tenant=tenant)
        return int(rows[0]["n"])

    async def _recent_activity(self, tenant: str, n: int) -> list[datetime]:
        rows = await self._read(Q_RECENT, tenant=tenant, n=n)
        return [dt(row["at"]) for row in rows]

    async def _connections(
        self, tenant: str, uids: list[str], min_link_weight: float
    ) -> dict[str, int]:
        rows = await self._read(edges.CONNECTIONS, tenant=tenant, uids=uids, strong=min_link_weight)
        return {str(r["uid"]): int(r["n"]) for r in rows}

    async def _sole_evidence(self, tenant: str, uids: list[str]) -> set[str]:
        rows = await self._read(edges.SOLE, tenant=tenant, uids=uids)
        return {str(r["uid"]) for r in rows}

    async def _terms(self, tenant: str, uids: list[str]) -> dict[str, list[str]]:
        rows = await self._read(edges.TERMS, tenant=tenant, uids=uids)
        return {str(r["uid"]): sorted({str(t) for t in r["terms"]}) for r in rows}

    async def groups(self, tenant: str, uid: str) -> Groups:
        """The concepts that include the episode and the diary entries that recount it."""
        rows = await self._read(edges.GROUPS, tenant=tenant, uid=uid)
        return Groups(
            concepts=[r["uid"] for r in rows if r["concept"]],
            diary=[r["uid"] for r in rows if not r["concept"]],
        )
