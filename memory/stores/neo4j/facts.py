"""Facts with STATES, ABOUT and LED_TO edges on Neo4j: their constraint, indexes and Cypher.

Properties of a fact written before schema version 2 are missing and read as the field's
default (`props.from_props`), so an older database needs no data migration.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import AsyncTransaction

from memory.schema import Cause, Fact
from memory.stores.errors import uid_taken
from memory.stores.graph.facts import FactFilter, FactStore
from memory.stores.neo4j.connection import tx_rows, tx_run
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import from_props, to_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT fact_uid IF NOT EXISTS FOR (n:Fact) REQUIRE n.uid IS UNIQUE",
    "CREATE INDEX fact_tenant IF NOT EXISTS FOR (n:Fact) ON (n.tenant)",
    "CREATE INDEX fact_subject IF NOT EXISTS FOR (n:Fact) ON (n.tenant, n.subject, n.attribute)",
)

# Idempotent on uid: an existing fact is left as it is. No row back: the uid is another tenant's.
_ADD_FACT = """
MERGE (f:Fact {uid: $uid})
ON CREATE SET f += $props
WITH f WHERE f.tenant = $tenant
RETURN f {.*} AS f
"""

_CITE_FACT = """
MATCH (f:Fact {uid: $fact}) WHERE f.tenant = $tenant
MATCH (e:Episode {uid: $episode}) WHERE e.tenant = $tenant
MERGE (e)-[:STATES]->(f)
"""

_CLOSE_FACT = """
MATCH (f:Fact {uid: $uid}) WHERE f.tenant = $tenant
SET f.valid_to = $at, f.superseded_by = $by
"""

_REOPEN_SUPERSEDED = """
MATCH (old:Fact) WHERE old.tenant = $tenant AND old.superseded_by = $uid
SET old.superseded_by = null, old.valid_to = null
"""

# Its goal goes with it (`memory.stores.neo4j.goals`).
_DELETE_FACT = """
MATCH (f:Fact {uid: $uid}) WHERE f.tenant = $tenant
CALL (f) {
  OPTIONAL MATCH (g:Goal)-[:TRACKS]->(f)
  DETACH DELETE g
}
DETACH DELETE f
RETURN count(*) AS deleted
"""

_GET_FACT = "MATCH (f:Fact {uid: $uid}) WHERE f.tenant = $tenant RETURN f {.*} AS f"
_GET_FACTS = "MATCH (f:Fact) WHERE f.uid IN $uids AND f.tenant = $tenant RETURN f {.*} AS f"

# A fact stored before version 2 has no kind/subject/attribute property: it reads as the
# defaults (`attribute`, `user`, ""), so the filters compare with those defaults too.
_LIST_FACTS = """
MATCH (f:Fact) WHERE f.tenant = $tenant AND ($all OR f.superseded_by IS NULL)
  AND ($kinds IS NULL OR coalesce(f.kind, 'attribute') IN $kinds)
  AND ($subject IS NULL OR coalesce(f.subject, 'user') = $subject)
  AND ($attribute IS NULL OR coalesce(f.attribute, '') = $attribute)
RETURN f {.*} AS f ORDER BY f.valid_from, f.uid
"""

_FACT_SOURCES = """
MATCH (e:Episode)-[:STATES]->(f:Fact {uid: $uid}) WHERE f.tenant = $tenant
RETURN DISTINCT e.uid AS uid
"""

_SOURCES_OF_FACTS = """
MATCH (e:Episode)-[:STATES]->(f:Fact) WHERE f.uid IN $uids AND f.tenant = $tenant
RETURN f.uid AS fact, collect(DISTINCT e.uid) AS episodes
"""

_LINK_SUBJECT = """
MATCH (f:Fact {uid: $uid}) WHERE f.tenant = $tenant
MATCH (n:Entity {tenant: $tenant, key: $key})
MERGE (f)-[:ABOUT]->(n)
RETURN count(*) AS linked
"""

# The cause is a fact if one has its uid, else an episode.
_LINK_CAUSE = """
MATCH (f:Fact {uid: $fact}) WHERE f.tenant = $tenant
OPTIONAL MATCH (cf:Fact {uid: $cause}) WHERE cf.tenant = $tenant
OPTIONAL MATCH (ce:Episode {uid: $cause}) WHERE ce.tenant = $tenant
WITH f, coalesce(cf, ce) AS c WHERE c IS NOT NULL
MERGE (c)-[:LED_TO]->(f)
RETURN count(*) AS linked
"""

_CAUSES_OF = """
MATCH (c)-[:LED_TO]->(f:Fact {uid: $uid}) WHERE f.tenant = $tenant AND c.tenant = $tenant
RETURN CASE WHEN c:Fact THEN 'fact' ELSE 'episode' END AS kind, c.uid AS uid
"""


def fact_of(props: dict[str, Any]) -> Fact:
    """A fact node's properties as a record."""
    return from_props(Fact, props)


