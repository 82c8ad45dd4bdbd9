"""Co-retrieval links on Neo4j: (a:Episode)-[:CO_RETRIEVED]->(b:Episode), a.uid < b.uid,
written inside `record_access`. DETACH DELETE of an episode removes its links."""

from __future__ import annotations

from datetime import datetime

from neo4j import AsyncTransaction

from memory.stores.graph.coretrieval import CoRetrievalStore, Link, link_from
from memory.stores.neo4j.connection import tx_run
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import dt

# `weight` is `memory.sleep.coretrieval.link_weight(count, 0)` of the new count.
_LINK_PAIRS = """
UNWIND $pairs AS pair
MATCH (a:Episode {uid: pair[0]}) WHERE a.tenant = $tenant
MATCH (b:Episode {uid: pair[1]}) WHERE b.tenant = $tenant
MERGE (a)-[l:CO_RETRIEVED]->(b)
ON CREATE SET l.tenant = $tenant, l.count = 0
WITH l, l.count + 1 AS n
SET l.count = n, l.last_at = $at, l.weight = log(1.0 + n)
"""

_LINKS = """
MATCH (a:Episode)-[l:CO_RETRIEVED]->(b:Episode)
WHERE l.tenant = $tenant AND a.tenant = $tenant AND b.tenant = $tenant
  AND ($uids IS NULL OR a.uid IN $uids OR b.uid IN $uids)
RETURN a.uid AS a, b.uid AS b, l.count AS count, l.last_at AS last_at, l.weight AS weight
"""

_REWEIGH = """
UNWIND $rows AS row
MATCH (a:Episode {uid: row.a})-[l:CO_RETRIEVED]->(b:Episode {uid: row.b})
WHERE a.tenant = $tenant AND b.tenant = $tenant
SET l.weight = row.weight
"""

_DROP = """
UNWIND $rows AS row
MATCH (a:Episode {uid: row.a})-[l:CO_RETRIEVED]->(b:Episode {uid: row.b})
WHERE a.tenant = $tenant AND b.tenant = $tenant
DELETE l
"""


async def link_pairs(
    tx: AsyncTransaction, tenant: str, pairs: list[tuple[str, str]], at: datetime
) -> None:
    """Strengthen each pair's link; the caller holds the tenant's lock (taken first in its
    transaction), without which two writers' MERGE of one edge could create two."""
    params = {"tenant": tenant, "pairs": [list(p) for p in pairs], "at": at}
    await tx_run(tx, _LINK_PAIRS, params)


class Neo4jCoRetrieval(Neo4jKind, CoRetrievalStore):
    """The co-retrieval part of `Neo4jGraphStore`."""

    async def _reweigh(
        self, tenant: str, weights: dict[tuple[str, str], float], drop: list[tuple[str, str]]
    ) -> None:
        rows = [{"a": a, "b": b, "weight": w} for (a, b), w in weights.items()]
        gone = [{"a": a, "b": b} for a, b in drop]

        async def work(tx: AsyncTransaction) -> None:
            if rows:
                await tx_run(tx, _REWEIGH, {"tenant": tenant, "rows": rows})
            if gone:
                await tx_run(tx, _DROP, {"tenant": tenant, "rows": gone})

        await self._tx(work)

    async def _list(self, tenant: str, uids: list[str] | None) -> list[Link]:
        rows = await self._read(_LINKS, tenant=tenant, uids=uids)
        return [link_from(r, dt(r["last_at"])) for r in rows]
