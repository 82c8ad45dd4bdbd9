"""The production graph store: Neo4j over Bolt, through the official async driver.

`connection` owns the driver, sessions, retries and setup; each kind module (episodes, topics,
entities, beliefs, facts, features, snapshots, summaries, tenant_state, concepts and diary,
co-retrieval links, leases, goals and emotions) holds its constraints and its parameterised
Cypher in an operations object over that one driver, and `Neo4jGraphStore` composes them here
(`edges` holds the Cypher of the episodes' reads across kinds). Properties are mapped from the
record models by `props`. It knows nothing of LangGraph, vectors or scoring.

Needs Neo4j 5.23 or later (Community is enough): scoped `CALL (x) { ... }` subqueries and the
`ANY SHORTEST` path selector.
"""

from __future__ import annotations

from memory.stores.base import GraphStore
from memory.stores.neo4j import (
    beliefs,
    concepts,
    connection,
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


class Neo4jGraphStore(connection.Neo4jConnection, GraphStore):
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

    def _compose(self) -> None:
        """One operations object per record kind, each over this store's connection."""
        self.episodes = episodes.Neo4jEpisodes(self)
        self.topics = topics.Neo4jTopics(self)
        self.entities = entities.Neo4jEntities(self)
        self.beliefs = beliefs.Neo4jBeliefs(self)
        self.facts = facts.Neo4jFacts(self)
        self.features = features.Neo4jFeatures(self)
        self.snapshots = snapshots.Neo4jSnapshots(self)
        self.summaries = summaries.Neo4jSummaries(self)
        self.state = tenant_state.Neo4jTenantState(self)
        self.concepts = concepts.Neo4jConcepts(self)
        self.diary = concepts.Neo4jDiary(self)
        self.coretrieval = coretrieval.Neo4jCoRetrieval(self)
        self.leases = leases.Neo4jLeases(self)
        self.goals = goals.Neo4jGoals(self)
        self.emotions = goals.Neo4jEmotions(self)
