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
        result = await graph.episodes.create(new_episode(tenant, text, i, uid=f"{tenant}-ep{i}"))
        uids.append(result.uid)
    await graph.topics.link(tenant, uids[0], ["travel"])
    await graph.topics.link(tenant, uids[2], ["travel", "weather"])
    await graph.entities.upsert(tenant, "Paris", EntityType.PLACE)
    await graph.entities.upsert(tenant, "Ada", EntityType.PERSON)
    await graph.entities.relate(tenant, "Ada", "Paris")
    await graph.entities.link_mentions(tenant, uids[0], ["Paris"])
    await graph.entities.link_mentions(tenant, uids[1], ["Ada"])
    belief = await graph.beliefs.upsert(
        Belief(uid=f"{tenant}-b", tenant=tenant, topic="travel", statement="travel is good")
    )
    await graph.beliefs.add_evidence(tenant, uids[0], belief.uid, EvidenceKind.SUPPORTS, 0.6)
    fact = Fact(uid=f"{tenant}-f", tenant=tenant, text="Paris is in France", valid_from=at(0))
    await graph.facts.add(fact, uids[0])
    await graph.snapshots.add(tenant, "curious and kind", at(0))
    return {"ep0": uids[0], "ep1": uids[1], "ep2": uids[2], "belief": belief.uid, "fact": fact.uid}


async def test_reads_never_cross_tenants(graph: GraphStore) -> None:
    ids = {t: await populate(graph, t) for t in TENANTS}
    for me, other in (("alice", "bob"), ("bob", "alice")):
        mine, theirs = ids[me], ids[other]
        my_eps = {mine["ep0"], mine["ep1"], mine["ep2"]}

        # Episodes.
        assert await graph.episodes.count(me) == 3
        assert set(await graph.episodes.list_uids(me)) == my_eps
        assert await graph.episodes.get(me, theirs["ep0"]) is None
        got = await graph.episodes.get_many(me, [theirs["ep0"], mine["ep0"], theirs["ep1"]])
        assert [e.uid for e in got] == [mine["ep0"]]
        assert all(e.tenant == me for e in got)
        assert await graph.episodes.neighbours(me, theirs["ep1"], 5) == []
        around = await graph.episodes.neighbours(me, mine["ep1"], 5)
        assert [n.episode.uid for n in around] == [mine["ep0"], mine["ep2"]]
        listed = await graph.episodes.list_by_status(me, list(EpisodeStatus))
        assert {e.uid for e in listed} == my_eps

        # Topics and entities.
        assert await graph.topics.of_episode(me, theirs["ep2"]) == []
        assert await graph.topics.of_episode(me, mine["ep2"]) == ["travel", "weather"]
        named = await graph.entities.named(me, ["Ada", "Paris"])
        assert [(e.tenant, e.name) for e in named] == [(me, "Ada"), (me, "Paris")]
        assert await graph.entities.of_episode(me, theirs["ep0"]) == []
        near = await graph.entities.episodes_near(me, ["Ada"], 3)
        assert [h.episode_uid for h in near] == [mine["ep1"], mine["ep0"]]

        # Beliefs, facts, snapshots.
        assert await graph.beliefs.get(me, theirs["belief"]) is None
        belief = await graph.beliefs.get_by_topic(me, "travel")
        assert belief is not None and belief.uid == mine["belief"] and belief.evidence_count == 1
        assert [b.uid for b in await graph.beliefs.list(me)] == [mine["belief"]]
        assert await graph.beliefs.evidence(me, theirs["belief"]) == []
        evidence = await graph.beliefs.evidence(me, mine["belief"])
        assert [e.episode_uid for e in evidence] == [mine["ep0"]]
        assert await graph.facts.get(me, theirs["fact"]) is None
        assert [f.uid for f in await graph.facts.list(me, include_superseded=True)] == [
            mine["fact"]
        ]
        assert await graph.facts.sources(me, theirs["fact"]) == []
        assert await graph.facts.sources(me, mine["fact"]) == [mine["ep0"]]
        snapshot = await graph.snapshots.current(me)
        assert snapshot is not None and snapshot.tenant == me and snapshot.version == 1
        assert [s.tenant for s in await graph.snapshots.history(me)] == [me]

    assert await graph.episodes.list_tenants() == ["alice", "bob"]
    assert len(await graph.episodes.list_uids(None)) == 6
    assert len(await graph.episodes.list_by_status(None, [EpisodeStatus.PENDING])) == 6


async def test_writes_never_touch_the_other_tenant(graph: GraphStore) -> None:
    ids = {t: await populate(graph, t) for t in TENANTS}
    bob = ids["bob"]
    before = await graph.episodes.get_many("bob", [bob["ep0"], bob["ep1"], bob["ep2"]])
    belief_before = await graph.beliefs.get("bob", bob["belief"])
    fact_before = await graph.facts.get("bob", bob["fact"])

    # Alice names Bob's records by uid: every write is a no-op on them.
    assert await graph.episodes.set_status("alice", bob["ep0"], EpisodeStatus.PROCESSED) is False
    await graph.episodes.record_access("alice", [bob["ep0"], bob["ep1"]], at(100))
    await graph.episodes.update_scores("alice", bob["ep0"], salience=0.0, archived=True)
    await graph.topics.link("alice", bob["ep1"], ["hijack"])
    await graph.entities.link_mentions("alice", bob["ep1"], ["Paris"])
    assert (
        await graph.beliefs.add_evidence(
            "alice", bob["ep1"], bob["belief"], EvidenceKind.SUPPORTS, 1
        )
        is False
    )
    assert (
        await graph.beliefs.add_evidence(
            "alice", ids["alice"]["ep1"], bob["belief"], EvidenceKind.SUPPORTS, 1
        )
        is False
    )
    await graph.facts.cite("alice", bob["fact"], ids["alice"]["ep1"])
    await graph.facts.cite("alice", ids["alice"]["fact"], bob["ep1"])
    with pytest.raises(NotFound):
        await graph.facts.supersede("alice", bob["fact"], Fact(tenant="alice", text="x"), at(9))
    assert await graph.episodes.delete("alice", bob["ep1"]) is False
    assert await graph.beliefs.delete("alice", bob["belief"]) is False

    # Same names, different tenant: Alice's changes stay hers.
    await graph.entities.upsert("alice", "Paris", EntityType.EVENT)
    await graph.beliefs.upsert(Belief(tenant="alice", topic="travel", statement="changed"))
    await graph.snapshots.add("alice", "version two", at(1))
    await graph.episodes.delete("alice", ids["alice"]["ep1"])

    assert await graph.episodes.get_many("bob", [bob["ep0"], bob["ep1"], bob["ep2"]]) == before
    assert await graph.topics.of_episode("bob", bob["ep1"]) == []
    assert await graph.entities.of_episode("bob", bob["ep1"]) == await graph.entities.named(
        "bob", ["Ada"]
    )
    assert await graph.beliefs.get("bob", bob["belief"]) == belief_before
    assert await graph.facts.get("bob", bob["fact"]) == fact_before
    assert await graph.facts.sources("bob", bob["fact"]) == [bob["ep0"]]
    [paris] = await graph.entities.named("bob", ["Paris"])
    assert paris.type is EntityType.PLACE
    snapshot = await graph.snapshots.current("bob")
    assert snapshot is not None and snapshot.version == 1
    around = await graph.episodes.neighbours("bob", bob["ep1"], 1)
    assert [n.episode.uid for n in around] == [bob["ep0"], bob["ep2"]]
    assert await graph.facts.sources("alice", ids["alice"]["fact"]) == [ids["alice"]["ep0"]]
