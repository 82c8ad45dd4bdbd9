"""Schema 1 -> 2, migrated by setup: a store written before episode identity became the source
keeps every episode, edge and the chain, and then accepts the same content twice; its facts
read with the version-2 defaults and take part in every new query."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from memory.schema import (
    SCHEMA_VERSION,
    USER_SUBJECT,
    EpisodeSource,
    Fact,
    FactKind,
    FactPrecision,
)
from memory.stores.base import GraphStore
from memory.stores.sqlite import SqliteGraphStore

from ._support import T0, at, new_episode

V1_EPISODES = """CREATE TABLE episodes (
    uid TEXT PRIMARY KEY, tenant TEXT NOT NULL, thread_id TEXT NOT NULL, content TEXT NOT NULL,
    user_text TEXT NOT NULL, agent_text TEXT NOT NULL, created_at TEXT NOT NULL,
    last_accessed TEXT, access_count INTEGER NOT NULL DEFAULT 0, ess TEXT, status TEXT NOT NULL,
    archived INTEGER NOT NULL DEFAULT 0, utility_score REAL NOT NULL DEFAULT 0,
    salience REAL NOT NULL DEFAULT 0.5, content_hash TEXT NOT NULL,
    UNIQUE (tenant, content_hash)
)"""


def make_v1(path: Path, store: SqliteGraphStore) -> None:
    """Turn a set-up file into what schema 1 made: the old episodes table, version 1."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("PRAGMA legacy_alter_table = ON")  # keep other tables' REFERENCES as they are
        conn.execute("BEGIN")
        conn.execute("ALTER TABLE episodes RENAME TO episodes_new")
        conn.execute(V1_EPISODES)
        # Version 1 hashed the content (unique per tenant); the uid stands in for the hash.
        columns = ", ".join(
            "uid" if r[1] == "content_hash" else r[1]
            for r in conn.execute("PRAGMA table_info(episodes)")
        )
        conn.execute(f"INSERT INTO episodes SELECT {columns} FROM episodes_new")  # noqa: S608
        conn.execute("DROP TABLE episodes_new")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        conn.execute("COMMIT")
    finally:
        conn.close()


