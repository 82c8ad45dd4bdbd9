"""remember: the durable write before the reply, background bookkeeping, bounded storage,
a full queue that leaves episodes pending for the sweep."""

from __future__ import annotations

import asyncio

from langchain_core.messages import AIMessage, HumanMessage

from memory.schema import EpisodeStatus
from memory.services.queue import BookkeepingQueue
from nodes.content import STORE_CHARS, read_turn
from nodes.remember import remember
from tests.unit.fake_chat import runtime

ESS = {
    "score": 0.2,
    "specificity": 0.4,
    "grounding": 0.2,
    "rigor": 0.2,
    "source_quality": 0.1,
    "objectivity": 0.7,
    "reasoning_type": "no_argument",
    "passed": False,
}


def state(text: object, reply: str = "Noted!") -> dict:
    messages = [HumanMessage(content=text, id="h"), AIMessage(content=reply, id="a")]
    return {"messages": messages, "turn": read_turn(messages), "ess": ESS}


async def test_writes_a_pending_episode_and_schedules_bookkeeping(agent_services, offline) -> None:
    out = await remember(state("My dog's name is Biscuit."), runtime())
    episode = out["episode"]
    assert episode["stored"] and episode["scheduled"] and not episode["duplicate"]
    stored = await agent_services.graph.get_episode("alice", episode["uid"])
    assert stored.user_text == "My dog's name is Biscuit." and stored.agent_text == "Noted!"
    assert stored.ess is not None and stored.ess.specificity == 0.4
    assert stored.thread_id == "no-thread"
    async with asyncio.timeout(60):
        await agent_services.bookkeeping.drain()
    done = await agent_services.graph.get_episode("alice", episode["uid"])
    assert done.status == EpisodeStatus.PROCESSED


async def test_same_turn_twice_is_a_duplicate_not_rescheduled(agent_services, offline) -> None:
    first = await remember(state("I live in Porto."), runtime())
    second = await remember(state("I live in Porto."), runtime())
    assert second["episode"]["duplicate"] and not second["episode"]["scheduled"]
    assert second["episode"]["uid"] == first["episode"]["uid"]


async def test_empty_turn_is_not_stored(agent_services, offline) -> None:
    out = await remember(state("  "), runtime())
    assert out["episode"] == {"stored": False, "reason": "empty message: nothing to remember"}
    assert await agent_services.graph.count_episodes("alice") == 0


async def test_huge_message_is_stored_bounded_and_says_so(agent_services, offline) -> None:
    out = await remember(state("x" * 200_000), runtime())
    assert out["episode"]["truncated"]
    stored = await agent_services.graph.get_episode("alice", out["episode"]["uid"])
    assert len(stored.user_text) < STORE_CHARS + 100
    assert "180,000 more characters not kept" in stored.user_text


async def test_non_text_parts_are_noted(agent_services, offline) -> None:
    parts = [{"type": "text", "text": "Look at my cat Tom"}, {"type": "image_url", "image_url": {}}]
    out = await remember(state(parts), runtime())
    stored = await agent_services.graph.get_episode("alice", out["episode"]["uid"])
    assert stored.user_text.startswith("Look at my cat Tom")
    assert "[non-text content not kept: image_url]" in stored.user_text


async def test_full_queue_leaves_the_episode_pending_for_the_sweep(agent_services, offline) -> None:
    gate = asyncio.Event()
    processed: list[str] = []

    async def slow(services, tenant, uid):
        await gate.wait()
        from graph.bookkeeping import run_episode

        await run_episode(services, tenant, uid)
        processed.append(uid)

    previous = agent_services.queue
    queue = BookkeepingQueue(agent_services, slow, maxsize=1, sweep_interval_s=None)
    agent_services.queue = queue
    try:
        outs = [await remember(state(f"Fact number {i}."), runtime()) for i in range(3)]
        scheduled = [o["episode"]["scheduled"] for o in outs]
        assert scheduled.count(False) >= 1  # the queue was full for at least one
        left = [o["episode"]["uid"] for o, s in zip(outs, scheduled, strict=True) if not s]
        for uid in left:
            episode = await agent_services.graph.get_episode("alice", uid)
            assert episode.status == EpisodeStatus.PENDING
        gate.set()
        async with asyncio.timeout(60):
            await queue.drain()
            report = await queue.sweep_once()
        assert report.ok
        for o in outs:
            episode = await agent_services.graph.get_episode("alice", o["episode"]["uid"])
            assert episode.status == EpisodeStatus.PROCESSED
        assert queue.stats.rejected == scheduled.count(False)
    finally:
        await queue.close()
        agent_services.queue = previous


async def test_store_failure_degrades_to_not_remembered(
    agent_services, offline, monkeypatch
) -> None:
    async def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(agent_services.graph, "create_episode", broken)
    out = await remember(state("I like tea."), runtime())
    assert out["episode"]["stored"] is False and "disk full" in out["episode"]["reason"]
