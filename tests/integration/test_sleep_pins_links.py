"""Pinned memories and co-retrieval links through sleep, on every graph backend (real stores,
the real embedder, offline heuristics): a pin outlasts every cycle and wins over a plan made
before it; pinning restores an archived memory; memories retrieved together become linked,
the links feed salience and fade."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta

import pytest

from memory.services import Services
from memory.sleep.coretrieval import PRUNE_WEIGHT, link_weight
from memory.sleep.levels import Level
from memory.sleep.plan import Decision, archive_episode
from memory.sleep.rescore import Candidate
from serve.api import Memory, NotFound
from tests.integration.test_consolidation import FORGET_ALL, T0, doctor_clean, sleep, tell


async def test_a_pinned_episode_is_never_archived_expired_nor_forgotten(
    services: Services,
) -> None:
    busy, chat, other = await tell(services, "pi", [(0, "busy this week"), (1, "ok"), (2, "mm")])
    await services.graph.episodes.set_pinned("pi", busy, True)
    await services.graph.episodes.set_pinned("pi", chat, True)
    await services.graph.episodes.set_pinned("pi", chat, False)  # unpinned: ordinary again

    late = T0 + timedelta(days=700)
    report = await sleep(services, "pi", Level.DEEP, late, thresholds=FORGET_ALL)

    assert await services.graph.episodes.list_uids("pi") == [busy]
    kept = await services.graph.episodes.get("pi", busy)
    assert kept is not None and kept.pinned and not kept.archived
    assert await services.vectors.scroll_episode_uids("derivatives", "pi") == {busy}
    assert (report.expired, report.forgotten) == (0, 2)
    assert other not in await services.graph.episodes.list_uids("pi")
    assert await doctor_clean(services) == []


async def test_a_pinned_episode_does_not_decay(services: Services) -> None:
    pinned, plain = await tell(services, "pd", [(0, "I had tea."), (0, "I had tea!")])
    await services.graph.episodes.set_pinned("pd", pinned, True)
    await sleep(services, "pd", Level.MICRO, T0 + timedelta(days=1))
    first = await services.graph.episodes.get_many("pd", [pinned, plain])
    await sleep(services, "pd", Level.MICRO, T0 + timedelta(days=2000))
    later = await services.graph.episodes.get_many("pd", [pinned, plain])
    assert later[0].salience == pytest.approx(first[0].salience)
    assert later[1].salience < first[1].salience / 2


async def test_a_pin_made_after_the_plan_wins(services: Services) -> None:
    """The user pins a memory while the forgetting batch that condemned it is being decided:
    the pin is re-read before the decision is applied."""
    a, b = await tell(services, "pw", [(0, "ok"), (1, "fine")])

    async def forget_and_meanwhile_pin(batch: Sequence[Candidate]) -> dict[str, Decision]:
        await services.graph.episodes.set_pinned("pw", b, True)
        return {c.episode.uid: Decision.FORGET for c in batch}

    report = await sleep(
        services, "pw", Level.DEEP, T0 + timedelta(days=700), classify=forget_and_meanwhile_pin
    )
    assert await services.graph.episodes.list_uids("pw") == [b]
    assert (report.forgotten, report.pinned) == (1, 1)


async def test_pinning_through_the_api_restores_an_archived_memory(services: Services) -> None:
    mem = Memory(services)
    (uid,) = (await mem.add("ra", "My grandmother's recipe: lentil soup with cumin.", when=T0)).uids
    await mem.flush()
    episode = await services.graph.episodes.get("ra", uid)
    assert episode is not None
    await archive_episode(services, episode)
    assert await services.vectors.scroll_episode_uids("derivatives", "ra") == set()

    item = await mem.pin("ra", uid)
    await mem.flush()
    assert item.pinned is True
    assert await services.vectors.scroll_episode_uids("derivatives", "ra") == {uid}
    restored = await services.graph.episodes.get("ra", uid)
    assert restored is not None and restored.pinned and not restored.archived
    assert (await mem.get("ra", uid)).pinned is True
    assert await doctor_clean(services) == []

    exported = await mem.export("ra")
    assert [e.pinned for e in exported.episodes] == [True]
    await mem.erase("ra")
    await mem.import_("ra", exported)
    assert (await mem.get("ra", uid)).pinned is True  # the pin travels with the export

    assert (await mem.unpin("ra", uid)).pinned is False
    with pytest.raises(NotFound):
        await mem.pin("someone-else", uid)
    with pytest.raises(NotFound):
        await mem.pin("ra", "no-such-uid")


async def test_memories_retrieved_together_are_linked_and_the_links_feed_salience(
    services: Services,
) -> None:
    texts = [(0, "I had pasta for lunch."), (0, "I had rice for lunch.")] * 2
    a, b, c, d = await tell(services, "co", texts)
    for day in (1, 2):  # a and b shown together twice; c and d as often, but never together
        when = T0 + timedelta(days=day)
        await services.graph.episodes.record_access("co", [a, b], when)
        await services.graph.episodes.record_access("co", [c], when)
        await services.graph.episodes.record_access("co", [d], when)

    report = await sleep(services, "co", Level.MICRO, T0 + timedelta(days=3))

    (link,) = await services.graph.coretrieval.list("co")
    assert (link.a, link.b, link.count) == (min(a, b), max(a, b), 2)
    assert link.weight == pytest.approx(link_weight(2, 1.0))
    assert report.links_reweighed == 1
    links = await services.graph.episodes.connections("co", [a, b, c, d])
    assert (links[a], links[b]) == (links[c] + 1, links[d] + 1)  # same texts, plus the link
    ea, eb, ec, ed = await services.graph.episodes.get_many("co", [a, b, c, d])
    assert ea.salience > ec.salience and eb.salience > ed.salience


async def test_links_fade_and_are_pruned(services: Services) -> None:
    a, b = await tell(services, "cf", [(0, "Tea at noon."), (0, "Coffee at noon.")])
    await services.graph.episodes.record_access("cf", [a, b], T0 + timedelta(days=1))
    days = 30.0 * math.log(math.log(2) / PRUNE_WEIGHT) + 1  # past the prune point of one
    report = await sleep(services, "cf", Level.MICRO, T0 + timedelta(days=1 + days))
    assert (report.links_reweighed, report.links_pruned) == (0, 1)
    assert await services.graph.coretrieval.list("cf") == []
    again = await sleep(services, "cf", Level.MICRO, T0 + timedelta(days=2 + days))
    assert (again.links_reweighed, again.links_pruned) == (0, 0)
