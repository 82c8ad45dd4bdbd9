"""People as hubs: bookkeeping relates the entities a turn names and the people a fact relates,
and the associative path walks those relations, on both graph backends with real embeddings."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import pytest

from graph.bookkeeping import run_episode
from memory.retrieval.associative import associate
from memory.retrieval.recipes import SIMPLE, changed
from memory.retrieval.retrieve import retrieve
from memory.schema import EntityType, EpisodeHit, entity_key
from memory.services import Services
from memory.stores.sqlite import SqliteGraphStore
from memory.write.episodes import remember
from tests.contract._support import new_episode

pytestmark = pytest.mark.slow

T0 = datetime(2024, 3, 4, 18, 0, tzinfo=UTC)
LATER = datetime(2024, 6, 1, tzinfo=UTC)

TURNS = [
    "Ben: My sister Carla lives in Porto.",  # a fact relates Ben and Carla
    "Ana: How is work going?",
    "Ben: Busy, we ship the new release on Friday.",
    "Ana: Guess what, Carla won the regional chess final last weekend!",  # names Carla, not Ben
    "Ana: I finally met Dmitri and Lena at the climbing gym.",  # two names, one turn
    "Ben: Oh, Lena teaches the beginners there.",
]


async def _load(services: Services) -> list[str]:
    uids = []
    for i, text in enumerate(TURNS):
        at = T0 + timedelta(minutes=i)
        done = await remember(services, tenant="t", thread_id="s1", user_text=text, at=at)
        await run_episode(services, "t", done.uid)
        uids.append(done.uid)
    return uids


async def test_a_question_about_a_person_reaches_their_relations(services: Services) -> None:
    uids = await _load(services)
    graph = services.graph
    # the people are entities of the Person kind (the speaker label and the extraction's names)
    people = await graph.entities.named("t", ["Ben", "Carla", "Dmitri", "Lena"])
    assert [(e.name, e.type) for e in people] == [
        ("Ben", EntityType.PERSON),
        ("Carla", EntityType.PERSON),
        ("Dmitri", EntityType.PERSON),
        ("Lena", EntityType.PERSON),
    ]
    # Ben's sister: one hop from Ben are the turns that name Carla, the chess final among them
    near_ben = await graph.entities.episodes_near("t", ["Ben"], hops=1)
    assert EpisodeHit(episode_uid=uids[3], distance=1) in near_ben
    # without the hop, Ben reaches only the turns he said or that name him
    assert uids[3] not in {
        h.episode_uid for h in await graph.entities.episodes_near("t", ["Ben"], 0)
    }
    # Dmitri and Lena were named in one turn: Lena's other turn is one hop from Dmitri
    near_dmitri = await graph.entities.episodes_near("t", ["Dmitri"], hops=1)
    assert EpisodeHit(episode_uid=uids[5], distance=1) in near_dmitri

    association = await associate(graph, "t", "What's new with Ben's family?", hops=1)
    assert association.entities == ["Ben"]
    assert uids[3] in association.pointers  # few turns name Carla: they become candidates
    assert association.proximity[uids[3]] > 0

    question = "Any news about Ben's family?"
    on = await retrieve(services, "t", question, SIMPLE, LATER)
    no_hop = changed(SIMPLE, {"graph.entity_hops": 0})
    off = await retrieve(services, "t", question, no_hop, LATER)
    on_rel = {c.episode_uid: c.relevance for c in on if c.kind == "episode"}
    off_rel = {c.episode_uid: c.relevance for c in off if c.kind == "episode"}
    # the hop through Ben's relation lifts the turn about Carla (on a memory this small the
    # vector search alone also lists it; the lift is the graph's part)
    assert on_rel[uids[3]] > off_rel.get(uids[3], 0.0)
    assert on_rel[uids[1]] == pytest.approx(off_rel[uids[1]])  # a turn naming no one: as it was


async def test_a_co_mention_keeps_the_relation_a_fact_stated(services: Services) -> None:
    """A later turn naming Ben and Carla together does not turn "sister" into "co-mentioned"."""
    await _load(services)
    for i, text in enumerate(
        ["Ana: We had Ben and Carla over for dinner.", "Ana: And then Dmitri came too."]
    ):
        at = T0 + timedelta(hours=1, minutes=i)
        done = await remember(services, tenant="t", thread_id="s2", user_text=text, at=at)
        await run_episode(services, "t", done.uid)
    assert await graph_relation(services, "Ben", "Carla") == "sister"
    assert await graph_relation(services, "Dmitri", "Lena") == "co-mentioned"


async def graph_relation(services: Services, a: str, b: str) -> str | None:
    """The relation of the RELATED_TO edge from entity `a` to `b`, read from the backend (no
    part of mneme reads it back yet: the walk follows edges whatever their relation)."""
    graph = services.graph
    if isinstance(graph, SqliteGraphStore):
        conn = sqlite3.connect(graph.path)
        try:
            row = conn.execute(
                "SELECT relation FROM related_to WHERE tenant = 't' AND src_key = ? AND dst_key = ?",
                (entity_key(a), entity_key(b)),
            ).fetchone()
        finally:
            conn.close()
        return None if row is None else str(row[0])
    rows = await graph._read(  # type: ignore[attr-defined]
        "MATCH (:Entity {tenant: 't', key: $a})-[r:RELATED_TO]->(:Entity {tenant: 't', key: $b}) "
        "RETURN r.relation AS relation",
        a=entity_key(a),
        b=entity_key(b),
    )
    return str(rows[0]["relation"]) if rows else None


async def test_a_hop_counts_only_into_a_specific_neighbourhood(services: Services) -> None:
    """The turns one hop away lend proximity and join as candidates when they are few (at most
    `pointer_max`, all the entity's relations together); more, and the hop says nothing about
    the question, while the query's own entity keeps its turns."""
    graph = services.graph
    for name in ["Ben", "Carla", "Town"]:
        await graph.entities.upsert("t", name, EntityType.PERSON)
    await graph.entities.relate("t", "Ben", "Carla", "sister")
    await graph.entities.relate("t", "Ben", "Town", "co-mentioned")
    texts = ["Ben: hi", "Carla: hello", "Carla: bye"] + [f"Town news {i}" for i in range(5)]
    named = ["Ben", "Carla", "Carla"] + ["Town"] * 5
    for i, (text, name) in enumerate(zip(texts, named, strict=True)):
        await graph.episodes.create(new_episode("t", text, i, uid=f"ep-{i}"))
        await graph.entities.link_mentions("t", f"ep-{i}", [name])
    few = await associate(graph, "t", "How is Ben?", hops=1, pointer_max=7)
    assert few.proximity == {"ep-0": 1.0} | {f"ep-{i}": 0.5 for i in range(1, 8)}
    assert few.pointers == {f"ep-{i}" for i in range(8)}
    many = await associate(graph, "t", "How is Ben?", hops=1, pointer_max=6)
    assert many.proximity == {"ep-0": 1.0}
    assert many.pointers == {"ep-0"}
