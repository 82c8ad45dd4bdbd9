"""Facts and STATES edges on Neo4j: their constraint, index and Cypher."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from neo4j import AsyncTransaction

from memory.schema import Fact
from memory.stores.errors import uid_taken
from memory.stores.graph.facts import FactStore
from memory.stores.neo4j.connection import Neo4jConnection, tx_rows, tx_run
from memory.stores.neo4j.props import from_props, to_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT fact_uid IF NOT EXISTS FOR (n:Fact) REQUIRE n.uid IS UNIQUE",
    "CREATE INDEX fact_tenant IF NOT EXISTS FOR (n:Fact) ON (n.tenant)",
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

_GET_FACT = "MATCH (f:Fact {uid: $uid}) WHERE f.tenant = $tenant RETURN f {.*} AS f"

_LIST_FACTS = """
MATCH (f:Fact) WHERE f.tenant = $tenant AND ($all OR f.superseded_by IS NULL)
RETURN f {.*} AS f ORDER BY f.valid_from, f.uid
"""

_FACT_SOURCES = """
MATCH (e:Episode)-[:STATES]->(f:Fact {uid: $uid}) WHERE f.tenant = $tenant
RETURN DISTINCT e.uid AS uid
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


class Neo4jFacts(Neo4jConnection, FactStore):
    """The fact part of `Neo4jGraphStore`."""

    async def _add_fact(self, fact: Fact, episode_uid: str | None) -> Fact:
        async def work(tx: AsyncTransaction) -> Fact:
            stored = await _insert(tx, fact)
            if episode_uid is not None:
                params = {"tenant": fact.tenant, "fact": fact.uid, "episode": episode_uid}
                await tx_run(tx, _CITE_FACT, params)
            return stored

        return await self._tx(work)

    async def cite_fact(self, tenant: str, fact_uid: str, episode_uid: str) -> None:
        """Add a STATES edge from another episode to an existing fact; idempotent."""
        await self._write(_CITE_FACT, tenant=tenant, fact=fact_uid, episode=episode_uid)

    async def _supersede_fact(
        self, tenant: str, old_uid: str, new: Fact, at: datetime
    ) -> Fact | None:
        async def work(tx: AsyncTransaction) -> Fact | None:
            if not await tx_rows(tx, _GET_FACT, {"tenant": tenant, "uid": old_uid}):
                await tx.rollback()
                return None
            stored = await _insert(tx, new)
            params = {"tenant": tenant, "uid": old_uid, "at": at, "by": new.uid}
            await tx_run(tx, _CLOSE_FACT, params)
            return stored

        return await self._tx(work)

    async def get_fact(self, tenant: str, uid: str) -> Fact | None:
        """The fact with this uid, or None."""
        rows = await self._read(_GET_FACT, tenant=tenant, uid=uid)
        return fact_of(rows[0]["f"]) if rows else None

    async def list_facts(self, tenant: str, *, include_superseded: bool = False) -> list[Fact]:
        """Facts of the tenant, by (valid_from, uid); current ones only unless asked."""
        rows = await self._read(_LIST_FACTS, tenant=tenant, all=include_superseded)
        return [fact_of(row["f"]) for row in rows]

    async def fact_sources(self, tenant: str, fact_uid: str) -> list[str]:
        """Uids of episodes that state the fact, sorted."""
        rows = await self._read(_FACT_SOURCES, tenant=tenant, uid=fact_uid)
        return sorted(row["uid"] for row in rows)
