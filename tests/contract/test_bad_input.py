"""Bad input: stored and read back verbatim (after `clean_text`), nothing else affected."""

from __future__ import annotations

from memory.schema import Belief, Entity, EntityType, EpisodeStatus, EvidenceKind, Fact
from memory.stores.base import CreateResult, GraphStore

from ._support import at, new_episode

HOSTILE = (
    "it's \"quoted\" `back`ticked` \\ \\\\ \\' "
    "}) DETACH DELETE n // "
    "'; DROP TABLE episodes; -- "
    '"); MATCH (n) DETACH DELETE n; // '
    "100% _done_ * ? [a-z] $param {param} ${x} :name @p ?1 "
    "/* comment */ \n UNION SELECT * FROM meta"
)
HOSTILE_TENANT = "t'\"`}) DETACH DELETE n //'; DROP TABLE episodes; --%_$param"


async def bystander(graph: GraphStore) -> list[object]:
    """A tenant whose data must come through unchanged; returns everything it can read."""
    await graph.episodes.create(new_episode("bystander", "quiet life", uid="by-1"))
    await graph.entities.upsert("bystander", "Home", EntityType.PLACE)
    await graph.entities.link_mentions("bystander", "by-1", ["Home"])
    await graph.topics.link("bystander", "by-1", ["home"])
    await graph.beliefs.upsert(Belief(uid="by-b", tenant="bystander", topic="home", statement="s"))
    await graph.facts.add(Fact(uid="by-f", tenant="bystander", text="home", valid_from=at(0)))
    await graph.snapshots.add("bystander", "calm", at(0))
    return await read_all(graph, "bystander")


async def read_all(graph: GraphStore, tenant: str) -> list[object]:
    return [
        await graph.episodes.list_by_status(tenant, list(EpisodeStatus)),
        await graph.entities.named(tenant, ["Home"]),
        await graph.topics.of_episode(tenant, "by-1"),
        await graph.beliefs.list(tenant),
        await graph.facts.list(tenant, include_superseded=True),
        await graph.snapshots.history(tenant),
        await graph.entities.of_episode(tenant, "by-1"),
    ]


async def test_metacharacters_are_stored_verbatim(graph: GraphStore) -> None:
    before = await bystander(graph)
    t = HOSTILE_TENANT
    ep = new_episode(t, HOSTILE, uid="h-1", agent_text=HOSTILE, thread_id=HOSTILE)
    assert await graph.episodes.create(ep) == CreateResult(uid="h-1", duplicate=False)

    got = await graph.episodes.get(t, "h-1")
    assert got is not None
    assert (got.tenant, got.user_text, got.agent_text, got.thread_id) == (
        t,
        HOSTILE,
        HOSTILE,
        HOSTILE,
    )
    assert got.content == f"User: {HOSTILE}\nAgent: {HOSTILE}"
    assert (await graph.episodes.create(ep)).duplicate is True

    await graph.topics.link(t, "h-1", [HOSTILE])
    assert await graph.topics.of_episode(t, "h-1") == [HOSTILE]

    await graph.entities.upsert(t, HOSTILE, EntityType.OBJECT)
    await graph.entities.upsert(t, "Plain", EntityType.OBJECT)
    await graph.entities.relate(t, HOSTILE, "Plain", HOSTILE)
    await graph.entities.link_mentions(t, "h-1", [HOSTILE])
    hostile_entity = Entity(tenant=t, name=HOSTILE, type=EntityType.OBJECT)
    assert await graph.entities.named(t, [HOSTILE]) == [hostile_entity]
    assert await graph.entities.of_episode(t, "h-1") == [hostile_entity]
    near = await graph.entities.episodes_near(t, ["Plain"], 1)
    assert [(h.episode_uid, h.distance) for h in near] == [("h-1", 1)]

    belief = await graph.beliefs.upsert(Belief(tenant=t, topic=HOSTILE, statement=HOSTILE))
    assert (belief.topic, belief.statement) == (HOSTILE, HOSTILE)
    assert await graph.beliefs.get_by_topic(t, HOSTILE) == belief
    assert await graph.beliefs.add_evidence(
        t, "h-1", belief.uid, EvidenceKind.SUPPORTS, 0.5, HOSTILE
    )
    assert [e.reasoning for e in await graph.beliefs.evidence(t, belief.uid)] == [HOSTILE]

    fact = Fact(tenant=t, text=HOSTILE, valid_from=at(0))
    assert await graph.facts.add(fact, "h-1") == fact
    assert await graph.facts.list(t) == [fact]
    snapshot = await graph.snapshots.add(t, HOSTILE, at(0))
    assert await graph.snapshots.current(t) == snapshot and snapshot.text == HOSTILE

    # Metacharacters in lookups are literals too.
    assert await graph.episodes.get(t, "' OR '1'='1") is None
    assert await graph.episodes.get("' OR '1'='1", "h-1") is None
    assert await graph.episodes.count("%") == 0
    assert await graph.entities.named("_", ["Home", HOSTILE]) == []

    assert await read_all(graph, "bystander") == before
    assert await graph.episodes.list_tenants() == sorted(["bystander", t])
    assert await graph.episodes.count("bystander") == 1


