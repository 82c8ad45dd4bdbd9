"""Pinned episodes and co-retrieval links: the store methods sleep's micro level relies on."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from memory.schema import SCHEMA_VERSION, EpisodeStatus
from memory.stores.base import GraphStore
from memory.stores.sqlite import SqliteGraphStore

from ._support import at, new_episode


async def _episodes(graph: GraphStore, tenant: str, uids: list[str]) -> None:
    for i, uid in enumerate(uids):
        await graph.episodes.create(new_episode(tenant, f"turn {uid}", i, uid=uid))


async def test_pin_and_unpin_an_episode(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["e1", "e2"])
    assert (await graph.episodes.get("t1", "e1")).pinned is False  # type: ignore[union-attr]

    pinned = await graph.episodes.set_pinned("t1", "e1", True)
    assert pinned is not None and pinned.pinned is True
    assert (await graph.episodes.get("t1", "e1")).pinned is True  # type: ignore[union-attr]
    assert (await graph.episodes.get("t1", "e2")).pinned is False  # type: ignore[union-attr]
    assert (await graph.episodes.set_pinned("t1", "e1", True)).pinned is True  # type: ignore[union-attr]

    unpinned = await graph.episodes.set_pinned("t1", "e1", False)
    assert unpinned is not None and unpinned.pinned is False
    assert (await graph.episodes.get("t1", "e1")).pinned is False  # type: ignore[union-attr]


async def test_pin_of_a_missing_or_foreign_episode_is_none(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["e1"])
    assert await graph.episodes.set_pinned("t1", "missing", True) is None
    assert await graph.episodes.set_pinned("t2", "e1", True) is None
    assert (await graph.episodes.get("t1", "e1")).pinned is False  # type: ignore[union-attr]


async def test_pinning_an_archived_episode_restores_it(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["e1", "e2"])
    for uid in ("e1", "e2"):
        await graph.episodes.set_status("t1", uid, EpisodeStatus.PROCESSED)
    await graph.episodes.update_scores("t1", "e1", archived=True)

    restored = await graph.episodes.set_pinned("t1", "e1", True)
    assert restored is not None
    assert (restored.pinned, restored.archived, restored.status) == (
        True,
        False,
        EpisodeStatus.STORED,
    )
    # not archived: pinning keeps the status; unpinning changes nothing but the pin
    kept = await graph.episodes.set_pinned("t1", "e2", True)
    assert kept is not None and kept.status == EpisodeStatus.PROCESSED
    again = await graph.episodes.set_pinned("t1", "e1", False)
    assert again is not None
    assert (again.pinned, again.archived, again.status) == (False, False, EpisodeStatus.STORED)


async def test_record_access_links_the_episodes_retrieved_together(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["a", "b", "c"])
    await _episodes(graph, "t2", ["x"])
    await graph.episodes.record_access("t1", ["c", "a", "b", "missing", "x", "a"], at(60))

    links = await graph.coretrieval.list("t1")
    assert [(k.a, k.b, k.count) for k in links] == [("a", "b", 1), ("a", "c", 1), ("b", "c", 1)]
    assert all(k.last_at == at(60) for k in links)
    assert all(math.isclose(k.weight, math.log(2)) for k in links)

    await graph.episodes.record_access("t1", ["b", "a"], at(120))
    ab = (await graph.coretrieval.list("t1", ["b"]))[0]
    assert (ab.a, ab.b, ab.count, ab.last_at) == ("a", "b", 2, at(120))
    assert math.isclose(ab.weight, math.log(3))
    assert [(k.a, k.b) for k in await graph.coretrieval.list("t1", ["c"])] == [
        ("a", "c"),
        ("b", "c"),
    ]
    assert await graph.coretrieval.list("t1", []) == []
    assert await graph.coretrieval.list("t2") == []
    a = await graph.episodes.get("t1", "a")
    assert a is not None and a.access_count == 2  # the access counts are written with them


async def test_one_episode_accessed_alone_has_no_link(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["a"])
    await graph.episodes.record_access("t1", ["a", "a"], at(1))
    assert await graph.coretrieval.list("t1") == []


async def test_strong_links_count_as_connections(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["a", "b", "c"])
    await graph.episodes.record_access("t1", ["a", "b", "c"], at(1))
    await graph.episodes.record_access("t1", ["a", "b"], at(2))  # a-b twice: ln 3 >= 1.0

    assert await graph.episodes.connections("t1", ["a", "b", "c"]) == {"a": 1, "b": 1, "c": 0}
    loose = await graph.episodes.connections("t1", ["a", "b", "c"], min_link_weight=0.5)
    assert loose == {"a": 2, "b": 2, "c": 2}


async def test_reweigh_and_drop_links(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["a", "b", "c"])
    await _episodes(graph, "t2", ["p", "q"])
    await graph.episodes.record_access("t1", ["a", "b", "c"], at(1))
    await graph.episodes.record_access("t2", ["p", "q"], at(1))

    await graph.coretrieval.reweigh("t1", {("b", "a"): 0.25, ("a", "zzz"): 0.5}, [("c", "a")])
    await graph.coretrieval.reweigh("t1", {("p", "q"): 0.9}, [])  # another tenant's pair: nothing
    links = {(k.a, k.b): k.weight for k in await graph.coretrieval.list("t1")}
    assert links == {("a", "b"): 0.25, ("b", "c"): pytest.approx(math.log(2))}
    assert [k.weight for k in await graph.coretrieval.list("t2")] == [pytest.approx(math.log(2))]
    with pytest.raises(ValueError):
        await graph.coretrieval.reweigh("t1", {("a", "a"): 1.0})


async def test_deleting_an_episode_or_its_tenant_removes_its_links(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["a", "b", "c"])
    await graph.episodes.record_access("t1", ["a", "b", "c"], at(1))
    assert await graph.episodes.delete("t1", "b")
    assert [(k.a, k.b) for k in await graph.coretrieval.list("t1")] == [("a", "c")]
    await graph.erase_tenant("t1")
    assert await graph.coretrieval.list("t1") == []


async def test_sqlite_v2_file_migrates_to_pins_and_links(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite3"
    store = SqliteGraphStore(path)
    await store.setup()
    await _episodes(store, "t1", ["a", "b"])
    await store.close()
    conn = sqlite3.connect(path, isolation_level=None)  # what version 2 made
    conn.execute("DROP TABLE co_retrieved")
    conn.execute("ALTER TABLE episodes DROP COLUMN pinned")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.close()

    store = SqliteGraphStore(path)
    try:
        assert await store.schema_version() == 2
        episode = await store.episodes.get("t1", "a")  # first use migrates too
        assert episode is not None and episode.pinned is False
        assert await store.schema_version() == SCHEMA_VERSION  # migrated all the way
        await store.episodes.record_access("t1", ["a", "b"], at(5))
        assert [(k.a, k.b) for k in await store.coretrieval.list("t1")] == [("a", "b")]
        assert (await store.episodes.set_pinned("t1", "b", True)).pinned is True  # type: ignore[union-attr]
    finally:
        await store.close()


@pytest.mark.neo4j
async def test_neo4j_episode_of_version_2_reads_unpinned(neo4j_graph: GraphStore) -> None:
    await _episodes(neo4j_graph, "t1", ["a"])
    await neo4j_graph._query(  # type: ignore[attr-defined]
        "MATCH (e:Episode {uid: 'a'}) REMOVE e.pinned", {}, write=True
    )
    episode = await neo4j_graph.episodes.get("t1", "a")
    assert episode is not None and episode.pinned is False


async def test_count_topics_counts_those_still_discussed(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["a", "b"])
    await _episodes(graph, "t2", ["x"])
    await graph.topics.link("t1", "a", ["tea", "travel"])
    await graph.topics.link("t1", "b", ["tea", "jazz"])
    await graph.topics.link("t2", "x", ["tea"])
    assert await graph.topics.count("t1") == 3
    await graph.episodes.delete("t1", "b")  # jazz is left with no episode
    assert await graph.topics.count("t1") == 2
    assert await graph.topics.count("t2") == 1
    assert await graph.topics.count("nobody") == 0
