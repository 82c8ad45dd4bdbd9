"""Consolidation's store methods: connections, sole evidence, the facts an episode states."""

from __future__ import annotations

from memory.schema import Belief, EntityType, EvidenceKind, Fact
from memory.stores.base import GraphStore

from ._support import at, new_episode

SUPPORTS = EvidenceKind.SUPPORTS


async def _episodes(graph: GraphStore, tenant: str, uids: list[str]) -> None:
    for i, uid in enumerate(uids):
        await graph.episodes.create(new_episode(tenant, f"turn {uid}", i, uid=uid))


async def test_episode_connections_count_each_edge_once(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["e1", "e2", "e3"])
    await graph.topics.link("t1", "e1", ["tea", "travel"])
    await graph.topics.link("t1", "e1", ["tea"])
    await graph.entities.upsert("t1", "Lyon", EntityType.PLACE)
    await graph.entities.link_mentions("t1", "e1", ["Lyon"])
    await graph.facts.add(Fact(uid="f1", tenant="t1", text="lives in Lyon", valid_from=at(0)), "e1")
    await graph.facts.cite("t1", "f1", "e2")
    await graph.beliefs.upsert(
        Belief(uid="b1", tenant="t1", topic="tea", statement="tea", valence=0.2, updated_at=at(0))
    )
    await graph.beliefs.add_evidence("t1", "e1", "b1", SUPPORTS, 0.5)

    counts = await graph.episodes.connections("t1", ["e1", "e2", "e3", "e1", "missing", ""])
    assert counts == {"e1": 5, "e2": 1, "e3": 0}
    assert await graph.episodes.connections("t2", ["e1"]) == {}
    assert await graph.episodes.connections("t1", []) == {}


async def test_sole_evidence_of_active_beliefs_and_current_facts(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["e1", "e2", "e3", "e4", "e5"])
    for uid, confidence in (("b1", 0.6), ("b2", 0.5), ("b0", 0.0)):
        await graph.beliefs.upsert(
            Belief(
                uid=uid,
                tenant="t1",
                topic=uid,
                statement=uid,
                valence=0.1,
                confidence=confidence,
                updated_at=at(0),
            )
        )
    await graph.beliefs.add_evidence("t1", "e1", "b1", SUPPORTS, 0.5)  # e1 alone behind b1
    await graph.beliefs.add_evidence("t1", "e2", "b2", SUPPORTS, 0.5)  # b2 has two episodes
    await graph.beliefs.add_evidence("t1", "e3", "b2", SUPPORTS, 0.5)
    await graph.beliefs.add_evidence("t1", "e4", "b0", SUPPORTS, 0.5)  # b0 is inactive
    old = Fact(uid="f-old", tenant="t1", text="lives in Lyon", valid_from=at(0))
    await graph.facts.add(old, "e4")
    new = Fact(uid="f-new", tenant="t1", text="lives in Porto", valid_from=at(5))
    await graph.facts.supersede("t1", "f-old", new, at(5))
    await graph.facts.cite("t1", "f-new", "e5")  # e5 alone states the current fact

    assert await graph.episodes.sole_evidence("t1", ["e1", "e2", "e3", "e4", "e5", "missing"]) == {
        "e1",
        "e5",
    }
    assert await graph.episodes.sole_evidence("t2", ["e1", "e5"]) == set()
    assert await graph.episodes.sole_evidence("t1", []) == set()
    # Once e2 is gone, e3 is b2's only evidence.
    assert await graph.episodes.delete("t1", "e2")
    assert await graph.episodes.sole_evidence("t1", ["e3"]) == {"e3"}


async def test_facts_stated_by_and_delete_fact(graph: GraphStore) -> None:
    await _episodes(graph, "t1", ["e1", "e2"])
    await graph.entities.upsert("t1", "Lyon", EntityType.PLACE)
    only = Fact(uid="f-only", tenant="t1", text="only e1", valid_from=at(0))
    shared = Fact(uid="f-shared", tenant="t1", text="both", valid_from=at(0))
    later = Fact(uid="f-later", tenant="t1", text="caused", valid_from=at(1))
    await graph.facts.add(only, "e1")
    await graph.facts.add(shared, "e1")
    await graph.facts.cite("t1", "f-shared", "e2")
    await graph.facts.add(later, "e2")
    await graph.facts.link_subject("t1", "f-only", "Lyon")
    await graph.facts.link_cause("t1", "f-later", "f-only")

    assert await graph.facts.stated_by("t1", "e1") == ["f-only", "f-shared"]
    assert await graph.facts.stated_by("t1", "e2") == ["f-later", "f-shared"]
    assert await graph.facts.stated_by("t2", "e1") == []

    assert await graph.facts.delete("t2", "f-only") is False
    assert await graph.facts.delete("t1", "f-only") is True
    assert await graph.facts.delete("t1", "f-only") is False
    assert await graph.facts.get("t1", "f-only") is None
    assert await graph.facts.causes("t1", "f-later") == []
    assert await graph.facts.sources("t1", "f-shared") == ["e1", "e2"]
