"""Semantic features and SHOWS edges on Neo4j: their constraint, index and Cypher."""

from __future__ import annotations

from typing import Any

from memory.schema import Feature, FeatureCategory
from memory.stores.errors import uid_taken
from memory.stores.graph.features import FeatureStore
from memory.stores.neo4j.kind import Neo4jKind
from memory.stores.neo4j.props import from_props, to_props

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT feature_uid IF NOT EXISTS FOR (n:Feature) REQUIRE n.uid IS UNIQUE",
    "CREATE INDEX feature_tenant IF NOT EXISTS FOR (n:Feature) ON (n.tenant)",
)

# Replacing a feature sets every field but its identity; no row back: another tenant's uid.
_UPSERT_FEATURE = """
MERGE (f:Feature {uid: $uid})
ON CREATE SET f.tenant = $tenant
WITH f WHERE f.tenant = $tenant
SET f += $props
WITH f
OPTIONAL MATCH (e:Episode {uid: $episode}) WHERE e.tenant = $tenant
FOREACH (_ IN CASE WHEN e IS NULL THEN [] ELSE [1] END | MERGE (e)-[:SHOWS]->(f))
RETURN f {.*} AS f
"""

_GET_FEATURE = "MATCH (f:Feature {uid: $uid}) WHERE f.tenant = $tenant RETURN f {.*} AS f"
_GET_FEATURES = "MATCH (f:Feature) WHERE f.uid IN $uids AND f.tenant = $tenant RETURN f {.*} AS f"
_LIST_FEATURES = """
MATCH (f:Feature) WHERE f.tenant = $tenant AND ($category IS NULL OR f.category = $category)
RETURN f {.*} AS f ORDER BY f.category, f.created_at, f.uid
"""
_DELETE_FEATURE = """
MATCH (f:Feature {uid: $uid}) WHERE f.tenant = $tenant
DETACH DELETE f
RETURN count(*) AS deleted
"""
_FEATURE_SOURCES = """
MATCH (e:Episode)-[:SHOWS]->(f:Feature {uid: $uid}) WHERE f.tenant = $tenant
RETURN DISTINCT e.uid AS uid
"""


def feature_of(props: dict[str, Any]) -> Feature:
    """A feature node's properties as a record."""
    return from_props(Feature, props)


class Neo4jFeatures(Neo4jKind, FeatureStore):
    """The feature part of `Neo4jGraphStore`."""

    async def _upsert(self, feature: Feature, episode_uid: str | None) -> Feature:
        rows = await self._write(
            _UPSERT_FEATURE,
            uid=feature.uid,
            tenant=feature.tenant,
            props=to_props(feature, exclude=("uid", "tenant")),
            episode=episode_uid,
        )
        if not rows:
            raise uid_taken("feature", feature.uid)
        return feature_of(rows[0]["f"])

    async def get(self, tenant: str, uid: str) -> Feature | None:
        """The feature with this uid, or None."""
        rows = await self._read(_GET_FEATURE, tenant=tenant, uid=uid)
        return feature_of(rows[0]["f"]) if rows else None

    async def _get_many(self, tenant: str, uids: list[str]) -> list[Feature]:
        rows = await self._read(_GET_FEATURES, tenant=tenant, uids=uids)
        return [feature_of(row["f"]) for row in rows]

    async def delete(self, tenant: str, uid: str) -> bool:
        """Delete the feature and its SHOWS edges; False if it did not exist."""
        rows = await self._write(_DELETE_FEATURE, tenant=tenant, uid=uid)
        return bool(rows and rows[0]["deleted"])

    async def sources(self, tenant: str, uid: str) -> list[str]:
        """Uids of the episodes that showed the feature, sorted."""
        rows = await self._read(_FEATURE_SOURCES, tenant=tenant, uid=uid)
        return sorted(row["uid"] for row in rows)

    async def _list(self, tenant: str, category: FeatureCategory | None) -> list[Feature]:
        rows = await self._read(
            _LIST_FEATURES, tenant=tenant, category=None if category is None else category.value
        )
        return [feature_of(row["f"]) for row in rows]