async def test_empty_texts(graph: GraphStore) -> None:
    empty = new_episode("t1", "", uid="empty", agent_text="")
    assert await graph.episodes.create(empty) == CreateResult(uid="empty", duplicate=False)
    got = await graph.episodes.get("t1", "empty")
    assert got is not None
    assert (got.user_text, got.agent_text, got.content) == ("", "", "User: ")
    again = await graph.episodes.create(new_episode("t1", "   ", 1, uid="blank", agent_text=""))
    assert again == CreateResult(uid="blank", duplicate=False)
    assert await graph.snapshots.add("t1", "", at(0)) == (await graph.snapshots.history("t1"))[0]


async def test_a_one_megabyte_message(graph: GraphStore) -> None:
    words = "the quick brown fox jumps over the lazy dog 0123456789 ünïcödé 日本語 "
    big = (words * (1_000_000 // len(words) + 1))[:1_000_000]
    assert await graph.episodes.create(new_episode("t1", big, uid="big")) == CreateResult(
        uid="big", duplicate=False
    )
    got = await graph.episodes.get("t1", "big")
    assert got is not None
    assert got.user_text == big
    assert len(got.content) == len("User: \nAgent: noted") + 1_000_000
    # A tail-only change is another episode, with its own whole text.
    tail_changed = big[:-10] + "0000000000"
    result = await graph.episodes.create(new_episode("t1", tail_changed, 1, uid="big-2"))
    assert result == CreateResult(uid="big-2", duplicate=False)
    other = await graph.episodes.get("t1", "big-2")
    assert other is not None and other.user_text == tail_changed


async def test_lone_surrogates_and_control_characters(graph: GraphStore) -> None:
    raw = "a\ud800b\udfffc|\x00|\x01\x07\x08\x0b\x0c\x1b[31m\x7f\u200b\u2028\ufeff|\r\n\t end"
    expected = "a\ufffdb\ufffdc||\x01\x07\x08\x0b\x0c\x1b[31m\x7f\u200b\u2028\ufeff|\r\n\t end"
    await graph.episodes.create(new_episode("t1", raw, uid="ctl", agent_text=raw))
    got = await graph.episodes.get("t1", "ctl")
    assert got is not None
    assert got.user_text == expected
    assert got.agent_text == expected
    assert got.content == f"User: {expected}\nAgent: {expected}"

    await graph.entities.upsert("t1", raw, EntityType.OBJECT)
    [entity] = await graph.entities.named("t1", [raw])
    assert entity.name == expected
    belief = await graph.beliefs.upsert(Belief(tenant="t1", topic=raw, statement=raw))
    assert (belief.topic, belief.statement) == (expected, expected)
    assert await graph.beliefs.get_by_topic("t1", raw) == belief
    fact = await graph.facts.add(Fact(tenant="t1", text=raw, valid_from=at(0)))
    assert fact.text == expected
    snapshot = await graph.snapshots.add("t1", raw, at(0))
    assert snapshot.text == expected
    await graph.topics.link("t1", "ctl", [raw])
    assert await graph.topics.of_episode("t1", "ctl") == [expected]
