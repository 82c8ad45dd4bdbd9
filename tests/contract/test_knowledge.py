"""Beliefs with provenance, facts with supersession, and versioned personality snapshots."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory.schema import Belief, EvidenceKind, Fact, PersonalitySnapshot
from memory.stores.base import GraphStore, NotFound

from ._support import at, new_episode

SUPPORTS, CONTRADICTS = EvidenceKind.SUPPORTS, EvidenceKind.CONTRADICTS


# --------------------------------------------------------------------------- beliefs


async def test_upsert_belief_keeps_the_stored_uid(graph: GraphStore) -> None:
    first = Belief(
        uid="b-1", tenant="t1", topic="tea", statement="tea is fine", valence=0.1, updated_at=at(0)
    )
    assert await graph.beliefs.upsert(first) == first

    replacement = Belief(
        uid="b-other",
        tenant="t1",
        topic="tea",
        statement="tea is great",
        valence=-0.5,
        confidence=0.8,
        evidence_count=4,
        contested=True,
        updated_at=at(5),
    )
    stored = await graph.beliefs.upsert(replacement)
    assert stored == replacement.model_copy(update={"uid": "b-1"})
    assert await graph.beliefs.get("t1", "b-1") == stored
    assert await graph.beliefs.get("t1", "b-other") is None
    assert await graph.beliefs.get_by_topic("t1", "tea") == stored
    assert await graph.beliefs.get_by_topic("t1", "coffee") is None

    # The usual update path: read, change, write back under the same uid.
    again = await graph.beliefs.upsert(stored.model_copy(update={"confidence": 0.9}))
    assert again.uid == "b-1" and again.confidence == 0.9


async def test_list_beliefs_by_topic(graph: GraphStore) -> None:
    for topic in ["weather", "art", "music"]:
        await graph.beliefs.upsert(Belief(tenant="t1", topic=topic, statement=f"on {topic}"))
    assert [b.topic for b in await graph.beliefs.list("t1")] == ["art", "music", "weather"]
    assert await graph.beliefs.list("t2") == []


async def test_evidence_is_idempotent_counted_and_ranked(graph: GraphStore) -> None:
    for i, uid in enumerate(["e1", "e2", "e3"]):
        await graph.episodes.create(new_episode("t1", uid, i, uid=uid))
    belief = await graph.beliefs.upsert(Belief(uid="b", tenant="t1", topic="x", statement="s"))

    assert await graph.beliefs.add_evidence("t1", "e1", "b", SUPPORTS, 0.5) is True
    assert await graph.beliefs.add_evidence("t1", "e1", "b", CONTRADICTS, 1.0, "again") is False
    assert await graph.beliefs.add_evidence("t1", "e3", "b", SUPPORTS, 0.5, "because") is True
    assert await graph.beliefs.add_evidence("t1", "e2", "b", CONTRADICTS, 0.9, "no") is True
    assert await graph.beliefs.add_evidence("t1", "missing", "b", SUPPORTS, 0.5) is False
    assert await graph.beliefs.add_evidence("t1", "e1", "missing", SUPPORTS, 0.5) is False

    stored = await graph.beliefs.get("t1", belief.uid)
    assert stored is not None and stored.evidence_count == 3

    evidence = await graph.beliefs.evidence("t1", "b")
    assert [(e.episode_uid, e.kind, e.strength, e.reasoning) for e in evidence] == [
        ("e2", CONTRADICTS, 0.9, "no"),
        ("e1", SUPPORTS, 0.5, ""),
        ("e3", SUPPORTS, 0.5, "because"),
    ]
    assert all(e.belief_uid == "b" for e in evidence)
    assert all(e.created_at.utcoffset() == timedelta(0) for e in evidence)
    assert [e.episode_uid for e in await graph.beliefs.evidence("t1", "b", limit=1)] == ["e2"]
    assert await graph.beliefs.evidence("t1", "missing") == []

    with pytest.raises(ValueError):
        await graph.beliefs.add_evidence("t1", "e1", "b", SUPPORTS, 1.5)


async def test_delete_belief_removes_its_evidence(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "e1", uid="e1"))
    await graph.beliefs.upsert(Belief(uid="b", tenant="t1", topic="x", statement="s"))
    await graph.beliefs.add_evidence("t1", "e1", "b", SUPPORTS, 0.5)

    assert await graph.beliefs.delete("t1", "b") is True
    assert await graph.beliefs.delete("t1", "b") is False
    assert await graph.beliefs.get("t1", "b") is None
    assert await graph.beliefs.evidence("t1", "b") == []
    assert await graph.episodes.get("t1", "e1") is not None
    # A new belief on the same topic starts from scratch.
    fresh = await graph.beliefs.upsert(Belief(uid="b2", tenant="t1", topic="x", statement="s"))
    assert fresh.uid == "b2" and fresh.evidence_count == 0
    assert await graph.beliefs.add_evidence("t1", "e1", "b2", SUPPORTS, 0.5) is True


# --------------------------------------------------------------------------- facts


async def test_facts_add_cite_and_sources(graph: GraphStore) -> None:
    for i, uid in enumerate(["e1", "e2"]):
        await graph.episodes.create(new_episode("t1", uid, i, uid=uid))
    fact = Fact(uid="f1", tenant="t1", text="The sky is blue", confidence=0.9, valid_from=at(0))

    assert await graph.facts.add(fact, "e2") == fact
    # Idempotent on the uid: a second add changes nothing.
    assert await graph.facts.add(fact.model_copy(update={"text": "changed"})) == fact
    assert await graph.facts.get("t1", "f1") == fact
    assert await graph.facts.sources("t1", "f1") == ["e2"]

    await graph.facts.cite("t1", "f1", "e1")
    await graph.facts.cite("t1", "f1", "e1")
    await graph.facts.cite("t1", "f1", "missing")
    await graph.facts.cite("t1", "missing", "e1")
    assert await graph.facts.sources("t1", "f1") == ["e1", "e2"]
    assert await graph.facts.sources("t1", "missing") == []
    assert await graph.facts.get("t1", "missing") is None

    unsourced = Fact(uid="f0", tenant="t1", text="no source", valid_from=at(-1))
    assert await graph.facts.add(unsourced) == unsourced
    assert await graph.facts.sources("t1", "f0") == []


async def test_supersede_keeps_history(graph: GraphStore) -> None:
    await graph.episodes.create(new_episode("t1", "e1", uid="e1"))
    old = Fact(uid="f-old", tenant="t1", text="lives in Paris", valid_from=at(0))
    other = Fact(uid="f-other", tenant="t1", text="likes tea", valid_from=at(1))
    await graph.facts.add(old, "e1")
    await graph.facts.add(other)

    new = Fact(uid="f-new", tenant="t1", text="lives in Rome", confidence=0.7, valid_from=at(10))
    assert await graph.facts.supersede("t1", "f-old", new, at(10)) == new

    closed = await graph.facts.get("t1", "f-old")
    assert closed == old.model_copy(update={"valid_to": at(10), "superseded_by": "f-new"})
    assert await graph.facts.sources("t1", "f-old") == ["e1"]
    assert [f.uid for f in await graph.facts.list("t1")] == ["f-other", "f-new"]
    everything = await graph.facts.list("t1", include_superseded=True)
    assert [f.uid for f in everything] == ["f-old", "f-other", "f-new"]
    assert everything[0] == closed

    with pytest.raises(NotFound):
        await graph.facts.supersede("t1", "missing", Fact(tenant="t1", text="x"), at(11))


async def test_a_fact_with_an_end_date_is_still_current(graph: GraphStore) -> None:
    ended = Fact(uid="f", tenant="t1", text="was a student", valid_from=at(0), valid_to=at(5))
    await graph.facts.add(ended)
    assert await graph.facts.list("t1") == [ended]


# --------------------------------------------------------------------------- snapshots


async def test_snapshots_are_versioned(graph: GraphStore) -> None:
    assert await graph.snapshots.current("t1") is None
    assert await graph.snapshots.history("t1") == []

    made = [await graph.snapshots.add("t1", f"I am version {i}", at(i)) for i in (1, 2, 3)]
    assert made == [
        PersonalitySnapshot(tenant="t1", version=i, text=f"I am version {i}", created_at=at(i))
        for i in (1, 2, 3)
    ]
    assert await graph.snapshots.current("t1") == made[2]
    assert await graph.snapshots.history("t1") == made[::-1]

    other = await graph.snapshots.add("t2", "someone else", at(0))
    assert other.version == 1
    assert await graph.snapshots.current("t1") == made[2]
