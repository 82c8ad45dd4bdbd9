"""Daily sleep on every graph backend (real SQLite or Neo4j, Qdrant in memory, the real embedder,
offline heuristics): concepts from turns that recur across days, the narrative loop, the diary,
idempotency, what forgetting and deletion do to them, and the API that reads them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from graph.errors import ServiceError
from memory.services import Services
from memory.sleep.concepts import MIN_DAYS, concept_uid
from memory.sleep.levels import Level
from memory.sleep.plan import Decision
from memory.sleep.rescore import Candidate
from serve.api import ConceptView, DiaryView, Memory
from tests.integration.test_consolidation import T0, sleep, tell

MONDAY = T0
"""A Monday morning (the consolidation tests' start)."""

# Marathon training on four Mondays, small talk and one-off details on other days.
STORY: list[tuple[float, str]] = [
    (0, "I started training for the Lisbon marathon, my first long run was 12 km."),
    (1, "haha ok, sounds good"),
    (2, "We had pizza at a new place near the station."),
    (7, "Marathon training update: the long run was 18 km and my knees held up."),
    (9, "My cousin is visiting from Chicago next month."),
    (14, "Another long run for the marathon, 24 km today, the training plan works."),
    (16, "sure, thanks"),
    (21, "Marathon training is going well, I ran 28 km in the long run this morning."),
]
NOW = MONDAY + timedelta(days=21, hours=4)


async def test_daily_sleep_forms_a_concept_with_its_loop_and_writes_the_diary(
    services: Services,
) -> None:
    uids = await tell(services, "ada", STORY)
    await tell(services, "bob", STORY[:3])
    mem = Memory(services)
    assert await mem.concepts("ada") == [] and await mem.diary("ada") == []

    report = await sleep(services, "ada", Level.DAILY, NOW)

    (concept,) = await mem.concepts("ada")
    running = [uids[0], uids[3], uids[5], uids[7]]
    assert concept.uid == concept_uid("ada", uids[0])
    assert concept.episodes == sorted(running)
    assert "marathon" in concept.label and "marathon" in concept.terms
    assert (concept.episode_count, concept.day_count) == (4, 4)
    assert (concept.loop, concept.loop_count, concept.loop_emotion) == ("Monday", 4, "")
    assert concept.first_seen == MONDAY and concept.last_seen == MONDAY + timedelta(days=21)
    assert "Came up on 4 days between 03 Mar 2025 and 24 Mar 2025, mostly on Mondays" in (
        concept.description
    )
    assert "concepts: 1 (1 written, 0 dissolved, 1 narrative loops)" in report.notes
    assert "diary: 8 of 8 days written" in report.notes

    diary = await mem.diary("ada")
    assert [d.day for d in diary] == [
        (MONDAY + timedelta(days=day)).date().isoformat() for day, _ in STORY
    ]
    last = diary[-1]
    assert last.sources == [uids[7]] and last.episode_count == 1
    assert last.text.startswith("Monday 24 March 2025. We talked once.")
    assert (
        f"We came back to {concept.label} (4th day it came up; it tends to come up on Mondays)"
        in (last.text)
    )
    assert '"Marathon training is going well, I ran 28 km in the long run this morning."' in (
        last.text
    )
    assert last.concepts == [concept.label]
    assert diary[0].concepts == []  # the first day: nothing came back yet
    assert await mem.concepts("bob") == [] and await mem.diary("bob") == []

    # Idempotent: the same day again writes nothing and gives the same records.
    again = await sleep(services, "ada", Level.DAILY, NOW)
    assert "concepts: 1 (0 written, 0 dissolved, 1 narrative loops)" in again.notes
    assert "diary: 0 of 8 days written" in again.notes
    assert await mem.concepts("ada") == [concept]
    assert await mem.diary("ada") == diary


async def test_forgetting_a_member_drops_it_and_dissolves_a_concept_left_too_small(
    services: Services,
) -> None:
    uids = await tell(services, "ada", STORY)
    await sleep(services, "ada", Level.DAILY, NOW)
    graph = services.graph
    uid = concept_uid("ada", uids[0])

    def forget_only(*chosen: str):  # type: ignore[no-untyped-def]
        async def classify(batch: Sequence[Candidate]) -> dict[str, Decision]:
            return {c.episode.uid: Decision.FORGET for c in batch if c.episode.uid in chosen}

        return classify

    later = NOW + timedelta(days=1)
    # uids[0] and uids[7] are the only sources of facts (protected); uids[3] is not.
    report = await sleep(services, "ada", Level.DEEP, later, classify=forget_only(uids[3]))
    assert report.forgotten == 1
    members = await graph.concepts.members("ada", uid)
    assert members.episodes == sorted([uids[0], uids[5], uids[7]])
    concept = await graph.concepts.get("ada", uid)
    assert concept is not None and (concept.episode_count, concept.day_count) == (3, 3)
    assert concept.loop == "Monday" and concept.loop_count == 3
    # Its day's entry went with it (nothing else was said that day).
    days = [e.day for e in await graph.diary.list("ada")]
    assert (MONDAY + timedelta(days=7)).date().isoformat() not in days and len(days) == 7

    # One more goes: two days left, under MIN_DAYS, so the concept is dissolved.
    assert MIN_DAYS == 3
    await sleep(
        services, "ada", Level.DEEP, later + timedelta(hours=1), classify=forget_only(uids[5])
    )
    assert await graph.concepts.list("ada") == []
    assert (await graph.episodes.groups("ada", uids[0])).concepts == []


async def test_deleting_a_turn_rewrites_its_day_and_erase_removes_everything(
    services: Services,
) -> None:
    uids = await tell(services, "ada", [*STORY, (21.1, "Also, I booked the train to Lisbon.")])
    await sleep(services, "ada", Level.DAILY, NOW)
    mem = Memory(services)
    day = (MONDAY + timedelta(days=21)).date()
    before = {d.day: d for d in await mem.diary("ada")}[day.isoformat()]
    assert before.episode_count == 2

    await mem.delete("ada", uids[7])

    graph = services.graph
    assert (
        uids[7] not in (await graph.concepts.members("ada", concept_uid("ada", uids[0]))).episodes
    )
    assert day.isoformat() not in {d.day for d in await mem.diary("ada")}
    await sleep(services, "ada", Level.DAILY, NOW + timedelta(minutes=5))
    after = {d.day: d for d in await mem.diary("ada")}[day.isoformat()]
    assert after.sources == [uids[8]] and "28 km" not in after.text

    exported = await mem.export("ada")
    assert [c.uid for c in exported.concepts] == [c.uid for c in await mem.concepts("ada")]
    assert len(exported.diary) == len(await mem.diary("ada")) == 8
    await mem.erase("ada")
    assert await graph.concepts.list("ada") == [] and await graph.diary.list("ada") == []


async def test_a_store_failure_mid_diary_is_finished_by_the_next_run(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    await tell(services, "hu", STORY)
    await tell(services, "twin", STORY)
    graph = services.graph
    real = graph.diary.put
    calls = 0

    async def fail_on_third(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 3:
            raise ConnectionError("graph store went away")
        return await real(*args, **kwargs)

    monkeypatch.setattr(graph.diary, "put", fail_on_third)
    with pytest.raises(ServiceError, match=r"sleep failed \(ConnectionError\)"):
        await sleep(services, "hu", Level.DAILY, NOW)
    monkeypatch.setattr(graph.diary, "put", real)
    assert len(await graph.diary.list("hu")) == 2

    finished = await sleep(services, "hu", Level.DAILY, NOW)
    await sleep(services, "twin", Level.DAILY, NOW)
    assert "diary: 6 of 8 days written" in finished.notes

    def summary(concepts: list[ConceptView], diary: list[DiaryView]) -> object:
        return (
            [(c.label, c.description, c.day_count, c.loop, len(c.episodes)) for c in concepts],
            [(d.day, d.text, d.concepts) for d in diary],
        )

    mem = Memory(services)
    assert summary(await mem.concepts("hu"), await mem.diary("hu")) == summary(
        await mem.concepts("twin"), await mem.diary("twin")
    )


async def test_a_loop_records_the_emotion_that_recurs_with_it(services: Services) -> None:
    stressed = [
        (day, f"I'm so stressed: {text}" if day in (0, 7, 21) else text) for day, text in STORY
    ]
    await tell(services, "st", stressed)

    await sleep(services, "st", Level.DAILY, NOW)

    (concept,) = await Memory(services).concepts("st")
    assert (concept.loop, concept.loop_count, concept.loop_emotion) == ("Monday", 4, "stressed")
    assert "mostly on Mondays (feeling stressed)" in concept.description
