"""Tenancy: two tenants with identical content and names; no read returns the other's data."""

from __future__ import annotations

import pytest

from memory.schema import Belief, EntityType, EpisodeStatus, EvidenceKind, Fact
from memory.stores.base import GraphStore, NotFound

from ._support import at, new_episode

TENANTS = ("alice", "bob")


async def populate(graph: GraphStore, tenant: str) -> dict[str, str]:
    """The same memory for a tenant: 3 episodes, topics, entities, a belief, facts, snapshots."""
    uids = []
    for i, text in enumerate(["I went to Paris", "Ada called me", "Paris was rainy"]):
        result = await graph.create_episode(new_episode(tenant, text, i, uid=f"{tenant}-ep{i}"))
        uids.append(result.uid)
    await graph.link_topics(tenant, uids[0], ["travel"])
    await graph.link_topics(tenant, uids[2], ["travel", "weather"])
    await graph.upsert_entity(tenant, "Paris", EntityType.PLACE)
    await graph.upsert_entity(tenant, "Ada", EntityType.PERSON)
    await graph.relate_entities(tenant, "Ada", "Paris")
    await graph.link_mentions(tenant, uids[0], ["Paris"])
    await graph.link_mentions(tenant, uids[1], ["Ada"])
    belief = await graph.upsert_belief(
        Belief(uid=f"{tenant}-b", tenant=tenant, topic="travel", statement="travel is good")
    )
    await graph.add_evidence(tenant, uids[0], belief.uid, EvidenceKind.SUPPORTS, 0.6)
    fact = Fact(uid=f"{tenant}-f", tenant=tenant, text="Paris is in France", valid_from=at(0))
    await graph.add_fact(fact, uids[0])
    await graph.add_snapshot(tenant, "curious and kind", at(0))
    return {"ep0": uids[0], "ep1": uids[1], "ep2": uids[2], "belief": belief.uid, "fact": fact.uid}


async def test_reads_never_cross_tenants(graph: GraphStore) -> None:
    ids = {t: await populate(graph, t) for t in TENANTS}
    for me, other in (("alice", "bob"), ("bob", "alice")):
        mine, theirs = ids[me], ids[other]
        my_eps = {mine["ep0"], mine["ep1"], mine["ep2"]}

        # Episodes.
        assert await graph.count_episodes(me) == 3
        assert set(await graph.list_episode_uids(me)) == my_eps
        assert await graph.get_episode(me, theirs["ep0"]) is None
        got = await graph.get_episodes(me, [theirs["ep0"], mine["ep0"], theirs["ep1"]])
        assert [e.uid for e in got] == [mine["ep0"]]
        assert all(e.tenant == me for e in got)
        assert await graph.temporal_neighbours(me, theirs["ep1"], 5) == []
        around = await graph.temporal_neighbours(me, mine["ep1"], 5)
        assert [n.episode.uid for n in around] == [mine["ep0"], mine["ep2"]]
        listed = await graph.list_by_status(me, list(EpisodeStatus))
        assert {e.uid for e in listed} == my_eps

        # Topics and entities.
        assert await graph.episode_topics(me, theirs["ep2"]) == []
        assert await graph.episode_topics(me, mine["ep2"]) == ["travel", "weather"]
        named = await graph.entities_named(me, ["Ada", "Paris"])
        assert [(e.tenant, e.name) for e in named] == [(me, "Ada"), (me, "Paris")]
        assert await graph.episode_entities(me, theirs["ep0"]) == []
        near = await graph.episodes_near_entities(me, ["Ada"], 3)
        assert [h.episode_uid for h in near] == [mine["ep1"], mine["ep0"]]

        # Beliefs, facts, snapshots.
        assert await graph.get_belief(me, theirs["belief"]) is None
        belief = await graph.get_belief_by_topic(me, "travel")
        assert belief is not None and belief.uid == mine["belief"] and belief.evidence_count == 1
        assert [b.uid for b in await graph.list_beliefs(me)] == [mine["belief"]]
        assert await graph.belief_evidence(me, theirs["belief"]) == []
        evidence = await graph.belief_evidence(me, mine["belief"])
        assert [e.episode_uid for e in evidence] == [mine["ep0"]]
        assert await graph.get_fact(me, theirs["fact"]) is None
        assert [f.uid for f in await graph.list_facts(me, include_superseded=True)] == [
            mine["fact"]
        ]
        assert await graph.fact_sources(me, theirs["fact"]) == []
        assert await graph.fact_sources(me, mine["fact"]) == [mine["ep0"]]
        snapshot = await graph.current_snapshot(me)
        assert snapshot is not None and snapshot.tenant == me and snapshot.version == 1
        assert [s.tenant for s in await graph.snapshot_history(me)] == [me]

    assert await graph.list_tenants() == ["alice", "bob"]
    assert len(await graph.list_episode_uids(None)) == 6
    assert len(await graph.list_by_status(None, [EpisodeStatus.PENDING])) == 6


