"""Session summaries: stored whole, replaced whole, linked to exactly their tenant's episodes,
listed in time order, never seen by another tenant; the same on every backend."""

from __future__ import annotations

import pytest

from memory.schema import SessionSummary
from memory.stores.base import GraphStore, StoreError

from ._support import T0, at, new_episode

HOSTILE = "'; DROP TABLE summaries; -- `}) DETACH DELETE n //` $text"


def summary(tenant: str, uid: str, episodes: tuple[str, ...], minutes: float = 0, **kw: object):
    fields: dict[str, object] = {
        "uid": uid,
        "tenant": tenant,
        "thread_id": "thread-1",
        "text": "User: we booked the flat in Porto.",
        "topics": ("porto", "flat"),
        "started_at": at(minutes),
        "ended_at": at(minutes + 5),
        "episode_uids": episodes,
        "created_at": T0,
    } | kw
    return SessionSummary.model_validate(fields)


async def episodes(graph: GraphStore, tenant: str, n: int) -> list[str]:
    uids = [f"{tenant}-e{i}" for i in range(n)]
    for i, uid in enumerate(uids):
        await graph.episodes.create(new_episode(tenant, f"turn {i}", i, uid=uid))
    return uids


async def test_upsert_round_trips_and_links_episodes(graph: GraphStore) -> None:
    uids = await episodes(graph, "ada", 3)
    stored = await graph.summaries.upsert(summary("ada", "s1", tuple(uids[:2]), text=HOSTILE))
    expected = summary("ada", "s1", tuple(uids[:2]), text=HOSTILE)
    assert stored == expected
    assert await graph.summaries.get_many("ada", ["s1", "nope", "s1"]) == [expected]
    assert await graph.summaries.of_episode("ada", uids[0]) == ["s1"]
    assert await graph.summaries.of_episode("ada", uids[2]) == []
    # Replaced whole: the edges follow the new episode list.
    again = summary("ada", "s1", (uids[1], uids[2]), text="rebuilt", method="llm")
    assert await graph.summaries.upsert(again) == again
    assert await graph.summaries.of_episode("ada", uids[0]) == []
    assert await graph.summaries.of_episode("ada", uids[2]) == ["s1"]
    assert await graph.summaries.upsert(again) == again  # idempotent
    assert await graph.summaries.list("ada") == [again]


async def test_list_by_thread_in_time_order(graph: GraphStore) -> None:
    uids = await episodes(graph, "ada", 2)
    late = summary("ada", "a-late", (uids[1],), 60)
    early = summary("ada", "z-early", (uids[0],), 0)
    other = summary("ada", "b-other", (), 30, thread_id="thread-2")
    for s in (late, early, other):
        await graph.summaries.upsert(s)
    assert [s.uid for s in await graph.summaries.list("ada")] == ["z-early", "b-other", "a-late"]
    assert [s.uid for s in await graph.summaries.list("ada", "thread-1")] == ["z-early", "a-late"]
    assert await graph.summaries.list("ada", "thread-9") == []


async def test_tenants_are_isolated(graph: GraphStore) -> None:
    mine = await episodes(graph, "ada", 1)
    theirs = await episodes(graph, "bob", 1)
    # Another tenant's episode uid gets no edge; the summary keeps the list it was built from.
    await graph.summaries.upsert(summary("ada", "s1", (mine[0], theirs[0])))
    assert await graph.summaries.of_episode("bob", theirs[0]) == []
    assert await graph.summaries.of_episode("ada", theirs[0]) == []
    assert await graph.summaries.get_many("bob", ["s1"]) == []
    assert await graph.summaries.list("bob") == []
    with pytest.raises(StoreError, match="already taken"):
        await graph.summaries.upsert(summary("bob", "s1", (theirs[0],)))
    assert not await graph.summaries.delete("bob", "s1")
    assert [s.tenant for s in await graph.summaries.get_many("ada", ["s1"])] == ["ada"]


async def test_delete_summary_and_episode_deletion(graph: GraphStore) -> None:
    uids = await episodes(graph, "ada", 2)
    await graph.summaries.upsert(summary("ada", "s1", tuple(uids)))
    # An episode deleted takes its edge with it; the summary is left for its owner to rebuild.
    assert await graph.episodes.delete("ada", uids[0])
    assert await graph.summaries.of_episode("ada", uids[1]) == ["s1"]
    assert [s.uid for s in await graph.summaries.list("ada")] == ["s1"]
    assert await graph.summaries.delete("ada", "s1")
    assert await graph.summaries.of_episode("ada", uids[1]) == []
    assert await graph.summaries.list("ada") == []
    assert not await graph.summaries.delete("ada", "s1")
    assert await graph.episodes.list_uids("ada") == [uids[1]]