async def test_sqlite_v1_file_migrates_keeping_everything(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    store = SqliteGraphStore(path)
    await store.setup()
    for minute, uid in [(0, "a"), (1, "b"), (2, "c")]:
        await store.episodes.create(new_episode("t1", f"turn {uid}", minute, uid=uid))
    await store.topics.link("t1", "b", ["tea"])
    await store.close()
    store = SqliteGraphStore(path)
    make_v1(path, store)
    try:
        assert await store.schema_version() == 1
        await store.setup()
        assert await store.schema_version() == SCHEMA_VERSION
        assert await store.episodes.list_uids("t1") == ["a", "b", "c"]
        assert [n.episode.uid for n in await store.episodes.neighbours("t1", "b", 1)] == ["a", "c"]
        assert await store.topics.of_episode("t1", "b") == ["tea"]
        again = await store.episodes.create(new_episode("t1", "turn a", 9, uid="a-again"))
        assert again.duplicate is False
        assert await store.episodes.count("t1") == 4
    finally:
        await store.close()


@pytest.mark.neo4j
async def test_neo4j_v1_constraint_is_dropped(neo4j_graph: GraphStore) -> None:
    store = neo4j_graph
    await store._query(  # type: ignore[attr-defined]
        "CREATE CONSTRAINT episode_hash IF NOT EXISTS FOR (n:Episode) "
        "REQUIRE (n.tenant, n.content_hash) IS UNIQUE",
        {},
        write=True,
        lazy_setup=False,
    )
    await store._query(  # type: ignore[attr-defined]
        "MATCH (m:MnemeMeta {key: 'schema_version'}) SET m.value = 1",
        {},
        write=True,
        lazy_setup=False,
    )
    await store.setup()
    assert await store.schema_version() == SCHEMA_VERSION
    names = {
        row["name"]
        for row in await store._query(  # type: ignore[attr-defined]
            "SHOW CONSTRAINTS YIELD name", {}, write=False, lazy_setup=False
        )
    }
    assert "episode_hash" not in names
    await store.episodes.create(new_episode("t1", "same", 0, uid="one"))
    assert (await store.episodes.create(new_episode("t1", "same", 1, uid="two"))).duplicate is False


async def test_sqlite_v4_file_drops_the_content_hash(tmp_path: Path) -> None:
    """Schema 4 -> 5: the unread `content_hash` column goes; every episode stays, new ones write."""
    path = tmp_path / "v4.sqlite3"
    store = SqliteGraphStore(path)
    await store.setup()
    await store.episodes.create(new_episode("t1", "turn a", 0, uid="a"))
    await store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("ALTER TABLE episodes ADD COLUMN content_hash TEXT NOT NULL DEFAULT 'h'")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    finally:
        conn.close()
    store = SqliteGraphStore(path)
    try:
        await store.setup()
        assert await store.schema_version() == SCHEMA_VERSION
        await store.episodes.create(new_episode("t1", "turn b", 1, uid="b"))
        assert await store.episodes.list_uids("t1") == ["a", "b"]
    finally:
        await store.close()
    conn = sqlite3.connect(path)
    try:
        assert "content_hash" not in {r[1] for r in conn.execute("PRAGMA table_info(episodes)")}
    finally:
        conn.close()


@pytest.mark.neo4j
async def test_neo4j_v4_episodes_lose_the_content_hash(neo4j_graph: GraphStore) -> None:
    store = neo4j_graph
    await store.episodes.create(new_episode("t1", "turn a", 0, uid="a"))
    await store._query(  # type: ignore[attr-defined]
        "MATCH (e:Episode {uid: 'a'}) SET e.content_hash = 'h' WITH 1 AS one "
        "MATCH (m:MnemeMeta {key: 'schema_version'}) SET m.value = 4",
        {},
        write=True,
        lazy_setup=False,
    )
    await store.setup()
    assert await store.schema_version() == SCHEMA_VERSION
    rows = await store._query(  # type: ignore[attr-defined]
        "MATCH (e:Episode {uid: 'a'}) RETURN e.content_hash AS hash", {}, write=False
    )
    assert rows == [{"hash": None}]
    assert await store.episodes.list_uids("t1") == ["a"]


V1_FACTS = """CREATE TABLE facts (
    uid TEXT PRIMARY KEY, tenant TEXT NOT NULL, text TEXT NOT NULL, confidence REAL NOT NULL,
    valid_from TEXT NOT NULL, valid_to TEXT, superseded_by TEXT
)"""
OLD = Fact(uid="f-v1", tenant="t1", text="likes tea", confidence=0.7, valid_from=T0)


async def check_old_fact(store: GraphStore) -> None:
    """The version-1 fact reads with the defaults, is found by the new filters and can be
    superseded by a typed fact."""
    assert await store.facts.get("t1", "f-v1") == OLD
    assert OLD.kind is FactKind.ATTRIBUTE and OLD.subject == USER_SUBJECT
    assert await store.facts.list("t1", subject=USER_SUBJECT, attribute="") == [OLD]
    assert await store.facts.list("t1", kinds=[FactKind.ATTRIBUTE]) == [OLD]
    new = Fact(uid="f-v2", tenant="t1", text="likes coffee", valid_from=at(5), concepts=("drink",))
    await store.facts.supersede("t1", "f-v1", new, at(5))
    assert [f.uid for f in await store.facts.list("t1")] == ["f-v2"]
    assert await store.facts.get_many("t1", ["f-v2"]) == [new]


async def test_sqlite_setup_adds_the_new_fact_columns(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.execute(V1_FACTS)
    conn.execute(
        "INSERT INTO facts VALUES (?, ?, ?, ?, ?, NULL, NULL)",
        ("f-v1", "t1", "likes tea", 0.7, T0.isoformat(timespec="microseconds")),
    )
    conn.close()

    store = SqliteGraphStore(path)
    try:
        await store.setup()
        assert await store.schema_version() == SCHEMA_VERSION
        await store.setup()  # idempotent on a migrated file
        await check_old_fact(store)
    finally:
        await store.close()
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(facts)")}
    assert {"kind", "subject", "attribute", "value", "learned_at", "grounding"} <= columns


async def test_a_fact_node_of_version_1_reads_with_the_defaults(graph: GraphStore) -> None:
    if graph.backend == "sqlite":
        conn = sqlite3.connect(graph.path, isolation_level=None)  # type: ignore[attr-defined]
        conn.execute(
            "INSERT INTO facts (uid, tenant, text, confidence, valid_from) VALUES (?, ?, ?, ?, ?)",
            ("f-v1", "t1", "likes tea", 0.7, T0.isoformat(timespec="microseconds")),
        )
        conn.close()
    else:
        import neo4j

        password = os.environ.get("NEO4J_PASSWORD")
        auth = None if not password else (os.environ.get("NEO4J_USER", "neo4j"), password)
        driver = neo4j.AsyncGraphDatabase.driver(os.environ["NEO4J_URI"], auth=auth)
        async with driver.session(database=os.environ.get("NEO4J_DATABASE", "neo4j")) as s:
            await s.run(
                "CREATE (:Fact {uid: 'f-v1', tenant: 't1', text: 'likes tea', confidence: 0.7, "
                "valid_from: $at})",
                at=T0,
            )
        await driver.close()
    await check_old_fact(graph)


V5_FACTS = [
    Fact(uid="f-blood", tenant="t1", text="blood type O", valid_from=T0, attribute="Blood type"),
    Fact(
        uid="f-sister",
        tenant="t1",
        text="the user's sister is Carla",
        valid_from=T0,
        kind=FactKind.RELATIONSHIP,
        attribute="sister",
    ),
    Fact(uid="f-home", tenant="t1", text="lives in Lisbon", valid_from=T0, attribute="home"),
    Fact(
        uid="f-allergy",
        tenant="t1",
        text="allergic to nuts",
        valid_from=T0,
        attribute="allergy:nuts",
    ),
]
V5_PRECISION = {
    "f-blood": FactPrecision.UNBOUNDED,
    "f-sister": FactPrecision.UNBOUNDED,
    "f-home": FactPrecision.RELATIVE,
    "f-allergy": FactPrecision.UNBOUNDED,
}
"""What schema 6 makes of schema 5's facts: timeless by their kind and attribute, else relative."""


async def write_v5_records(store: GraphStore) -> None:
    for minute, uid in enumerate("abc"):
        await store.episodes.create(new_episode("t1", f"turn {uid}", minute, uid=uid))
    for fact in V5_FACTS:  # a and b state every fact, c only the home: no turn is a sole source
        await store.facts.add(fact, "a")
        await store.facts.cite("t1", fact.uid, "b")
    await store.facts.cite("t1", "f-home", "c")


async def check_v6(store: GraphStore) -> None:
    assert await store.schema_version() == SCHEMA_VERSION
    episode = await store.episodes.get("t1", "a")
    assert episode is not None and episode.source is EpisodeSource.STATED
    facts = {f.uid: f.precision for f in await store.facts.get_many("t1", list(V5_PRECISION))}
    assert facts == V5_PRECISION
    # What sleep reads: a and b state current timeless facts, c only a fact of the present.
    assert await store.episodes.sole_evidence("t1", ["a", "b", "c"]) == {"a", "b"}


async def test_sqlite_v5_file_gains_sources_and_precisions(tmp_path: Path) -> None:
    """Schema 5 -> 6: episodes get their source (stated), facts their temporal precision from
    their kind and attribute."""
    path = tmp_path / "v5.sqlite3"
    store = SqliteGraphStore(path)
    await store.setup()
    await write_v5_records(store)
    await store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("ALTER TABLE episodes DROP COLUMN source")
        conn.execute("ALTER TABLE facts DROP COLUMN precision")
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    finally:
        conn.close()
    store = SqliteGraphStore(path)
    try:
        assert await store.schema_version() == 5
        await store.setup()
        await check_v6(store)
        await store.setup()  # idempotent on a migrated file
        await check_v6(store)
    finally:
        await store.close()


@pytest.mark.neo4j
async def test_neo4j_v5_nodes_gain_sources_and_precisions(neo4j_graph: GraphStore) -> None:
    store = neo4j_graph
    await write_v5_records(store)
    await store._query(  # type: ignore[attr-defined]
        "MATCH (e:Episode {uid: 'a'}) REMOVE e.source WITH 1 AS one "
        "MATCH (f:Fact {tenant: 't1'}) REMOVE f.precision WITH 1 AS two "
        "MATCH (m:MnemeMeta {key: 'schema_version'}) SET m.value = 5",
        {},
        write=True,
        lazy_setup=False,
    )
    rows = await store._query(  # type: ignore[attr-defined]
        "MATCH (f:Fact {tenant: 't1'}) RETURN f.precision AS p", {}, write=False
    )
    assert {r["p"] for r in rows} == {None}
    await store.setup()
    await check_v6(store)
