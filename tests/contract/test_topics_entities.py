"""Topics (DISCUSSES), entities (MENTIONS, RELATED_TO) and the k-hop traversal from entities
to the episodes that mention them."""

from __future__ import annotations

import pytest

from memory.schema import Entity, EntityType, EpisodeHit
from memory.stores.base import GraphStore

from ._support import new_episode

PERSON, PLACE, PROJECT = EntityType.PERSON, EntityType.PLACE, EntityType.PROJECT


# --------------------------------------------------------------------------- topics


async def test_topics_link_idempotently_and_sort(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "old", 0, uid="e-old"))
    await graph.episodes.create(new_episode("t1", "new b", 10, uid="e-b"))
    await graph.episodes.create(new_episode("t1", "new a", 10, uid="e-a"))
    await graph.topics.link("t1", "e-old", ["travel", "food"])
    await graph.topics.link("t1", "e-old", ["food", "travel", "food"])
    await graph.topics.link("t1", "e-b", ["travel"])
    await graph.topics.link("t1", "e-a", ["travel"])
    await graph.topics.link("t1", "e-a", [])

    assert await graph.topics.of_episode("t1", "e-old") == ["food", "travel"]
    assert await graph.topics.of_episode("t1", "e-a") == ["travel"]
    assert await graph.topics.of_episode("t1", "missing") == []
    assert await graph.topics.count("t1") == 2


async def test_topics_on_a_missing_episode_are_ignored(graph: GraphStore) -> None:
    await graph.topics.link("t1", "missing", ["travel"])
    assert await graph.topics.count("t1") == 0
    assert await graph.topics.of_episode("t1", "missing") == []


# --------------------------------------------------------------------------- entities


async def test_entities_are_keyed_by_normalised_name(graph: GraphStore) -> None:
    created = await graph.entities.upsert("t1", "Ada Lovelace", PERSON)
    assert created == Entity(tenant="t1", name="Ada Lovelace", type=PERSON)
    # Same key: the latest type wins, the first spelling stays the name.
    updated = await graph.entities.upsert("t1", "ada  LOVELACE", PROJECT)
    assert updated == Entity(tenant="t1", name="Ada Lovelace", type=PROJECT)
    assert await graph.entities.named("t1", ["ADA lovelace"]) == [updated]
    assert await graph.entities.named("t1", ["Ada"]) == []

    await graph.entities.upsert("t1", "Zurich", PLACE)
    await graph.entities.upsert("t1", "Babbage", PERSON)
    names = [
        e.name for e in await graph.entities.named("t1", ["Zurich", "babbage", "ada lovelace"])
    ]
    assert names == ["Ada Lovelace", "Babbage", "Zurich"]


async def test_entities_named_looks_up_keys_of_one_tenant(graph: GraphStore) -> None:
    await graph.entities.upsert("t1", "Ada Lovelace", PERSON)
    await graph.entities.upsert("t1", "Zurich", PLACE)
    await graph.entities.upsert("t2", "Babbage", PERSON)
    found = await graph.entities.named("t1", ["zurich", "ADA  lovelace", "babbage", "nobody", ""])
    assert [e.name for e in found] == ["Ada Lovelace", "Zurich"]
    assert await graph.entities.named("t1", []) == []
    assert [e.tenant for e in await graph.entities.named("t2", ["Babbage", "Zurich"])] == ["t2"]


async def test_mentions_link_existing_entities_only(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "met ada in zurich", uid="ep"))
    await graph.entities.upsert("t1", "Zurich", PLACE)
    await graph.entities.upsert("t1", "Ada", PERSON)
    await graph.entities.link_mentions("t1", "ep", ["zurich", "ADA", "Nobody"])
    await graph.entities.link_mentions("t1", "ep", ["Zurich"])
    await graph.entities.link_mentions("t1", "missing", ["Zurich"])
    assert await graph.entities.of_episode("t1", "ep") == [
        Entity(tenant="t1", name="Ada", type=PERSON),
        Entity(tenant="t1", name="Zurich", type=PLACE),
    ]
    assert await graph.entities.of_episode("t1", "missing") == []
    assert await graph.entities.named("t1", ["Nobody"]) == []


async def abcd(graph: GraphStore) -> None:
    """Entities Alpha - Bravo - Charlie - Delta, edges pointing both ways along the line."""
    for name in ["Alpha", "Bravo", "Charlie", "Delta"]:
        await graph.entities.upsert("t1", name, PERSON)
    await graph.entities.relate("t1", "Alpha", "Bravo")
    await graph.entities.relate("t1", "Charlie", "Bravo", "knows")  # pointing back
    await graph.entities.relate("t1", "Charlie", "Delta")
    await graph.entities.relate("t1", "charlie", "DELTA", "again")  # idempotent
    await graph.entities.relate("t1", "Delta", "Nobody")  # missing end: ignored


