"""Cornerstones as retrieval anchors, on every graph backend (real stores, the real embedder,
offline sleep): once sleep has run, a cornerstone linked to one of the best candidates (through
a person they both name, or a co-retrieval link) that search missed joins the candidates at the
concept hop's decay; not before sleep, not an episode that is no cornerstone, not through a
person too many episodes name, and not with `--ablate cornerstones` or `--ablate state`."""

from __future__ import annotations

from datetime import timedelta

from memory.retrieval.candidates import Candidate
from memory.retrieval.recipes import SIMPLE, Recipe, ablate, changed
from memory.retrieval.retrieve import retrieve
from memory.services import Services
from memory.sleep.levels import Level
from memory.sleep.salience import CORNERSTONE_CONNECTIONS
from tests.integration.test_consolidation import T0, sleep, tell

QUESTION = "Who plays the cello in the city orchestra?"
NARROW = changed(SIMPLE, {"search.max_candidates": 2})
"""The agent's ranking with room for two found episodes: the filler turns fill no place the
hop could take."""


async def make_cornerstone(services: Services, tenant: str, uid: str) -> None:
    """Give the episode `CORNERSTONE_CONNECTIONS` topics, as a turn many things tie to."""
    topics = [f"topic-{i}" for i in range(CORNERSTONE_CONNECTIONS)]
    await services.graph.topics.link(tenant, uid, topics)
    counts = await services.graph.episodes.connections(tenant, [uid])
    assert counts[uid] >= CORNERSTONE_CONNECTIONS


async def ask(services: Services, tenant: str, recipe: Recipe, days: int) -> list[Candidate]:
    return await retrieve(services, tenant, QUESTION, recipe, T0 + timedelta(days=days))


async def test_a_cornerstone_naming_the_same_person_joins_its_seed(services: Services) -> None:
    cello, wedding, cat, *_ = await tell(
        services,
        "mi",
        [
            (0, "My friend Mira plays the cello in the city orchestra."),
            (1, "The wedding of Mira in June was the happiest day of the year."),
            (2, "Yesterday Mira adopted a grey cat from the shelter."),
            (3, "The tram was late again this morning."),
            (4, "I repaired the kitchen shelf on Saturday."),
        ],
    )
    named = {e.name for e in await services.graph.entities.of_episode("mi", wedding)}
    assert "Mira" in named, named
    await make_cornerstone(services, "mi", wedding)

    before = await ask(services, "mi", NARROW, 10)
    assert before[0].uid == cello
    assert wedding not in {c.uid for c in before}, "search misses it; no hop before sleep"

    await sleep(services, "mi", Level.MICRO, T0 + timedelta(days=10))
    found = await ask(services, "mi", NARROW, 10)
    by_uid = {c.uid: c for c in found}
    assert found[0].uid == cello
    anchor = by_uid[wedding]
    assert anchor.source == "cornerstone" and anchor.neighbour_of == cello
    assert anchor.score == found[0].score * NARROW.time.neighbour_decay
    assert cat not in by_uid or by_uid[cat].source != "cornerstone", "the cat turn is no hub"

    for off in (ablate(NARROW, "cornerstones"), ablate(NARROW, "state")):
        assert wedding not in {c.uid for c in await ask(services, "mi", off, 10)}

    # A person named in more episodes than `Graph.pointer_max` links nothing (the speaker named
    # in every turn): here Mira's three turns are too many for a limit of two.
    common = changed(NARROW, {"graph.pointer_max": 2})
    assert wedding not in {c.uid for c in await ask(services, "mi", common, 10)}


async def test_a_cornerstone_retrieved_with_a_seed_joins_it(services: Services) -> None:
    cello, house, _, _ = await tell(
        services,
        "co",
        [
            (0, "My friend Mira plays the cello in the city orchestra."),
            (1, "Our old house by the lake had a red door."),
            (2, "The tram was late again this morning."),
            (3, "I repaired the kitchen shelf on Saturday."),
        ],
    )
    await make_cornerstone(services, "co", house)
    await sleep(services, "co", Level.MICRO, T0 + timedelta(days=5))
    assert house not in {c.uid for c in await ask(services, "co", NARROW, 6)}, "nothing links it"

    # Recalled together twice: a strong co-retrieval link (`STRONG_LINK`).
    for day in (6, 7):
        await services.graph.episodes.record_access("co", [cello, house], T0 + timedelta(days=day))
    await sleep(services, "co", Level.MICRO, T0 + timedelta(days=8))
    found = await ask(services, "co", NARROW, 8)
    anchor = {c.uid: c for c in found}[house]
    assert anchor.source == "cornerstone" and anchor.neighbour_of == cello
    assert house not in {
        c.uid for c in await ask(services, "co", ablate(NARROW, "cornerstones"), 8)
    }
