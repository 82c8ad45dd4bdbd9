"""The whole agent loop in-process: offline mode end to end, a fully scripted model turn with
its usage metadata, and bad context."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.agent import builder
from nodes.context import Context, ContextError
from tests.unit.fake_chat import assessment


def config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


async def turn(app, text, thread: str, **context) -> dict:
    context.setdefault("user_id", "alice")
    return await app.ainvoke(
        {"messages": [{"role": "user", "content": text}]}, config(thread), context=context
    )


async def test_offline_agent_remembers_across_threads(agent_services, offline) -> None:
    app = builder.compile(checkpointer=InMemorySaver())
    first = await turn(app, "My dog's name is Biscuit, he's a golden retriever.", "t1")
    assert first["episode"]["stored"] and first["messages"][-1].type == "ai"
    async with asyncio.timeout(60):
        await agent_services.bookkeeping.drain()
    second = await turn(app, "What is my dog's name?", "t2")
    assert "Biscuit" in second["messages"][-1].content
    assert second["route"]["kind"] == "SIMPLE"
    assert second["memories"][0]["thread_id"] == "t1"
    assert second["usage"]["llm_calls"] == 0 and second["usage"]["offline"] >= 2
    assert len(second["messages"]) == 2  # thread t2 holds its own conversation only
    other = await turn(app, "What is my dog's name?", "t3", user_id="bob")
    assert "Biscuit" not in other["messages"][-1].content and other["memories"] == []


async def test_scripted_turn_counts_calls_and_resets_per_turn(agent_services, fake_chat) -> None:
    route = {"kind": "SIMPLE", "n_results": 3, "passes": [{"query": None}]}
    ess = {
        "score": 0.2,
        "specificity": 0.5,
        "grounding": 0.1,
        "rigor": 0.1,
        "source_quality": 0.1,
        "objectivity": 0.8,
        "reasoning_type": "no_argument",
        "topics": ["tea"],
        "summary": "The user likes tea.",
    }
    model = fake_chat(
        by_tool={
            "TurnAssessment": [assessment(route, ess), assessment(route, ess)],
            "RerankResult": [{"ranking": [1]}],
            "Extraction": [],
        },
        default_text="Lovely.",
    )
    app = builder.compile(checkpointer=InMemorySaver())
    out = await turn(app, "I like green tea.", "t1")
    assert out["messages"][-1].content == "Lovely."
    assert out["usage"]["llm_calls"] == 2  # route (with the ESS), respond; nothing to rerank
    assert set(out["usage"]["tasks"]) == {"route", "respond"}
    assert out["ess"]["summary"] == "The user likes tea." and not out["ess"]["passed"]
    assert "sponge" not in out  # the sponge moves in bookkeeping, from the stored ESS
    async with asyncio.timeout(60):
        await agent_services.bookkeeping.drain()  # empty extraction script: heuristic fallback
    again = await turn(app, "What do I like to drink?", "t1")
    assert again["usage"]["llm_calls"] <= 3  # reset, not accumulated across turns
    assert None in model.tools_called()


async def test_missing_context_is_an_error_not_a_shared_default(agent_services, offline) -> None:
    app = builder.compile(checkpointer=InMemorySaver())
    with pytest.raises(ContextError, match="no context"):
        await app.ainvoke({"messages": [{"role": "user", "content": "hello"}]}, config("t"))
    for typo in ({"userId": "carol"}, {"user": "carol"}):
        # LangGraph builds the Context itself in-process (the server's auth handler turns the
        # same mistake into a 422 naming the field, tests/e2e/test_auth.py).
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            await app.ainvoke(
                {"messages": [{"role": "user", "content": "my PIN is 1111"}]},
                config("t2"),
                context=typo,
            )
    assert await agent_services.graph.episodes.count("default") == 0
    assert await agent_services.graph.episodes.list_tenants() == []


@pytest.mark.parametrize("user_id", ["", "   ", "a\x00b", "x" * 500])
def test_bad_user_id_is_a_clear_error(user_id: str) -> None:
    with pytest.raises(ContextError, match="user_id"):
        Context(user_id=user_id)


def test_bad_timezone_is_a_clear_error() -> None:
    with pytest.raises(ContextError, match="IANA timezone"):
        Context(user_id="ada", timezone="Mars/Olympus")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("n_results", "x"),
        ("max_reply_tokens", "many"),
        ("rerank_simple", "yes"),
        ("n_results", True),
    ],
)
def test_a_mistyped_context_field_is_named(field: str, value: object) -> None:
    with pytest.raises(ContextError, match=f"context.{field} must be"):
        Context(user_id="ada", **{field: value})


async def test_empty_message_end_to_end(agent_services, offline) -> None:
    app = builder.compile(checkpointer=InMemorySaver())
    out = await turn(app, "", "t1")
    assert "empty" in out["messages"][-1].content
    assert out["episode"]["stored"] is False
