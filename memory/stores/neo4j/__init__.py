"""The production graph store: Neo4j over Bolt, through the official async driver.

`connection` owns the driver, sessions, retries and setup; each kind module (episodes, topics,
entities, beliefs, facts, features, goals and emotions, snapshots, summaries, tenant_state,
leases) holds its parameterised Cypher and its
constraints as a mixin, and `Neo4jGraphStore` is assembled from them here. Properties are mapped
from the record models by `props`. It knows nothing of LangGraph, vectors or scoring.

Needs Neo4j 5.23 or later (Community is enough): scoped `CALL (x) { ... }` subqueries and the
`ANY SHORTEST` path selector.
"""

from __future__ import annotations

from memory.stores.base import GraphStore
from memory.stores.neo4j import (
    beliefs,
    concepts,
    connection,
    consolidation,
    coretrieval,
    entities,
    episodes,
    facts,
    features,
    goals,
    leases,
    snapshots,
    summaries,
    tenant_state,
    topics,
)

__all__ = ["Neo4jGraphStore"]


class Neo4jGraphStore(
    episodes.Neo4jEpisodes,
    topics.Neo4jTopics,
    entities.Neo4jEntities,
    beliefs.Neo4jBeliefs,
    facts.Neo4jFacts,
    features.Neo4jFeatures,
    summaries.Neo4jSummaries,
    snapshots.Neo4jSnapshots,
    tenant_state.Neo4jTenantState,
    consolidation.Neo4jConsolidation,
    concepts.Neo4jConcepts,
    coretrieval.Neo4jCoRetrieval,
    leases.Neo4jLeases,
    goals.Neo4jGoals,
    GraphStore,
):
    """GraphStore over a Neo4j 5 server (Community or Enterprise), one driver per instance."""

    backend = "neo4j"
    schema = (
        *connection.SCHEMA,
        *episodes.SCHEMA,
        *topics.SCHEMA,
        *entities.SCHEMA,
        *beliefs.SCHEMA,
        *facts.SCHEMA,
        *tenant_state.SCHEMA,
        *snapshots.SCHEMA,
        *features.SCHEMA,
        *concepts.SCHEMA,
        *goals.SCHEMA,
        *summaries.SCHEMA,
    )
    migrations = episodes.MIGRATIONS
