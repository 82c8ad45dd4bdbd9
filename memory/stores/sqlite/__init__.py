"""The embedded graph store: one SQLite file, the default when no Neo4j is configured.

Tables mirror the graph: nodes are rows, edges are tables keyed by both ends, and traversals are
recursive CTEs. `connection` owns the file, its worker thread and setup; each kind module
(episodes, topics, entities, beliefs, facts, features, snapshots, summaries, tenant_state,
concepts and diary, co-retrieval links, leases, goals and emotions) holds its tables' DDL and
its SQL in an operations object over that one connection, and `SqliteGraphStore` composes them
here (`edges` holds the SQL of the episodes' reads across kinds). Every value is bound as a
parameter. It knows nothing of LangGraph, vectors or scoring.
"""

from __future__ import annotations

from memory.stores.base import GraphStore
from memory.stores.sqlite import (
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


def _migrate_v4(conn: connection.Conn) -> None:
    """Schema 4 -> 5: episodes lose `content_hash`, which nothing read."""
    if "content_hash" in {r[1] for r in conn.execute("PRAGMA table_info(episodes)")}:
        conn.execute("ALTER TABLE episodes DROP COLUMN content_hash")


def _migrate_v5(conn: connection.Conn) -> None:
    """Schema 5 -> 6: an episode's source (`stated` for every existing one), a fact's temporal
    precision."""
    connection.add_columns(conn, [("episodes", "source TEXT NOT NULL DEFAULT 'stated'")])
    facts.migrate_v5(conn)


class SqliteGraphStore(connection.SqliteConnection, GraphStore):
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
    migrations = {
        1: _migrate_v1,
        2: _migrate_v2,
        3: _migrate_v3,
        4: _migrate_v4,
        5: _migrate_v5,
    }

    def _compose(self) -> None:
        """One operations object per record kind, each over this store's connection."""
        self.episodes = episodes.SqliteEpisodes(self)
        self.topics = topics.SqliteTopics(self)
        self.entities = entities.SqliteEntities(self)
        self.beliefs = beliefs.SqliteBeliefs(self)
        self.facts = facts.SqliteFacts(self)
        self.features = features.SqliteFeatures(self)
        self.snapshots = snapshots.SqliteSnapshots(self)
        self.summaries = summaries.SqliteSummaries(self)
        self.state = tenant_state.SqliteTenantState(self)
        self.concepts = concepts.SqliteConcepts(self)
        self.diary = concepts.SqliteDiary(self)
        self.coretrieval = coretrieval.SqliteCoRetrieval(self)
        self.leases = leases.SqliteLeases(self)
        self.goals = goals.SqliteGoals(self)
        self.emotions = goals.SqliteEmotions(self)
