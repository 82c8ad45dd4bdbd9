"""Deleting a fact and erasing a tenant (the memory API's delete and erase), the same on every
backend: exact counts, nothing of another tenant touched, idempotent."""

from __future__ import annotations

from memory.schema import (
    Belief,
    Concept,
    DiaryEntry,
    Emotion,
    EntityType,
    EvidenceKind,
    Fact,
    Feature,
    FeatureCategory,
    Goal,
    SessionSummary,
)
from memory.sleep.chapters import Chapter, Theme, load_chapters, save_chapters
from memory.stores.base import GraphStore

from ._support import at, new_episode


async def populate(graph: GraphStore, tenant: str) -> None:
    """Every kind of record and edge for one tenant (uids prefixed with the tenant)."""
    p = f"{tenant}-"
    for i in range(3):
        await graph.episodes.create(new_episode(tenant, f"turn {i}", i, uid=f"{p}e{i}"))
    await graph.topics.link(tenant, f"{p}e0", ["travel", "food"])
    await graph.entities.upsert(tenant, "Claire", EntityType.PERSON)
    await graph.entities.upsert(tenant, "Lyon", EntityType.PLACE)
    await graph.entities.link_mentions(tenant, f"{p}e1", ["Claire", "Lyon"])
    await graph.entities.relate(tenant, "Claire", "Lyon", "lives_in")
    belief = await graph.beliefs.upsert(
        Belief(uid=f"{p}b", tenant=tenant, topic="tea", statement="tea is good")
    )
    await graph.beliefs.add_evidence(tenant, f"{p}e0", belief.uid, EvidenceKind.SUPPORTS, 0.5)
    home = Fact(uid=f"{p}f-home", tenant=tenant, text="lives in Lyon", valid_from=at(0))
    await graph.facts.add(home, f"{p}e0")
    porto = Fact(uid=f"{p}f-porto", tenant=tenant, text="moved to Porto", valid_from=at(2))
    await graph.facts.supersede(tenant, home.uid, porto, at(2))
    await graph.facts.cite(tenant, porto.uid, f"{p}e2")
    await graph.facts.link_subject(tenant, home.uid, "Claire")
    await graph.facts.link_cause(tenant, porto.uid, f"{p}e1")
    await graph.features.upsert(
        Feature(uid=f"{p}feat", tenant=tenant, category=FeatureCategory.INTERESTS, text="tea"),
        f"{p}e0",
    )
    await graph.snapshots.add(tenant, "curious", at(3))
    await graph.state.put(tenant, "sponge", "{}")
    idea = Concept(
        uid=f"{p}c",
        tenant=tenant,
        label="moving",
        first_seen=at(0),
        last_seen=at(2),
        updated_at=at(3),
    )
    await graph.concepts.put(idea, [f"{p}e0", f"{p}e2"], [home.uid])
    day = DiaryEntry(
        uid=f"{p}d", tenant=tenant, day="2024-05-01", text="We moved.", created_at=at(3)
    )
    await graph.diary.put(day, [f"{p}e0"])
    moving = Theme(label="moving", days=1, trend="new")
    await save_chapters(
        graph,
        tenant,
        [Chapter(first_day=at(0).date(), last_day=at(2).date(), days=1, themes=[moving])],
    )
    await graph.goals.put(
        Goal(
            uid=f"{p}g",
            tenant=tenant,
            fact_uid=porto.uid,
            text="moved to Porto",
            stated_at=at(2),
            changed_at=at(2),
        )
    )
    feeling = Emotion(
        uid=f"{p}m", tenant=tenant, episode_uid=f"{p}e1", name="happy", intensity=0.3, felt_at=at(1)
    )
    await graph.emotions.put(tenant, f"{p}e1", [feeling])
    await graph.summaries.upsert(
        SessionSummary(
            uid=f"{p}sum",
            tenant=tenant,
            thread_id="thread-1",
            text="turns 0 to 2",
            started_at=at(0),
            ended_at=at(2),
            episode_uids=(f"{p}e0", f"{p}e1", f"{p}e2"),
        )
    )


async def footprint(graph: GraphStore, tenant: str) -> dict[str, int]:
    """What the tenant has, through the store's own reads."""
    uids = await graph.episodes.list_uids(tenant)
    return {
        "episodes": len(uids),
        "facts": len(await graph.facts.list(tenant, include_superseded=True)),
        "beliefs": len(await graph.beliefs.list(tenant)),
        "entities": len(await graph.entities.named(tenant, ["Claire", "Lyon"])),
        "features": len(await graph.features.list(tenant)),
        "snapshots": len(await graph.snapshots.history(tenant)),
        "state": int(await graph.state.get(tenant, "sponge") is not None),
        "topics": len(await graph.topics.of_episode(tenant, f"{tenant}-e0")),
        "concepts": len(await graph.concepts.list(tenant)),
        "diary": len(await graph.diary.list(tenant)),
        "chapters": len(await load_chapters(graph, tenant)),
        "goals": len(await graph.goals.list(tenant)),
        "emotions": len(await graph.emotions.list(tenant)),
        "summaries": len(await graph.summaries.list(tenant)),
    }


async def test_erase_tenant_deletes_everything_of_that_tenant_only(graph: GraphStore) -> None:
    for tenant in ("t1", "t2"):
        await populate(graph, tenant)
    before = await footprint(graph, "t2")
    assert before == {
        "episodes": 3,
        "facts": 2,
        "beliefs": 1,
        "entities": 2,
        "features": 1,
        "snapshots": 1,
        "state": 1,
        "topics": 2,
        "concepts": 1,
        "diary": 1,
        "chapters": 1,
        "goals": 1,
        "emotions": 1,
        "summaries": 1,
    }
    deleted = await graph.erase_tenant("t1")
    assert deleted > 0
    assert set((await footprint(graph, "t1")).values()) == {0}
    assert "t1" not in await graph.episodes.list_tenants()
    assert await footprint(graph, "t2") == before
    assert await graph.facts.sources("t2", "t2-f-porto") == ["t2-e2"]
    assert await graph.erase_tenant("t1") == 0  # idempotent
    # The tenant can start again from nothing.
    await graph.episodes.create(new_episode("t1", "again", 9, uid="t1-new"))
    assert await graph.episodes.list_uids("t1") == ["t1-new"]


async def test_erase_of_an_unknown_tenant_deletes_nothing(graph: GraphStore) -> None:
    await populate(graph, "t2")
    assert await graph.erase_tenant("nobody") == 0
    assert (await footprint(graph, "t2"))["episodes"] == 3


async def test_delete_fact_removes_its_edges_and_reopens_what_it_superseded(
    graph: GraphStore,
) -> None:
    for tenant in ("t1", "t2"):
        await populate(graph, tenant)
    assert not await graph.facts.delete("t2", "t1-f-porto")  # another tenant's uid
    assert not await graph.facts.delete("t1", "missing")
    assert await graph.facts.delete("t1", "t1-f-porto")
    assert await graph.facts.get("t1", "t1-f-porto") is None
    home = await graph.facts.get("t1", "t1-f-home")
    assert home is not None and home.superseded_by is None and home.valid_to is None
    assert [f.uid for f in await graph.facts.list("t1")] == ["t1-f-home"]
    assert await graph.facts.sources("t1", "t1-f-porto") == []
    assert await graph.facts.causes("t1", "t1-f-porto") == []
    assert not await graph.facts.delete("t1", "t1-f-porto")  # idempotent
    theirs = await graph.facts.get("t2", "t2-f-home")
    assert theirs is not None and theirs.superseded_by == "t2-f-porto"
    assert await graph.facts.delete("t1", "t1-f-home")
