"""One ranking that reads memory's state, on every graph backend (real stores, the real embedder,
offline sleep): before any sleep the ranking is the relevance alone; once sleep has run, use
(salience, recency of the last access) and co-retrieval links weigh at the weights a recipe
gives them (the design's here; the agent's are 0); a concept lends its members
to the best candidates (the hop through a concept); a fact and the turn that stated it do not
both lead."""

from __future__ import annotations

from datetime import timedelta

from memory.retrieval.recipes import SIMPLE, ablate, changed
from memory.retrieval.retrieve import retrieve
from memory.retrieval.state import slept
from memory.schema import Concept
from memory.services import Services
from memory.sleep.levels import Level
from tests.integration.test_consolidation import T0, sleep, tell

STORY = [
    (0, "Ines called about the garden in Berlin."),
    (1, "Ines sent photos of the garden in Berlin."),
    (2, "Ines planted tomatoes in her Berlin garden."),
    (3, "The tram was late again this morning."),
]
QUESTION = "What did Ines do in her garden in Berlin?"
DESIGN = changed(
    SIMPLE,
    {
        "priors.salience_weight": 0.3,
        "priors.recency_weight": 0.2,
        "priors.association_weight": 0.2,
    },
)
"""docs/design.md's state weights (the agent's are 0, by measurement: ADR 0148)."""


def scores(found: list) -> dict[str, float]:  # type: ignore[type-arg]
    return {c.uid: c.score for c in found if c.kind == "episode"}


async def test_state_weighs_only_once_sleep_has_run(services: Services) -> None:
    uids = await tell(services, "st", STORY)
    called, photos, planted, _ = uids
    now = T0 + timedelta(days=40)
    assert not await slept(services, "st", now)
    plain = ablate(SIMPLE, "state")
    before = await retrieve(services, "st", QUESTION, DESIGN, now)
    assert scores(before) == scores(await retrieve(services, "st", QUESTION, plain, now))
    assert all(c.association == 0.0 for c in before)

    # A month of use: the first two are recalled together, over and over; the third never.
    for day in range(5, 35, 3):
        await services.graph.episodes.record_access(
            "st", [called, photos], T0 + timedelta(days=day)
        )
    await sleep(services, "st", Level.MICRO, now)
    assert await slept(services, "st", now)
    assert not await slept(services, "st", T0 + timedelta(days=39))  # a sleep after the question

    after = {c.uid: c for c in await retrieve(services, "st", QUESTION, DESIGN, now)}
    relevance_only = scores(await retrieve(services, "st", QUESTION, plain, now))
    used = {called, photos}
    for uid in used:
        assert after[uid].association > 0.0, "retrieved together: linked"
        assert after[uid].score > relevance_only[uid]
    assert after[planted].association == 0.0
    lift = {uid: after[uid].score - relevance_only[uid] for uid in (called, photos, planted)}
    assert min(lift[u] for u in used) > lift[planted], lift  # use and links weigh


async def test_a_concept_lends_its_members_to_the_best_candidates(services: Services) -> None:
    uids = await tell(
        services,
        "cn",
        [
            (0, "I'm training for the Lisbon marathon in October."),
            (8, "Ran 25 kilometres this Sunday, legs are sore."),
            (16, "Bought new running shoes for long distances."),
            (20, "The tram was late again this morning."),
        ],
    )
    marathon, ran, shoes, _ = uids
    now = T0 + timedelta(days=30)
    question = "Which marathon am I training for?"
    plain = ablate(SIMPLE, "state")
    without = {c.uid for c in await retrieve(services, "cn", question, plain, now)}
    concept = Concept(
        uid="c-run",
        tenant="cn",
        label="running, marathon",
        episode_count=3,
        day_count=3,
        first_seen=T0,
        last_seen=T0 + timedelta(days=16),
        updated_at=now,
    )
    await services.graph.concepts.put(concept, [marathon, ran, shoes], [])
    # Before sleep the concept is not read.
    assert {c.uid for c in await retrieve(services, "cn", question, SIMPLE, now)} == without
    await sleep(services, "cn", Level.MICRO, now)
    found = await retrieve(services, "cn", question, SIMPLE, now)
    assert found[0].uid == marathon
    members = {c.uid: c for c in found if c.uid in (ran, shoes)}
    assert set(members) == {ran, shoes}, "both members reached"
    for c in members.values():
        if c.uid not in without:  # brought by the hop, scored below its seed
            assert c.source == "concept" and c.neighbour_of == marathon
            assert c.score < found[0].score
        else:  # found by search too: associated with the seed
            assert c.association > 0.0


async def test_a_fact_and_the_turn_that_stated_it_do_not_both_lead(services: Services) -> None:
    (home,) = await tell(services, "dv", [(0, "I live in Porto, near the river.")])
    now = T0 + timedelta(days=2)
    found = await retrieve(services, "dv", "Where do I live?", SIMPLE, now)
    assert any(c.kind == "fact" for c in found), "the write path stated a fact"
    same = ablate(SIMPLE, "diversity")
    undiversified = {
        c.uid: c.score for c in await retrieve(services, "dv", "Where do I live?", same, now)
    }
    first, *rest = found
    for c in rest:
        if set(c.sources) <= set(first.sources):  # held by a better candidate
            assert c.score == undiversified[c.uid] * SIMPLE.rerank.diversity
        else:
            assert c.score == undiversified[c.uid]
    assert home in first.sources
