"""Cypher of the reads that follow an episode's edges to records of other kinds: how connected
it is, whether knowledge rests on it alone, its topics and entities, the concepts and diary
entries that hold it. `Neo4jEpisodes` runs them; they need no schema of their own."""

from __future__ import annotations

CONNECTIONS = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
RETURN e.uid AS uid,
  COUNT { (e)-[:DISCUSSES|MENTIONS|STATES|SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->() }
  + COUNT { (e)-[l:CO_RETRIEVED]-() WHERE l.weight >= $strong } AS n
"""

SOLE = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
WITH e
WHERE EXISTS {
    MATCH (e)-[:SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->(b:Belief)
    WHERE b.tenant = $tenant AND b.confidence > 0
      AND NOT EXISTS { MATCH (o:Episode)-[:SUPPORTS_BELIEF|CONTRADICTS_BELIEF]->(b) WHERE o <> e }
  } OR EXISTS {
    MATCH (e)-[:STATES]->(f:Fact)
    WHERE f.tenant = $tenant AND f.superseded_by IS NULL
      AND NOT EXISTS { MATCH (o:Episode)-[:STATES]->(f) WHERE o <> e }
  } OR EXISTS {
    MATCH (e)-[:STATES]->(f:Fact)
    WHERE f.tenant = $tenant AND f.superseded_by IS NULL AND f.precision = 'unbounded'
  }
RETURN DISTINCT e.uid AS uid
"""

GROUPS = """
MATCH (e:Episode {uid: $uid}) WHERE e.tenant = $tenant
MATCH (g)-[:INCLUDES|RECOUNTS]->(e) WHERE g.tenant = $tenant
RETURN g.uid AS uid, g:Concept AS concept ORDER BY uid
"""
TERMS = """
UNWIND $uids AS uid
MATCH (e:Episode {uid: uid}) WHERE e.tenant = $tenant
RETURN e.uid AS uid,
  COLLECT { MATCH (e)-[:DISCUSSES]->(t:Topic) RETURN t.slug AS term
            UNION MATCH (e)-[:MENTIONS]->(n:Entity) RETURN n.key AS term } AS terms
"""
