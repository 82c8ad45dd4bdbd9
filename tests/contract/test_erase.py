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
from memory.stores.base import GraphStore

from ._support import at, new_episode


async def populate(graph: GraphStore, tenant: str) -> None:
    """Every kind of record and edge for one tenant (uids prefixed with the tenant)."""
    p = f"{tenant}-"
    for i in range(3):
        await graph.create_episode(new_episode(tenant, f"turn {i}", i, uid=f"{p}e{i}"))
    await graph.link_topics(tenant, f"{p}e0", ["travel", "food"])
    await graph.upsert_entity(tenant, "Claire", EntityType.PERSON)
    await graph.upsert_entity(tenant, "Lyon", EntityType.PLACE)
    await graph.link_mentions(tenant, f"{p}e1", ["Claire", "Lyon"])
    await graph.relate_entities(tenant, "Claire", "Lyon", "lives_in")
    belief = await graph.upsert_belief(
        Belief(uid=f"{p}b", tenant=tenant, topic="tea", statement="tea is good")
    )
    await graph.add_evidence(tenant, f"{p}e0", belief.uid, EvidenceKind.SUPPORTS, 0.5)
    home = Fact(uid=f"{p}f-home", tenant=tenant, text="lives in Lyon", valid_from=at(0))
    await graph.add_fact(home, f"{p}e0")
    porto = Fact(uid=f"{p}f-porto", tenant=tenant, text="moved to Porto", valid_from=at(2))
    await graph.supersede_fact(tenant, home.uid, porto, at(2))
    await graph.cite_fact(tenant, porto.uid, f"{p}e2")
    await graph.link_fact_subject(tenant, home.uid, "Claire")
    await graph.link_cause(tenant, porto.uid, f"{p}e1")
    await graph.upsert_feature(
        Feature(uid=f"{p}feat", tenant=tenant, category=FeatureCategory.INTERESTS, text="tea"),
        f"{p}e0",
    )
    await graph.add_snapshot(tenant, "curious", at(3))
    await graph.put_tenant_state(tenant, "sponge", "{}")
    idea = Concept(
        uid=f"{p}c",
        tenant=tenant,
        label="moving",
        first_seen=at(0),
        last_seen=at(2),
        updated_at=at(3),
    )
    await graph.put_concept(idea, [f"{p}e0", f"{p}e2"], [home.uid])
    day = DiaryEntry(
        uid=f"{p}d", tenant=tenant, day="2024-05-01", text="We moved.", created_at=at(3)
    )
    await graph.put_diary_entry(day, [f"{p}e0"])
    await graph.put_goal(
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
    await graph.put_emotions(tenant, f"{p}e1", [feeling])
    await graph.upsert_summary(
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
    uids = await graph.list_episode_uids(tenant)
    return {
        "episodes": len(uids),
        "facts": len(await graph.list_facts(tenant, include_superseded=True)),
        "beliefs": len(await graph.list_beliefs(tenant)),
        "entities": len(await graph.entities_named(tenant, ["Claire", "Lyon"])),
        "features": len(await graph.list_features(tenant)),
        "snapshots": len(await graph.snapshot_history(tenant)),
        "state": int(await graph.get_tenant_state(tenant, "sponge") is not None),
        "topics": len(await graph.episode_topics(tenant, f"{tenant}-e0")),
        "concepts": len(await graph.list_concepts(tenant)),
        "diary": len(await graph.list_diary(tenant)),
        "goals": len(await graph.list_goals(tenant)),
        "emotions": len(await graph.list_emotions(tenant)),
        "summaries": len(await graph.list_summaries(tenant)),
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
        "goals": 1,
        "emotions": 1,
        "summaries": 1,
    }
    deleted = await graph.erase_tenant("t1")
    assert deleted > 0
    assert set((await footprint(graph, "t1")).values()) == {0}
    assert "t1" not in await graph.list_tenants()
    assert await footprint(graph, "t2") == before
    assert await graph.fact_sources("t2", "t2-f-porto") == ["t2-e2"]
    assert await graph.erase_tenant("t1") == 0  # idempotent
    # The tenant can start again from nothing.
    await graph.create_episode(new_episode("t1", "again", 9, uid="t1-new"))
    assert await graph.list_episode_uids("t1") == ["t1-new"]


async def test_erase_of_an_unknown_tenant_deletes_nothing(graph: GraphStore) -> None:
    await populate(graph, "t2")
    assert await graph.erase_tenant("nobody") == 0
    assert (await footprint(graph, "t2"))["episodes"] == 3


async def test_delete_fact_removes_its_edges_and_reopens_what_it_superseded(
    graph: GraphStore,
) -> None:
    for tenant in ("t1", "t2"):
        await populate(graph, tenant)
    assert not await graph.delete_fact("t2", "t1-f-porto")  # another tenant's uid
    assert not await graph.delete_fact("t1", "missing")
    assert await graph.delete_fact("t1", "t1-f-porto")
    assert await graph.get_fact("t1", "t1-f-porto") is None
    home = await graph.get_fact("t1", "t1-f-home")
    assert home is not None and home.superseded_by is None and home.valid_to is None
    assert [f.uid for f in await graph.list_facts("t1")] == ["t1-f-home"]
    assert await graph.fact_sources("t1", "t1-f-porto") == []
    assert await graph.causes_of("t1", "t1-f-porto") == []
    assert not await graph.delete_fact("t1", "t1-f-porto")  # idempotent
    theirs = await graph.get_fact("t2", "t2-f-home")
    assert theirs is not None and theirs.superseded_by == "t2-f-porto"
    assert await graph.delete_fact("t1", "t1-f-home")
