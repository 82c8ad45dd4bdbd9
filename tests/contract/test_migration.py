"""A store written by schema version 1 is migrated by setup: its facts read with the version-2
defaults and take part in every new query."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from memory.schema import SCHEMA_VERSION, USER_SUBJECT, Fact, FactKind
from memory.stores.base import GraphStore
from memory.stores.sqlite import SqliteGraphStore

from ._support import T0, at

V1_FACTS = """CREATE TABLE facts (
    uid TEXT PRIMARY KEY, tenant TEXT NOT NULL, text TEXT NOT NULL, confidence REAL NOT NULL,
    valid_from TEXT NOT NULL, valid_to TEXT, superseded_by TEXT
)"""
OLD = Fact(uid="f-v1", tenant="t1", text="likes tea", confidence=0.7, valid_from=T0)


async def check_old_fact(store: GraphStore) -> None:
    """The version-1 fact reads with the defaults, is found by the new filters and can be
    superseded by a typed fact."""
    assert await store.get_fact("t1", "f-v1") == OLD
    assert OLD.kind is FactKind.ATTRIBUTE and OLD.subject == USER_SUBJECT
    assert await store.list_facts("t1", subject=USER_SUBJECT, attribute="") == [OLD]
    assert await store.list_facts("t1", kinds=[FactKind.ATTRIBUTE]) == [OLD]
    new = Fact(uid="f-v2", tenant="t1", text="likes coffee", valid_from=at(5), concepts=("drink",))
    await store.supersede_fact("t1", "f-v1", new, at(5))
    assert [f.uid for f in await store.list_facts("t1")] == ["f-v2"]
    assert await store.get_facts("t1", ["f-v2"]) == [new]


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
