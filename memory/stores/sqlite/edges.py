"""SQL of the reads that follow an episode's edges to records of other kinds: how connected
it is, whether knowledge rests on it alone, its topics and entities, the concepts and diary
entries that hold it. `SqliteEpisodes` runs them; they have no tables of their own."""

from __future__ import annotations

CONNECTIONS = """
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
SOLE = """
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
UNION
SELECT DISTINCT s.episode_uid AS uid
FROM states s JOIN facts f ON f.uid = s.fact_uid
WHERE +s.tenant = :tenant AND +f.tenant = :tenant AND f.superseded_by IS NULL
  AND f.precision = 'unbounded' AND s.episode_uid IN (SELECT value FROM json_each(:uids))
"""

TERMS = """
SELECT episode_uid AS uid, slug AS term FROM discusses
WHERE +tenant = :tenant AND episode_uid IN (SELECT value FROM json_each(:uids))
UNION
SELECT episode_uid AS uid, entity_key AS term FROM mentions
WHERE +tenant = :tenant AND episode_uid IN (SELECT value FROM json_each(:uids))
ORDER BY uid, term
"""

GROUP_CONCEPTS = (
    "SELECT concept_uid FROM includes_episode WHERE episode_uid = ? AND tenant = ? "
    "ORDER BY concept_uid"
)
GROUP_DIARY = (
    "SELECT diary_uid FROM recounts WHERE episode_uid = ? AND tenant = ? ORDER BY diary_uid"
)
EXISTING = "SELECT uid FROM episodes WHERE +tenant = ? AND uid IN (SELECT value FROM json_each(?))"
