"""Session summaries on every graph backend, real stores and embedder, offline: a thread of ten
daily sessions gets one summary per session (nine from bookkeeping, as each day's first turn
finishes the day before; the last from the consolidation pass), and a broad question reaches
the right session's turns through its summary (the ranks are the same on every backend: the
uids are fixed and the vectors are the same)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from graph.bookkeeping import run_episode
from memory.retrieval.candidates import Candidate
from memory.retrieval.recipes import ablate, get_recipe
from memory.retrieval.retrieve import retrieve
from memory.schema import stable_uid
from memory.services import Services
from memory.write.episodes import remember
from memory.write.sessions import session_uid
from tests.integration.test_consolidation import sleep

T0 = datetime(2026, 1, 5, 18, 0, tzinfo=UTC)
SESSIONS = [
    [
        "I planted tomatoes and basil in pots on the balcony.",
        "The basil is growing fast in the sun.",
        "Snails ate half of the lettuce overnight.",
    ],
    [
        "I ran five kilometres along the canal this morning.",
        "My left shin hurts a little after long runs.",
        "I signed up for the autumn 10k race.",
    ],
    [
        "Our book club is reading a novel about a lighthouse keeper.",
        "Priya hosted the meeting and baked a lemon cake.",
        "Next month we read a thriller set in Oslo.",
    ],
    [
        "The quarterly report for my team is due on Friday.",
        "My manager wants more charts about the sales numbers.",
        "I stayed late to fix the spreadsheet formulas.",
    ],
    [
        "The builder came round and quoted 12,000 euros for the renovation.",
        "We picked white tiles and oak cabinets.",
        "The plumber can only start in May, so the sink moves then.",
    ],
    [
        "Our cat Miso had her yearly check-up at the vet.",
        "The vet said she should lose a bit of weight.",
        "We bought a puzzle feeder to slow down her eating.",
    ],
    [
        "We are planning a long weekend in Lisbon.",
        "I want to try the custard tarts in Belem.",
        "The flights are cheaper on Thursday evening.",
    ],
    [
        "My sister's birthday party is on Saturday.",
        "I ordered a photo book of our childhood as a present.",
        "Mum is making her famous apple pie.",
    ],
    [
        "I started learning to play the ukulele.",
        "My fingertips hurt from pressing the strings.",
        "I can already play three chords.",
    ],
    [
        "We had a power cut for two hours last night.",
        "We played board games by candlelight.",
        "The freezer stayed cold enough, luckily.",
    ],
]


def uid_of(day: int, i: int) -> str:
    return stable_uid("alice", "summaries-test", str(day), str(i))


async def tell(services: Services) -> datetime:
    """The ten sessions, one a day in one thread, each turn through bookkeeping."""
    for day, turns in enumerate(SESSIONS):
        for i, text in enumerate(turns):
            await remember(
                services,
                tenant="alice",
                thread_id="main",
                user_text=text,
                agent_text="I see.",
                at=T0 + timedelta(days=day, minutes=5 * i),
                uid=uid_of(day, i),
            )
            await run_episode(services, "alice", uid_of(day, i))
    return T0 + timedelta(days=len(SESSIONS) + 1)


async def test_each_session_gets_a_summary_and_a_broad_question_finds_it(
    services: Services,
) -> None:
    now = await tell(services)
    graph = services.graph
    # Bookkeeping finished the nine sessions a later day's turn followed; the last is open.
    assert len(await graph.summaries.list("alice", "main")) == len(SESSIONS) - 1
    report = await sleep(services, "alice", "micro", now)
    assert report.summaries == 1
    summaries = await graph.summaries.list("alice", "main")
    assert [s.uid for s in summaries] == [
        session_uid("alice", "main", T0 + timedelta(days=d)) for d in range(len(SESSIONS))
    ]
    cat = summaries[5]
    assert cat.episode_uids == tuple(uid_of(5, i) for i in range(3))
    assert "Miso" in cat.text and cat.ended_at == T0 + timedelta(days=5, minutes=10)
    assert await services.vectors.count("summaries", "alice") == len(SESSIONS)
    again = await sleep(services, "alice", "micro", now)
    assert again.summaries == 0  # nothing twice
    assert await graph.summaries.list("alice") == summaries

    # A broad question: the cat's session through its summary. Its turns gain on the turns of
    # other sessions (at the default weight, 0.25, chosen on the development benchmarks:
    # docs/adr/0100-summaries-in-retrieval.md); without the summaries the third one lags
    # further behind.
    question = "Tell me about my pet."
    cat_turns = {uid_of(5, i) for i in range(3)}
    plain = await retrieve(
        services, "alice", question, ablate(get_recipe("SIMPLE"), "summaries"), now
    )
    default = await retrieve(services, "alice", question, get_recipe("SIMPLE"), now)
    assert cat_turns <= {c.episode_uid for c in default[:5]}
    assert {c.episode_uid for c in default[:2]} <= cat_turns

    def lag(ranked: list[Candidate]) -> float:  # the third cat turn behind the best other turn
        score = {c.episode_uid: c.score for c in ranked}
        return max(v for u, v in score.items() if u not in cat_turns) - score[uid_of(5, 2)]

    assert lag(default) < lag(plain)
