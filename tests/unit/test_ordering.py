"""Ordering questions: recognised, their events split into search passes, and the memories
shown to the reply (and the offline answer) in time order with their dates."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.schema import utcnow
from memory.text.ordering import in_time_order, is_ordering
from nodes.respond import respond
from tasks.offline_answer import plain_answer
from tasks.respond import memory_block
from tests.unit.fake_chat import human, runtime, seed


@pytest.mark.parametrize(
    "question",
    [
        "What happened first, my trip to Oslo or the wedding?",
        "In what order did I adopt the cat, move to Leeds and start the new job?",
        "Which came first: the promotion or the marathon?",
        "Did I start the cello before or after the surgery?",
        "Give me a timeline of my job changes.",
    ],
)
def test_ordering_questions(question: str) -> None:
    assert is_ordering(question)


@pytest.mark.parametrize(
    "question",
    ["What did I eat yesterday?", "When did I go to Oslo?", "Is it first come, first served?"],
)
def test_other_questions_are_not_about_order(question: str) -> None:
    assert not is_ordering(question)


def memory(text: str, day: int, uid: str) -> dict:
    return {
        "episode_uid": uid,
        "score": 0.9,
        "created_at": datetime(2026, 3, day, 12, tzinfo=UTC).isoformat(),
        "thread_id": "t1",
        "content": f"User: {text}\nAgent: Noted.",
        "fragments": [text],
    }


RANKED = [  # best first, not in time order
    memory("We got married in Bergen.", 20, "e2"),
    memory("I flew to Oslo for the conference.", 3, "e1"),
    memory("We honeymooned in Crete.", 27, "e3"),
]


def test_memories_shown_oldest_first_with_dates_for_ordering() -> None:
    assert in_time_order(RANKED) == [1, 0, 2]
    text, levels = memory_block(RANKED, 2000, utcnow(), chronological=True)
    assert text.index("Oslo") < text.index("Bergen") < text.index("Crete")
    assert 'date="2026-03-03"' in text and levels == ["detailed"] * 3
    best_first, _ = memory_block(RANKED, 2000, utcnow())
    assert best_first.index("Bergen") < best_first.index("Oslo")


def test_budget_still_degrades_by_rank_when_shown_in_time_order() -> None:
    long = [
        {**m, "content": m["content"] + " " + "detail " * 300, "fragments": m["fragments"]}
        for m in RANKED
    ]
    _, levels = memory_block(long, 400, utcnow(), chronological=True)
    assert levels[0] == "detailed" and levels[-1] != "detailed"  # the worst-ranked degrades


def test_offline_answer_tells_the_events_in_order_with_dates() -> None:
    now = datetime(2026, 4, 1, tzinfo=UTC)
    turn = {"text": "What happened first, the Oslo trip or the wedding?"}
    close = [{**m, "similarity": 0.5} for m in RANKED]  # as retrieval reports them
    reply = plain_answer(turn, close, [], {}, now)
    assert reply.startswith("In the order it happened: On 3 March you told me that you flew")
    assert reply.index("Oslo") < reply.index("Bergen") < reply.index("Crete")
    assert "On 20 March" in reply and "On 27 March" in reply


async def test_reply_prompt_orders_memories_for_an_ordering_question(
    agent_services, fake_chat
) -> None:
    model = fake_chat(script=["Oslo first."])
    state = {**human("What happened first, the Oslo trip or the wedding?"), "memories": RANKED}
    await respond(state, runtime())
    system = model.calls[0]["messages"][0].content
    assert "in time order, oldest first" in system
    assert system.index("Oslo") < system.index("Bergen") < system.index("Crete")


async def test_agent_offline_recalls_the_events_in_time_order(agent_services, offline) -> None:
    from graph.agent import builder

    events = [
        ("I ran my first half marathon in Porto.", datetime(2026, 2, 8, 10, tzinfo=UTC)),
        ("I adopted a rescue cat called Miso.", datetime(2025, 11, 2, 10, tzinfo=UTC)),
        ("I started a new job at Helix Labs.", datetime(2026, 1, 12, 10, tzinfo=UTC)),
    ]
    for text, at in events:
        await seed(agent_services, "alice", [text], at=at)
    app = builder.compile()
    out = await app.ainvoke(
        {
            "messages": [
                {
                    "role": "user",
                    "content": (
                        "In what order did I adopt the cat, start the new job and run the half marathon?"
                    ),
                }
            ]
        },
        context={"user_id": "alice"},
    )
    reply = out["messages"][-1].content
    assert reply.index("Miso") < reply.index("Helix") < reply.index("Porto")
    assert "On 2 November 2025" in reply and "On 8 February" in reply
