"""Schema 1 -> 2: a store written before episode identity became the source migrates in setup,
keeping every episode, edge and the chain, and then accepts the same content twice."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory.schema import SCHEMA_VERSION
from memory.stores.base import GraphStore
from memory.stores.sqlite import SqliteGraphStore

from ._support import new_episode

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
        conn.execute("INSERT INTO episodes SELECT * FROM episodes_new")
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
        await store.create_episode(new_episode("t1", f"turn {uid}", minute, uid=uid))
    await store.link_topics("t1", "b", ["tea"])
    await store.close()
    store = SqliteGraphStore(path)
    make_v1(path, store)
    try:
        assert await store.schema_version() == 1
        await store.setup()
        assert await store.schema_version() == SCHEMA_VERSION
        assert await store.list_episode_uids("t1") == ["a", "b", "c"]
        assert [n.episode.uid for n in await store.temporal_neighbours("t1", "b", 1)] == ["a", "c"]
        assert await store.episode_topics("t1", "b") == ["tea"]
        again = await store.create_episode(new_episode("t1", "turn a", 9, uid="a-again"))
        assert again.duplicate is False
        assert await store.count_episodes("t1") == 4
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
    await store.create_episode(new_episode("t1", "same", 0, uid="one"))
    assert (await store.create_episode(new_episode("t1", "same", 1, uid="two"))).duplicate is False
