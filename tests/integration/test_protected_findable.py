"""Protection means findable, on every graph backend (real stores, the real embedder, offline
sleep): what sleep protects (the only source of a current fact, a pinned turn, a cornerstone)
stays above retrieval's salience floor, so search still finds it after two years of deep sleeps;
an unprotected turn of the same age falls under the floor and leaves search."""

from __future__ import annotations

from datetime import timedelta

from memory.retrieval.recipes import get_recipe
from memory.schema import Fact, FactPrecision
from memory.services import Services
from memory.sleep.levels import Level
from serve.api import Memory
from tests.integration.test_consolidation import T0, sleep, tell

FLOOR = get_recipe("SIMPLE").priors.min_salience
STORY = [
    (0, "The spare key is under the blue flowerpot by the door."),  # a current fact's only source
    (1, "My locker code at the climbing gym is 4471."),  # pinned
    (2, "The tram was late again this morning."),  # neither: it may fade
    (3, "Big day."),  # a cornerstone (linked to 15 topics below)
]
QUESTIONS = {
    0: "Where is the spare key?",
    1: "What is my locker code at the climbing gym?",
    2: "Was the tram late this morning?",
    3: "Big day",
}


async def found(mem: Memory, user: str, question: str, uid: str) -> bool:
    hits = await mem.search(user, question, k=10, kinds=("episode",))
    return uid in [h.uid for h in hits]


async def test_protected_turns_stay_findable_after_two_years_of_deep_sleep(
    services: Services,
) -> None:
    mem = Memory(services)
    uids = await tell(services, "pro", STORY)
    home, locker, tram, stone = uids
    key = Fact(
        uid="f-key", tenant="pro", text="The spare key is under the blue flowerpot", valid_from=T0
    )
    await services.graph.facts.add(key, home)
    assert await services.graph.episodes.sole_evidence("pro", [home, tram]) == {home}
    await mem.pin("pro", locker)
    await services.graph.topics.link("pro", stone, [f"topic-{i}" for i in range(15)])
    for i, uid in enumerate(uids):
        assert await found(mem, "pro", QUESTIONS[i], uid), "found before any sleep"

    # Deep sleep every two months for two years, offline forgetting as configured (protection
    # keeps the three; the tram may be forgotten).
    for month in range(2, 25, 2):
        await sleep(services, "pro", Level.DEEP, T0 + timedelta(days=30.5 * month))

    episodes = {e.uid: e for e in await services.graph.episodes.get_many("pro", uids)}
    for uid in (home, locker, stone):
        assert episodes[uid].salience >= FLOOR, (uid, episodes[uid].salience)
        assert await found(mem, "pro", QUESTIONS[uids.index(uid)], uid)
    # The control: the same age, unprotected, it decays under the floor and leaves search
    # (unless forgetting already took it).
    if tram in episodes:
        assert episodes[tram].salience < FLOOR
        assert not await found(mem, "pro", QUESTIONS[2], tram)


TIMELESS_STORY = [
    (0, "My blood type is O negative."),  # timeless: a body's constant
    (
        1,
        "Oh and again, my blood type is O negative.",
    ),  # the same fact, so no turn is its only source
    (2, "The tram was late again this morning."),  # a passing remark
]


async def test_a_timeless_fact_keeps_its_turns_findable_while_a_passing_remark_fades(
    services: Services,
) -> None:
    """A fact timeless by nature (precision `unbounded`) is what its turns said for good: both
    stay in search after two years of deep sleeps, though neither is its only source (so the
    sole-evidence rule alone would let forgetting take one); a passing remark of the same age
    falls under the floor and leaves search."""
    mem = Memory(services)
    blood, again, tram = uids = await tell(services, "tl", TIMELESS_STORY)
    (fact,) = await services.graph.facts.list("tl")
    assert fact.attribute == "blood type" and fact.precision is FactPrecision.UNBOUNDED
    assert set(await services.graph.facts.sources("tl", fact.uid)) == {blood, again}
    assert await services.graph.episodes.sole_evidence("tl", uids) == {blood, again}
    questions = {blood: "What is my blood type?", again: "What is my blood type?"}
    questions[tram] = "Was the tram late this morning?"
    for uid in uids:
        assert await found(mem, "tl", questions[uid], uid), "found before any sleep"

    for month in range(2, 25, 2):
        await sleep(services, "tl", Level.DEEP, T0 + timedelta(days=30.5 * month))

    episodes = {e.uid: e for e in await services.graph.episodes.get_many("tl", uids)}
    for uid in (blood, again):
        assert episodes[uid].salience >= FLOOR, (uid, episodes[uid].salience)
        assert await found(mem, "tl", questions[uid], uid)
    if tram in episodes:  # forgetting may have taken it
        assert episodes[tram].salience < FLOOR
        assert not await found(mem, "tl", questions[tram], tram)