async def _insert(tx: AsyncTransaction, fact: Fact) -> Fact:
    """Create the fact unless its uid exists; the stored fact."""
    params = {"uid": fact.uid, "tenant": fact.tenant, "props": to_props(fact, exclude=("uid",))}
    rows = await tx_rows(tx, _ADD_FACT, params)
    if not rows:
        raise uid_taken("fact", fact.uid)
    return fact_of(rows[0]["f"])


_STATED_BY = """
MATCH (e:Episode {uid: $uid})-[:STATES]->(f:Fact) WHERE e.tenant = $tenant AND f.tenant = $tenant
RETURN f.uid AS uid ORDER BY uid
"""


class Neo4jFacts(Neo4jKind, FactStore):
    """The fact part of `Neo4jGraphStore`."""

    async def _add(self, fact: Fact, episode_uid: str | None) -> Fact:
        async def work(tx: AsyncTransaction) -> Fact:
            stored = await _insert(tx, fact)
            if episode_uid is not None:
                params = {"tenant": fact.tenant, "fact": fact.uid, "episode": episode_uid}
                await tx_run(tx, _CITE_FACT, params)
            return stored

        return await self._tx(work)

    async def cite(self, tenant: str, fact_uid: str, episode_uid: str) -> None:
        """Add a STATES edge from another episode to an existing fact; idempotent."""
        await self._write(_CITE_FACT, tenant=tenant, fact=fact_uid, episode=episode_uid)

    async def _supersede(self, tenant: str, old_uid: str, new: Fact, at: datetime) -> Fact | None:
        async def work(tx: AsyncTransaction) -> Fact | None:
            if not await tx_rows(tx, _GET_FACT, {"tenant": tenant, "uid": old_uid}):
                await tx.rollback()
                return None
            stored = await _insert(tx, new)
            params = {"tenant": tenant, "uid": old_uid, "at": at, "by": new.uid}
            await tx_run(tx, _CLOSE_FACT, params)
            return stored

        return await self._tx(work)

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the fact and its edges, re-opening what it superseded; True if it existed."""

        async def work(tx: AsyncTransaction) -> bool:
            if not await tx_rows(tx, _GET_FACT, {"tenant": tenant, "uid": uid}):
                return False
            await tx_run(tx, _REOPEN_SUPERSEDED, {"tenant": tenant, "uid": uid})
            rows = await tx_rows(tx, _DELETE_FACT, {"tenant": tenant, "uid": uid})
            return bool(rows and rows[0]["deleted"])

        return await self._tx(work)

    async def get(self, tenant: str, uid: str) -> Fact | None:
        """The fact with this uid, or None."""
        rows = await self._read(_GET_FACT, tenant=tenant, uid=uid)
        return fact_of(rows[0]["f"]) if rows else None

    async def _get_many(self, tenant: str, uids: list[str]) -> list[Fact]:
        rows = await self._read(_GET_FACTS, tenant=tenant, uids=uids)
        return [fact_of(row["f"]) for row in rows]

    async def sources(self, tenant: str, fact_uid: str) -> list[str]:
        """Uids of episodes that state the fact, sorted."""
        rows = await self._read(_FACT_SOURCES, tenant=tenant, uid=fact_uid)
        return sorted(row["uid"] for row in rows)

    async def _sources_many(self, tenant: str, uids: list[str]) -> dict[str, list[str]]:
        rows = await self._read(_SOURCES_OF_FACTS, tenant=tenant, uids=uids)
        return {row["fact"]: list(row["episodes"]) for row in rows}

    async def _link_subject(self, tenant: str, fact_uid: str, key: str) -> bool:
        rows = await self._write(_LINK_SUBJECT, tenant=tenant, uid=fact_uid, key=key)
        return bool(rows and rows[0]["linked"])

    async def _link_cause(self, tenant: str, fact_uid: str, cause_uid: str) -> bool:
        rows = await self._write(_LINK_CAUSE, tenant=tenant, fact=fact_uid, cause=cause_uid)
        return bool(rows and rows[0]["linked"])

    async def causes(self, tenant: str, fact_uid: str) -> list[Cause]:
        """What led to the fact (LED_TO edges into it), by (kind, uid)."""
        rows = await self._read(_CAUSES_OF, tenant=tenant, uid=fact_uid)
        return sorted(
            (Cause(kind=row["kind"], uid=row["uid"]) for row in rows), key=lambda c: (c.kind, c.uid)
        )

    async def stated_by(self, tenant: str, episode_uid: str) -> list[str]:
        """Uids of the facts this episode states (STATES), sorted."""
        rows = await self._read(_STATED_BY, tenant=tenant, uid=episode_uid)
        return [str(r["uid"]) for r in rows]

    async def _list(self, tenant: str, include_superseded: bool, flt: FactFilter) -> list[Fact]:
        rows = await self._read(
            _LIST_FACTS,
            tenant=tenant,
            all=include_superseded,
            kinds=None if flt.kinds is None else [k.value for k in flt.kinds],
            subject=flt.subject,
            attribute=flt.attribute,
        )
        return [fact_of(row["f"]) for row in rows]
