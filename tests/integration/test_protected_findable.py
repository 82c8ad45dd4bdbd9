"""Protection means findable, on every graph backend (real stores, the real embedder, offline
sleep): what sleep protects (the only source of a current fact, a pinned turn, a cornerstone)
stays above retrieval's salience floor, so search still finds it after two years of deep sleeps;
an unprotected turn of the same age falls under the floor and leaves search. And the turn next
to a protected one on its thread stays searchable, so the lift retrieval's smoothing gives the
protected turn survives sleep."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from memory.retrieval.recipes import get_recipe
from memory.schema import Fact, FactPrecision
from memory.services import Services
from memory.sleep.levels import Level
from memory.sleep.plan import Decision
from memory.sleep.rescore import Candidate
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


ASKED = [  # (day, text): the day is the thread; each question's answer is the next turn
    (0, "Which sport do I do now that my knee is bad? Not running anymore."),  # context
    (0, "Laps at the municipal pool, three mornings a week."),  # a current fact's only source
    (1, "ok"),  # next on the chain, another thread
    (1, "Which sport does my brother Rui do now?"),
    (1, "He plays handball on Sundays."),
    (2, "Which sport does Lina do at school now?"),
    (2, "Gymnastics on Wednesdays."),
    (3, "What sport is on TV tonight?"),  # next to no protected turn
    (3, "The cycling race, I think."),
]


async def rank_of(mem: Memory, user: str, question: str, uid: str) -> int | None:
    hits = await mem.search(user, question, k=10, kinds=("episode",))
    return next((i for i, h in enumerate(hits) if h.uid == uid), None)


async def test_a_protected_turn_keeps_the_turn_beside_it_and_so_its_rank(
    services: Services,
) -> None:
    """Retrieval lends a turn its thread neighbour's relevance, so archiving the question a
    protected answer followed would drop the answer below other people's answers (each still
    lifted by its own question): the answer was second before sleep and third after. Whatever
    the classifier decides, the turn next to a protected one on its thread stays searchable, so
    the answer keeps its rank; a turn next to it on the chain but of another thread, and one
    beside no protected turn, are archived as decided."""
    mem = Memory(services)
    # the user's lines alone, minutes apart (smoothing lends a one-sided turn its neighbour's
    # relevance in full)
    lines = [(day + i / 1440, text) for i, (day, text) in enumerate(ASKED)]
    uids = await tell(services, "ctx", lines, reply="")
    question, answer, ok, tv = uids[0], uids[1], uids[2], uids[7]
    swim = Fact(uid="f-swim", tenant="ctx", text="The user swims laps at the pool", valid_from=T0)
    await services.graph.facts.add(swim, answer)
    assert await services.graph.episodes.sole_evidence("ctx", uids) == {answer}
    asked = "What sport do I do now?"
    before = await rank_of(mem, "ctx", asked, answer)
    assert before == 1, "second, under the question it answers"

    async def archive_these(batch: Sequence[Candidate]) -> dict[str, Decision]:
        wanted = {question, ok, tv}
        return {c.episode.uid: Decision.ARCHIVE for c in batch if c.episode.uid in wanted}

    report = await sleep(
        services, "ctx", Level.DEEP, T0 + timedelta(days=60), classify=archive_these
    )

    assert await rank_of(mem, "ctx", asked, answer) == before  # third without the rule
    assert report.context == 1 and report.archived == 2
    episodes = {e.uid: e for e in await services.graph.episodes.get_many("ctx", uids)}
    assert not episodes[question].archived
    assert episodes[ok].archived and episodes[tv].archived