async def one_episode_each(graph: GraphStore, names: list[str]) -> None:
    """An episode `ep-<name>` per entity, mentioning it alone, a minute apart in that order."""
    for minute, name in enumerate(names):
        await graph.episodes.create(new_episode("t1", name, minute, uid=f"ep-{name}"))
        await graph.entities.link_mentions("t1", f"ep-{name}", [name])


def hits(*pairs: tuple[str, int]) -> list[EpisodeHit]:
    """The episodes of the named entities at those distances (each entity's own episode)."""
    return [EpisodeHit(episode_uid=f"ep-{n}", distance=d) for n, d in pairs]


async def test_k_hop_traversal_both_directions(graph: GraphStore) -> None:
    await abcd(graph)
    await one_episode_each(graph, ["Alpha", "Bravo", "Charlie", "Delta"])
    near = graph.entities.episodes_near
    assert await near("t1", ["Alpha"], 0) == hits(("Alpha", 0))
    assert await near("t1", ["Alpha"], 1) == hits(("Alpha", 0), ("Bravo", 1))
    assert await near("t1", ["Alpha"], 2) == hits(("Alpha", 0), ("Bravo", 1), ("Charlie", 2))
    assert await near("t1", ["alpha"], 3) == hits(
        ("Alpha", 0), ("Bravo", 1), ("Charlie", 2), ("Delta", 3)
    )
    assert await near("t1", ["Delta"], 3) == hits(
        ("Delta", 0), ("Charlie", 1), ("Bravo", 2), ("Alpha", 3)
    )
    assert await near("t1", ["Alpha", "Delta"], 1) == hits(
        ("Delta", 0), ("Alpha", 0), ("Charlie", 1), ("Bravo", 1)
    )
    assert await near("t1", ["Bravo"], 9) == hits(
        ("Bravo", 0), ("Charlie", 1), ("Alpha", 1), ("Delta", 2)
    )
    assert await near("t1", ["Nobody"], 3) == []
    assert await near("t1", [], 3) == []
    with pytest.raises(ValueError):
        await near("t1", ["Alpha"], -1)


async def test_traversal_terminates_on_cycles_at_least_distance(graph: GraphStore) -> None:
    for name in ["Alpha", "Bravo", "Charlie"]:
        await graph.entities.upsert("t1", name, PERSON)
    await graph.entities.relate("t1", "Alpha", "Bravo")
    await graph.entities.relate("t1", "Bravo", "Charlie")
    await graph.entities.relate("t1", "Charlie", "Alpha")
    await graph.entities.relate("t1", "Alpha", "Alpha")
    await one_episode_each(graph, ["Alpha", "Bravo", "Charlie"])
    expected = hits(("Alpha", 0), ("Charlie", 1), ("Bravo", 1))
    assert await graph.entities.episodes_near("t1", ["Alpha"], 6) == expected


async def test_episodes_near_entities_nearest_then_newest(graph: GraphStore) -> None:
    await abcd(graph)
    plan = {"e1": ["Alpha"], "e2": ["Charlie"], "e3": ["Bravo", "Delta"], "e4": ["Bravo"], "e5": []}
    for minute, (uid, names) in enumerate(plan.items()):
        await graph.episodes.create(new_episode("t1", uid, minute, uid=uid))
        await graph.entities.link_mentions("t1", uid, names)

    def ep_hits(*pairs: tuple[str, int]) -> list[EpisodeHit]:
        return [EpisodeHit(episode_uid=u, distance=d) for u, d in pairs]

    near = graph.entities.episodes_near
    assert await near("t1", ["Alpha"], 0) == ep_hits(("e1", 0))
    assert await near("t1", ["Alpha"], 3) == ep_hits(("e1", 0), ("e4", 1), ("e3", 1), ("e2", 2))
    assert await near("t1", ["Alpha"], 3, limit=2) == ep_hits(("e1", 0), ("e4", 1))
    assert await near("t1", ["Delta"], 1) == ep_hits(("e3", 0), ("e2", 1))
    assert await near("t1", ["Bravo", "Charlie"], 0) == ep_hits(("e4", 0), ("e3", 0), ("e2", 0))
    assert await near("t1", ["Nobody"], 2) == []
