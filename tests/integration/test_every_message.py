"""Issue 29, item 6, on every graph backend: every user message of a run is recorded, and a
known message id arriving with other text is a conflict the caller hears about (never a silent
drop as a duplicate), through the agent and through `Memory.add`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from graph.agent import builder
from memory.services import ChatModels, Services
from serve.api import Conflict, Memory
from tests.conftest import installed


@pytest.fixture
async def agent(services: Services) -> AsyncIterator[Services]:
    """The parametrised services as the agent's process services, offline."""
    with installed(services, ChatModels.offline_for(services.settings)):
        yield services


async def run(app, user: str, thread: str, *messages: HumanMessage) -> dict:
    return await app.ainvoke(
        {"messages": list(messages)},
        {"configurable": {"thread_id": thread}},
        context={"user_id": user},
    )


async def thread_texts(services: Services, user: str, thread: str) -> list[str]:
    return [e.user_text for e in await services.graph.episodes.in_thread(user, thread)]


async def test_two_user_messages_in_one_run_are_both_recorded(agent: Services) -> None:
    app = builder.compile(checkpointer=InMemorySaver())
    first, second = "My locker code is 1111.", "And my bike lock is 2727."
    done = await run(app, "ada", "t1", HumanMessage(first), HumanMessage(second))
    assert done["episode"]["outcome"] == "stored"
    assert await thread_texts(agent, "ada", "t1") == [first, second]

    # The next run's messages, with ids this time: both again, once each.
    third, fourth = "The safe opens with 9090.", "The gate code is 4545."
    await run(app, "ada", "t1", HumanMessage(third, id="m3"), HumanMessage(fourth, id="m4"))
    await run(app, "ada", "t1", HumanMessage(third, id="m3"), HumanMessage(fourth, id="m4"))
    assert await thread_texts(agent, "ada", "t1") == [first, second, third, fourth]
    await agent.bookkeeping.drain()


async def test_a_known_message_id_with_new_text_is_a_conflict_the_caller_hears(
    agent: Services,
) -> None:
    app = builder.compile(checkpointer=InMemorySaver())
    told = await run(app, "ada", "t1", HumanMessage("The door code is 1111.", id="m1"))
    assert told["episode"]["outcome"] == "stored"
    retried = await run(app, "ada", "t1", HumanMessage("The door code is 1111.", id="m1"))
    assert retried["episode"]["outcome"] == "stored" and retried["episode"]["duplicate"]

    corrected = await run(app, "ada", "t1", HumanMessage("Correction: the code is 2222.", id="m1"))
    assert corrected["episode"]["outcome"] == "conflict", corrected["episode"]
    reply = corrected["messages"][-1].content
    assert "not saved" in reply and "m1" in reply, reply
    assert await thread_texts(agent, "ada", "t1") == ["The door code is 1111."]
    await agent.bookkeeping.drain()


async def test_memory_add_with_a_known_id_and_new_text_is_a_conflict(services: Services) -> None:
    mem = Memory(services)
    first = await mem.add("ada", [{"role": "user", "content": "I live in Lyon.", "id": "m1"}])
    again = await mem.add("ada", [{"role": "user", "content": "I live in Lyon.", "id": "m1"}])
    assert again.duplicates == first.uids
    with pytest.raises(Conflict) as info:
        await mem.add("ada", [{"role": "user", "content": "I live in Porto.", "id": "m1"}])
    assert "m1" in str(info.value)
    await mem.flush()
    kept = await services.graph.episodes.get("ada", first.uids[0])
    assert kept is not None and kept.user_text == "I live in Lyon."
