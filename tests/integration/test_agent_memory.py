"""Memory across threads, on every graph backend: a fact told in thread 1 is recalled in
thread 2 for the same user_id, and never reaches another user_id (not even the prompt)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from graph.agent import builder
from memory.schema import EpisodeStatus
from memory.services import ChatModels, Services
from tests.conftest import installed
from tests.unit.fake_chat import ScriptedChatModel, assessment

FACT = "My grandmother's village is called Zelenograd and she keeps three goats there."
QUESTION = "What is the name of my grandmother's village?"


@pytest.fixture
async def agent(services: Services) -> AsyncIterator[Services]:
    """The parametrised services (SQLite or Neo4j) installed as the agent's process services."""
    with installed(services):
        yield services


@pytest.fixture
def offline(agent: Services) -> Iterator[None]:
    with installed(agent, ChatModels.offline_for(agent.settings)):
        yield


async def ask(app, text: str, thread: str, user: str) -> dict:
    return await app.ainvoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user},
    )


async def settle(services: Services) -> None:
    async with asyncio.timeout(120):
        await services.bookkeeping.drain()


async def test_offline_fact_crosses_threads_not_users(agent: Services, offline) -> None:
    app = builder.compile(checkpointer=InMemorySaver())
    told = await ask(app, FACT, "thread-1", "alice")
    await settle(agent)
    stored = await agent.graph.episodes.get("alice", told["episode"]["uid"])
    assert stored.status == EpisodeStatus.PROCESSED and stored.thread_id == "thread-1"

    recalled = await ask(app, QUESTION, "thread-2", "alice")
    assert "Zelenograd" in recalled["messages"][-1].content
    assert recalled["memories"][0]["episode_uid"] == told["episode"]["uid"]
    assert recalled["memories"][0]["thread_id"] == "thread-1"

    for user in ("bob", "alice-2", "ALICE"):
        other = await ask(app, QUESTION, "thread-2", user)
        assert "Zelenograd" not in other["messages"][-1].content
        assert other["memories"] == [] and other["candidates"] == []


def echo_memories(messages: list[BaseMessage]) -> str:
    """A 'model' that answers with the memory section of its prompt (shows what it was given)."""
    system = str(messages[0].content)
    return "From memory: " + system.split("# Memories", 1)[-1]


async def test_with_a_model_the_prompt_holds_only_the_users_memories(agent: Services) -> None:
    route = {"kind": "SIMPLE", "n_results": 5, "passes": [{"query": None}]}
    ess = {
        "score": 0.3,
        "specificity": 0.6,
        "grounding": 0.3,
        "rigor": 0.2,
        "source_quality": 0.1,
        "objectivity": 0.8,
        "reasoning_type": "no_argument",
    }
    model = ScriptedChatModel(
        by_tool={
            "TurnAssessment": [assessment(route, ess)] * 4,
            "RerankResult": [{"ranking": [1]}] * 4,
            "Extraction": [
                {
                    "chunks": [{"text": FACT, "questions": [QUESTION]}],
                    "topics": ["family"],
                    "entities": [{"name": "Zelenograd", "type": "Place"}],
                }
            ],
        },
        script=[echo_memories] * 4,
    )
    with installed(agent, ChatModels(agent.settings, override=model)):
        app = builder.compile(checkpointer=InMemorySaver())
        told = await ask(app, FACT, "thread-1", "alice")
        await settle(agent)
        assert await agent.vectors.count("prospective", "alice") == 1
        mine = await ask(app, QUESTION, "thread-2", "alice")
        theirs = await ask(app, QUESTION, "thread-3", "bob")
    assert "Zelenograd" in mine["messages"][-1].content
    assert mine["memories"][0]["episode_uid"] == told["episode"]["uid"]
    assert mine["memories"][0]["questions"] == [QUESTION]
    assert "Zelenograd" not in theirs["messages"][-1].content
    prompts = [str(c["messages"][0].content) for c in model.calls if c["tool"] is None]
    assert "Zelenograd" not in prompts[-1]  # bob's prompt never saw alice's memory
    # route (which scores the evidence too) and respond; one candidate: nothing to rerank
    assert mine["usage"]["llm_calls"] == 2
    assert set(mine["usage"]["tasks"]) == {"route", "respond"}