async def test_writes_never_touch_the_other_tenant(graph: GraphStore) -> None:
    ids = {t: await populate(graph, t) for t in TENANTS}
    bob = ids["bob"]
    before = await graph.get_episodes("bob", [bob["ep0"], bob["ep1"], bob["ep2"]])
    belief_before = await graph.get_belief("bob", bob["belief"])
    fact_before = await graph.get_fact("bob", bob["fact"])

    # Alice names Bob's records by uid: every write is a no-op on them.
    assert await graph.set_status("alice", bob["ep0"], EpisodeStatus.PROCESSED) is False
    await graph.record_access("alice", [bob["ep0"], bob["ep1"]], at(100))
    await graph.update_scores("alice", bob["ep0"], salience=0.0, archived=True)
    await graph.link_topics("alice", bob["ep1"], ["hijack"])
    await graph.link_mentions("alice", bob["ep1"], ["Paris"])
    assert (
        await graph.add_evidence("alice", bob["ep1"], bob["belief"], EvidenceKind.SUPPORTS, 1)
        is False
    )
    assert (
        await graph.add_evidence(
            "alice", ids["alice"]["ep1"], bob["belief"], EvidenceKind.SUPPORTS, 1
        )
        is False
    )
    await graph.cite_fact("alice", bob["fact"], ids["alice"]["ep1"])
    await graph.cite_fact("alice", ids["alice"]["fact"], bob["ep1"])
    with pytest.raises(NotFound):
        await graph.supersede_fact("alice", bob["fact"], Fact(tenant="alice", text="x"), at(9))
    assert await graph.delete_episode("alice", bob["ep1"]) is False
    assert await graph.delete_belief("alice", bob["belief"]) is False

    # Same names, different tenant: Alice's changes stay hers.
    await graph.upsert_entity("alice", "Paris", EntityType.EVENT)
    await graph.upsert_belief(Belief(tenant="alice", topic="travel", statement="changed"))
    await graph.add_snapshot("alice", "version two", at(1))
    await graph.delete_episode("alice", ids["alice"]["ep1"])

    assert await graph.get_episodes("bob", [bob["ep0"], bob["ep1"], bob["ep2"]]) == before
    assert await graph.episode_topics("bob", bob["ep1"]) == []
    assert await graph.episode_entities("bob", bob["ep1"]) == await graph.entities_named(
        "bob", ["Ada"]
    )
    assert await graph.get_belief("bob", bob["belief"]) == belief_before
    assert await graph.get_fact("bob", bob["fact"]) == fact_before
    assert await graph.fact_sources("bob", bob["fact"]) == [bob["ep0"]]
    [paris] = await graph.entities_named("bob", ["Paris"])
    assert paris.type is EntityType.PLACE
    snapshot = await graph.current_snapshot("bob")
    assert snapshot is not None and snapshot.version == 1
    around = await graph.temporal_neighbours("bob", bob["ep1"], 1)
    assert [n.episode.uid for n in around] == [bob["ep0"], bob["ep2"]]
    assert await graph.fact_sources("alice", ids["alice"]["fact"]) == [ids["alice"]["ep0"]]
