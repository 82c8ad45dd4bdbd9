"""Concepts and diary entries (the daily sleep level's records): put replaces node and edges,
edges only to the tenant's own records, ordering, deletes, what an episode belongs to, and the
terms (topics + entities) of episodes. Exact values, the same on every backend."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory.schema import SCHEMA_VERSION, Concept, DiaryEntry, EntityType, Fact
from memory.stores.base import GraphStore, StoreError
from memory.stores.graph.concepts import Groups, Members
from memory.stores.sqlite import SqliteGraphStore

from ._support import at, new_episode


def concept(tenant: str, uid: str, minutes: float = 0, **extra: object) -> Concept:
    fields: dict[str, object] = {
        "uid": uid,
        "tenant": tenant,
        "label": f"label {uid}",
        "description": "comes up often",
        "terms": ("marathon", "training"),
        "episode_count": 3,
        "day_count": 3,
        "first_seen": at(minutes),
        "last_seen": at(minutes + 60),
        "loop": "Monday",
        "loop_count": 3,
        "updated_at": at(90),
    }
    return Concept.model_validate(fields | extra)


async def _story(graph: GraphStore, tenant: str) -> None:
    for i in range(4):
        await graph.episodes.create(new_episode(tenant, f"turn {i}", i, uid=f"{tenant}-e{i}"))
    fact = Fact(uid=f"{tenant}-f", tenant=tenant, text="runs marathons", valid_from=at(0))
    await graph.facts.add(fact, f"{tenant}-e0")


async def test_put_concept_round_trips_and_replaces_its_members(graph: GraphStore) -> None:
    await _story(graph, "t1")
    await _story(graph, "t2")
    c = concept("t1", "c1")
    stored = await graph.concepts.put(
        c, ["t1-e0", "t1-e1", "t1-e1", "t2-e2", "missing", ""], ["t1-f", "t2-f"]
    )
    assert stored == c
    assert await graph.concepts.get("t1", "c1") == c
    assert await graph.concepts.get("t2", "c1") is None
    assert await graph.concepts.members("t1", "c1") == Members(
        episodes=["t1-e0", "t1-e1"], facts=["t1-f"]
    )
    assert await graph.concepts.members("t2", "c1") == Members(episodes=[], facts=[])
    changed = concept("t1", "c1", label="running", episode_count=2, loop="", loop_count=0)
    await graph.concepts.put(changed, ["t1-e2", "t1-e3"], [])
    assert await graph.concepts.get("t1", "c1") == changed
    assert await graph.concepts.members("t1", "c1") == Members(
        episodes=["t1-e2", "t1-e3"], facts=[]
    )
    with pytest.raises(StoreError):
        await graph.concepts.put(concept("t2", "c1"), ["t2-e0"], [])
    assert await graph.concepts.members("t1", "c1") == Members(
        episodes=["t1-e2", "t1-e3"], facts=[]
    )


async def test_concepts_list_in_order_and_delete_keeps_members(graph: GraphStore) -> None:
    await _story(graph, "t1")
    await graph.concepts.put(concept("t1", "c-late", 10), ["t1-e0"], [])
    await graph.concepts.put(concept("t1", "c-b", 5), ["t1-e0", "t1-e1"], ["t1-f"])
    await graph.concepts.put(concept("t1", "c-a", 5), ["t1-e1"], [])
    assert [c.uid for c in await graph.concepts.list("t1")] == ["c-a", "c-b", "c-late"]
    assert await graph.concepts.list("t2") == []
    assert await graph.episodes.groups("t1", "t1-e0") == Groups(
        concepts=["c-b", "c-late"], diary=[]
    )
    assert not await graph.concepts.delete("t2", "c-b")
    assert await graph.concepts.delete("t1", "c-b")
    assert not await graph.concepts.delete("t1", "c-b")
    assert await graph.concepts.members("t1", "c-b") == Members(episodes=[], facts=[])
    assert await graph.episodes.get("t1", "t1-e1") is not None
    assert await graph.facts.get("t1", "t1-f") is not None
    assert await graph.episodes.groups("t1", "t1-e0") == Groups(concepts=["c-late"], diary=[])


async def test_deleting_a_member_drops_only_its_edge(graph: GraphStore) -> None:
    await _story(graph, "t1")
    await graph.concepts.put(concept("t1", "c1"), ["t1-e0", "t1-e1"], ["t1-f"])
    entry = DiaryEntry(uid="d1", tenant="t1", day="2024-05-01", text="A day.", created_at=at(0))
    await graph.diary.put(entry, ["t1-e0", "t1-e1"])
    assert await graph.episodes.delete("t1", "t1-e0")
    assert await graph.facts.delete("t1", "t1-f")
    assert await graph.concepts.members("t1", "c1") == Members(episodes=["t1-e1"], facts=[])
    assert await graph.diary.sources("t1", "d1") == ["t1-e1"]
    assert await graph.episodes.groups("t1", "t1-e0") == Groups(concepts=[], diary=[])
    assert await graph.episodes.groups("t1", "t1-e1") == Groups(concepts=["c1"], diary=["d1"])


async def test_diary_entries_round_trip_replace_and_delete(graph: GraphStore) -> None:
    await _story(graph, "t1")
    await _story(graph, "t2")
    second = DiaryEntry(
        uid="d2",
        tenant="t1",
        day="2024-05-02",
        text="Today we talked about running.",
        episode_count=2,
        concepts=("running",),
        created_at=at(30),
    )
    first = DiaryEntry(uid="d1", tenant="t1", day="2024-05-01", text="Quiet.", created_at=at(0))
    assert await graph.diary.put(second, ["t1-e2", "t1-e3", "t2-e0"]) == second
    await graph.diary.put(first, ["t1-e0"])
    assert await graph.diary.list("t1") == [first, second]
    assert await graph.diary.list("t2") == []
    assert await graph.diary.list("t1", first="2024-05-02") == [second]
    assert await graph.diary.list("t1", last="2024-05-01") == [first]
    assert await graph.diary.list("t1", first="2024-05-01", last="2024-05-02") == [first, second]
    assert await graph.diary.list("t1", first="2024-05-03") == []
    assert await graph.diary.list("t2", first="2024-05-01", last="2024-05-02") == []
    assert await graph.diary.sources("t1", "d2") == ["t1-e2", "t1-e3"]
    assert await graph.diary.sources("t2", "d2") == []
    rewritten = second.model_copy(update={"text": "We ran.", "episode_count": 1})
    await graph.diary.put(rewritten, ["t1-e3"])
    assert await graph.diary.list("t1") == [first, rewritten]
    assert await graph.diary.sources("t1", "d2") == ["t1-e3"]
    with pytest.raises(StoreError):
        await graph.diary.put(first.model_copy(update={"tenant": "t2"}), [])
    assert not await graph.diary.delete("t2", "d1")
    assert await graph.diary.delete("t1", "d1")
    assert not await graph.diary.delete("t1", "d1")
    assert await graph.diary.list("t1") == [rewritten]


async def test_episode_terms_are_topics_and_entities(graph: GraphStore) -> None:
    await _story(graph, "t1")
    await graph.topics.link("t1", "t1-e0", ["marathon", "training"])
    await graph.entities.upsert("t1", "Jane Doe", EntityType.PERSON)
    await graph.entities.link_mentions("t1", "t1-e0", ["Jane Doe"])
    await graph.topics.link("t1", "t1-e1", ["jane-doe"])
    terms = await graph.episodes.terms("t1", ["t1-e0", "t1-e1", "t1-e2", "missing", "t1-e0"])
    assert terms == {
        "t1-e0": ["jane doe", "marathon", "training"],
        "t1-e1": ["jane-doe"],
        "t1-e2": [],
    }
    assert await graph.episodes.terms("t2", ["t1-e0"]) == {}
    assert await graph.episodes.terms("t1", []) == {}


async def test_sqlite_v3_file_migrates_to_loop_emotions(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite3"
    store = SqliteGraphStore(path)
    await store.setup()
    await _story(store, "t1")
    await store.concepts.put(concept("t1", "c1"), ["t1-e0"], [])
    await store.close()
    conn = sqlite3.connect(path, isolation_level=None)  # what version 3 made
    conn.execute("ALTER TABLE concepts DROP COLUMN loop_emotion")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.close()

    store = SqliteGraphStore(path)
    try:
        assert await store.schema_version() == 3
        assert await store.concepts.get("t1", "c1") == concept("t1", "c1")  # migrates on first use
        assert await store.schema_version() == SCHEMA_VERSION  # migrated all the way
        felt = concept("t1", "c1", loop_emotion="stressed")
        assert await store.concepts.put(felt, ["t1-e0"], []) == felt
    finally:
        await store.close()


@pytest.mark.neo4j
async def test_neo4j_concept_of_version_3_reads_without_a_loop_emotion(
    neo4j_graph: GraphStore,
) -> None:
    await _story(neo4j_graph, "t1")
    await neo4j_graph.concepts.put(concept("t1", "c1", loop_emotion="sad"), ["t1-e0"], [])
    await neo4j_graph._query(  # type: ignore[attr-defined]
        "MATCH (c:Concept {uid: 'c1'}) REMOVE c.loop_emotion", {}, write=True
    )
    assert await neo4j_graph.concepts.get("t1", "c1") == concept("t1", "c1")
