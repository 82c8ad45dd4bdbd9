"""A 200-message thread through the agent on every graph backend: ten facts planted across it
are still in the reply prompt after the last message (verbatim, key exchanges, summary or
impression), and the compressed thread and the memories stay within their budgets.

Everything runs offline (heuristic routing, extraction and compression); only the reply's model
is a fake, which records each prompt it is given and answers with the agent's usual filler.
"""

from __future__ import annotations

import asyncio
import random
import statistics
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

import nodes.respond
from graph.agent import builder
from graph.bookkeeping import graph as bookkeeping
from memory.retrieval.ranking import estimate_tokens
from memory.services import ChatModels, Services, use_services
from nodes.context import Context
from tests.conftest import installed

PLANTED = {
    5: ("By the way, my sister Marguerite just had twins, two boys.", "Marguerite"),
    14: ("I've decided to quit my job at Dunmore Logistics in April.", "Dunmore"),
    23: ("I'm allergic to shellfish, so I never order the paella.", "shellfish"),
    33: ("My dog is a greyhound called Pickle and he is very lazy.", "Pickle"),
    44: ("Honestly I'm scared about the biopsy results next Tuesday.", "biopsy"),
    52: ("We booked a cabin near Tromsø for the winter holidays.", "Tromsø"),
    61: ("I grew up in Ballarat, a small town in Australia.", "Ballarat"),
    70: ("My partner Joaquin wants us to adopt a child next year.", "Joaquin"),
    81: ("I started learning the cello in January and I love it.", "cello"),
    90: ("Our landlord is selling the house, so we must move out by August.", "landlord"),
}

SMALL_TALK = [
    "Hi!",
    "Hey, good morning.",
    "Hello again.",
    "Ok thanks.",
    "Haha yes.",
    "Cool, makes sense.",
    "Thanks, that helps.",
    "What do you think about that?",
    "Any tips for sleeping better?",
]

ACTIVITIES = [
    "cooked a vegetable curry",
    "fixed the squeaky hinge on the wardrobe",
    "repotted the basil plant",
    "watched a quiz show",
    "ironed shirts for the week",
    "called the bank about a card payment",
    "walked around the park twice",
    "tidied the shelves in the garage",
    "baked some banana bread",
    "answered emails about the quarterly report",
    "sorted through old photos",
    "took the recycling out",
    "read a few chapters of a thriller",
    "cleaned the bathroom tiles",
    "went to the supermarket for groceries",
    "listened to a podcast about history",
    "replaced a light bulb in the hallway",
    "played a board game with friends",
    "paid the electricity bill",
    "wrote a shopping list for the weekend",
    "did a short yoga session",
    "washed the car",
    "looked at second-hand bikes online",
    "had a long phone call with a colleague about rotas",
]
WHEN = ["this morning", "after lunch", "yesterday evening", "before work", "at the weekend"]
COMMENT = [
    "it was alright",
    "nothing exciting",
    "it took longer than expected",
    "pretty relaxing actually",
    "the usual routine",
    "not much else to report",
]


def chatter(rng: random.Random) -> str:
    """One everyday sentence: small talk, or what someone did and how it went."""
    if rng.random() < 0.3:
        return rng.choice(SMALL_TALK)
    return f"I {rng.choice(ACTIVITIES)} {rng.choice(WHEN)}, {rng.choice(COMMENT)}."


QUESTION = "Can you remind me of the important things I told you in this conversation?"


def thread_turns(seed: int = 15) -> list[str]:
    """99 user messages of one to three everyday sentences, ten of them with a planted fact in
    the middle of the chatter, then the question."""
    rng = random.Random(seed)
    turns = []
    for i in range(99):
        said = [chatter(rng) for _ in range(rng.randint(1, 3))]
        if i in PLANTED:
            said.insert(rng.randint(0, len(said)), PLANTED[i][0])
        turns.append(" ".join(said))
    return [*turns, QUESTION]


def messages_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


@pytest.fixture
def reply_model(monkeypatch: pytest.MonkeyPatch) -> list[list[BaseMessage]]:
    """The reply's model: records every prompt and answers like a polite agent."""
    prompts: list[list[BaseMessage]] = []

    async def generate(task: str, messages: Sequence[BaseMessage], **_: Any) -> str:
        prompts.append(list(messages))
        return "I see. Tell me more."

    monkeypatch.setattr(nodes.respond, "generate", generate)
    return prompts


TIGHT = {
    "thread_exchange_tokens": 200,
    "thread_summary_tokens": 100,
    "thread_impression_tokens": 40,
}
"""Budgets small enough that the oldest turns go through every layer down to the impression."""


def with_budgets(budgets: dict[str, int]) -> Any:
    """The bookkeeping pipeline run with these layer budgets in its context."""

    async def pipeline(services: Services, tenant: str, uid: str) -> object:
        context = Context(user_id=tenant, **budgets)
        with use_services(services):
            return await bookkeeping.ainvoke({"episode_uid": uid}, context=context)

    return pipeline


@pytest.mark.parametrize("budgets", [{}, TIGHT], ids=["default-budgets", "tight-budgets"])
async def test_planted_facts_survive_a_200_message_thread(
    services: Services, reply_model: list[list[BaseMessage]], budgets: dict[str, int]
) -> None:
    turns = thread_turns()
    if budgets:
        services.bookkeeping.pipeline = with_budgets(budgets)
    with installed(services, ChatModels.offline_for(services.settings)):
        app = builder.compile(checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "long"}}
        for text in turns:
            out = await app.ainvoke(
                {"messages": [{"role": "user", "content": text}]},
                config,
                context={"user_id": "ann", **budgets},
            )
            async with asyncio.timeout(120):
                await services.bookkeeping.drain()
    assert len(out["messages"]) == 200
    prompt = reply_model[-1]
    system = str(prompt[0].content)
    whole = messages_text(prompt)
    found = [key for _, key in PLANTED.values() if key in whole]
    assert len(found) >= 9, f"only {found} of the planted facts reached the prompt"
    thread = system.split("# Earlier in this conversation", 1)[1].split("\n# ", 1)[0]
    limit = sum(budgets.values()) if budgets else 2700  # the three layers' budgets
    assert estimate_tokens(thread) <= limit + 60  # plus the fence tags
    if budgets:
        assert "<summary>" in thread  # the oldest turns went down the layers
    if "# Memories" in system:
        memories = system.split("# Memories", 1)[1]
        assert estimate_tokens(memories) <= 2000 + 100  # the budget plus the section's rules
    # The old facts are not in the verbatim part: the layers carried them.
    verbatim = messages_text(prompt[1:])
    assert "Marguerite" not in verbatim and "Marguerite" in thread
    tokens = [estimate_tokens(messages_text(p)) for p in reply_model]
    print(
        f"\nreply prompt tokens over {len(tokens)} turns: p50 {statistics.median(tokens):.0f}, "
        f"max {max(tokens)}; thread block {estimate_tokens(thread)}; found {len(found)}/10"
    )
