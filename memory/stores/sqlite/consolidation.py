"""Consolidation's reads and fact deletion on SQLite (no tables of its own)."""

from __future__ import annotations

from memory.stores.graph.consolidation import ConsolidationStore
from memory.stores.sqlite.connection import Conn, SqliteConnection, immediate
from memory.stores.sqlite.rows import json_list

_CONNECTIONS = """
SELECT e.uid AS uid,
  (SELECT COUNT(*) FROM discusses d WHERE d.episode_uid = e.uid)
  + (SELECT COUNT(*) FROM mentions m WHERE m.episode_uid = e.uid)
  + (SELECT COUNT(*) FROM states s WHERE s.episode_uid = e.uid)
  + (SELECT COUNT(*) FROM evidence v WHERE v.episode_uid = e.uid)
  + (SELECT COUNT(*) FROM co_retrieved c WHERE c.a = e.uid AND c.weight >= :strong)
  + (SELECT COUNT(*) FROM co_retrieved c WHERE c.b = e.uid AND c.weight >= :strong) AS n
FROM episodes e
WHERE +e.tenant = :tenant AND e.uid IN (SELECT value FROM json_each(:uids))
"""

# An episode is sole evidence when some active belief or current fact it backs has no other
# episode behind it.
_SOLE = """
SELECT DISTINCT v.episode_uid AS uid
FROM evidence v JOIN beliefs b ON b.uid = v.belief_uid
WHERE +v.tenant = :tenant AND +b.tenant = :tenant AND b.confidence > 0
  AND v.episode_uid IN (SELECT value FROM json_each(:uids))
  AND NOT EXISTS (SELECT 1 FROM evidence o
                  WHERE o.belief_uid = v.belief_uid AND o.episode_uid <> v.episode_uid)
UNION
SELECT DISTINCT s.episode_uid AS uid
FROM states s JOIN facts f ON f.uid = s.fact_uid
WHERE +s.tenant = :tenant AND +f.tenant = :tenant AND f.superseded_by IS NULL
  AND s.episode_uid IN (SELECT value FROM json_each(:uids))
  AND NOT EXISTS (SELECT 1 FROM states o
                  WHERE o.fact_uid = s.fact_uid AND o.episode_uid <> s.episode_uid)
"""

_STATED_BY = (
    "SELECT fact_uid AS uid FROM states WHERE tenant = ? AND episode_uid = ? ORDER BY fact_uid"
)


def _delete_fact(conn: Conn, tenant: str, uid: str) -> bool:
    with immediate(conn):
        conn.execute("DELETE FROM led_to WHERE tenant = ? AND cause_uid = ?", (tenant, uid))
        gone = conn.execute("DELETE FROM facts WHERE tenant = ? AND uid = ?", (tenant, uid))
        return gone.rowcount > 0  # STATES, ABOUT and its own LED_TO go by ON DELETE CASCADE


class SqliteConsolidation(SqliteConnection, ConsolidationStore):
    """The consolidation part of `SqliteGraphStore`."""

    async def _episode_connections(
        self, tenant: str, uids: list[str], min_link_weight: float
    ) -> dict[str, int]:
        params = {"tenant": tenant, "uids": json_list(uids), "strong": min_link_weight}
        rows = await self._fetch(_CONNECTIONS, params)
        return {str(r["uid"]): int(r["n"]) for r in rows}

    async def _sole_evidence(self, tenant: str, uids: list[str]) -> set[str]:
        rows = await self._fetch(_SOLE, {"tenant": tenant, "uids": json_list(uids)})
        return {str(r["uid"]) for r in rows}

    async def facts_stated_by(self, tenant: str, episode_uid: str) -> list[str]:
        """Uids of the facts this episode states (STATES), sorted."""
        rows = await self._fetch(_STATED_BY, (tenant, episode_uid))
        return [str(r["uid"]) for r in rows]

    async def delete_fact(self, tenant: str, uid: str) -> bool:
        """Delete a fact and its edges (STATES, ABOUT, LED_TO either way). True if it existed."""
        return await self._run(_delete_fact, tenant, uid)
