"""The embedded graph store: one SQLite file, the default when no Neo4j is configured.

Tables mirror the graph: nodes are rows, edges are tables keyed by both ends, and traversals are
recursive CTEs. `connection` owns the file, its worker thread and setup; each kind module
(episodes, topics, entities, beliefs, facts, features, goals and emotions, snapshots, summaries,
tenant_state, leases) holds its tables' DDL and
SQL as a mixin, and `SqliteGraphStore` is assembled from them here. Every value is bound as a
parameter. It knows nothing of LangGraph, vectors or scoring.
"""

from __future__ import annotations

from memory.stores.base import GraphStore
from memory.stores.sqlite import (
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

__all__ = ["SqliteGraphStore"]


def _migrate_v1(conn: connection.Conn) -> None:
    """Schema 1 -> 2: episodes without the content-hash uniqueness; typed facts."""
    episodes.migrate_v1(conn)
    facts.migrate_v1(conn)


def _migrate_v2(conn: connection.Conn) -> None:
    """Schema 2 -> 3: pinned episodes (the co-retrieval links are a new table of the DDL)."""
    episodes.migrate_v2(conn)


def _migrate_v3(conn: connection.Conn) -> None:
    """Schema 3 -> 4: a concept's loop names its recurring emotion."""
    concepts.migrate_v3(conn)


class SqliteGraphStore(
    episodes.SqliteEpisodes,
    topics.SqliteTopics,
    entities.SqliteEntities,
    beliefs.SqliteBeliefs,
    facts.SqliteFacts,
    features.SqliteFeatures,
    summaries.SqliteSummaries,
    snapshots.SqliteSnapshots,
    tenant_state.SqliteTenantState,
    consolidation.SqliteConsolidation,
    concepts.SqliteConcepts,
    coretrieval.SqliteCoRetrieval,
    leases.SqliteLeases,
    goals.SqliteGoals,
    GraphStore,
):
    """GraphStore over one SQLite file (WAL, foreign keys), shareable by several processes."""

    backend = "sqlite"
    ddl = (
        *connection.DDL,
        *episodes.DDL,
        *topics.DDL,
        *entities.DDL,
        *beliefs.DDL,
        *facts.DDL,
        *tenant_state.DDL,
        *snapshots.DDL,
        *features.DDL,
        *concepts.DDL,
        *goals.DDL,
        *coretrieval.DDL,
        *summaries.DDL,
    )
    migrations = {1: _migrate_v1, 2: _migrate_v2, 3: _migrate_v3}
