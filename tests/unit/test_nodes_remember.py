"""record + remember: the user's side durable before the reply (graph store, else the outbox,
else "not remembered"), the reply attached after it, identity by source, bounded thread state,
the size limit, background bookkeeping and a full queue that leaves episodes for the sweep."""

from __future__ import annotations

import asyncio
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from memory.schema import EpisodeStatus
from memory.services.queue import BookkeepingQueue
from memory.write.filing import drain_outbox
from memory.write.outbox import write_path
from nodes.record import record
from nodes.remember import remember
from nodes.respond import respond
from tasks.content import THREAD_CHARS
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


async def turn(text: object, *, message_id: str = "h", reply: str | None = "Noted!") -> dict:
    """record, then (optionally the real respond), then remember: the turn's state."""
    messages: list = [HumanMessage(content=text, id=message_id)]
    recorded = await record({"messages": messages}, runtime())
    messages = recorded.pop("messages", None) or messages  # a bounded copy replaces it by id
    st: dict = {"messages": messages, **recorded}
    if reply is None:
        out = await respond(st, runtime())
        reply = out["messages"][-1].content
    st["messages"] = [*messages, AIMessage(content=reply, id=f"a-{message_id}")]
    st["ess"] = ESS
    st |= await remember(st, runtime())
    st["reply"] = reply
    return st


async def test_writes_the_user_side_first_then_attaches_the_reply(agent_services, offline) -> None:
    st = {"messages": [HumanMessage(content="My dog's name is Biscuit.", id="h")]}
    recorded = await record(st, runtime())
    uid = recorded["episode"]["uid"]
    assert recorded["episode"]["outcome"] == "stored"
    first = await agent_services.graph.episodes.get("alice", uid)
    assert (first.user_text, first.agent_text, first.status) == (
        "My dog's name is Biscuit.",
        "",
        EpisodeStatus.PENDING,
    )
    done = await turn("My dog's name is Biscuit.")
    assert done["episode"]["uid"] == uid and done["episode"]["scheduled"]
    stored = await agent_services.graph.episodes.get("alice", uid)
    assert stored.agent_text == "Noted!" and stored.ess.specificity == 0.4
    assert stored.thread_id == "no-thread"
    async with asyncio.timeout(60):
        await agent_services.bookkeeping.drain()
    assert (await agent_services.graph.episodes.get("alice", uid)).status == EpisodeStatus.PROCESSED


async def test_a_retried_message_is_one_episode_the_same_words_later_another(
    agent_services, offline
) -> None:
    first = await turn("I live in Porto.", message_id="m1")
    retry = await turn("I live in Porto.", message_id="m1")
    later = await turn("I live in Porto.", message_id="m2")
    assert retry["episode"]["uid"] == first["episode"]["uid"] and retry["episode"]["duplicate"]
    assert later["episode"]["uid"] != first["episode"]["uid"]
    assert not later["episode"]["duplicate"]
    assert await agent_services.graph.episodes.count("alice") == 2
    a, b = await agent_services.graph.episodes.get_many(
        "alice", [first["episode"]["uid"], later["episode"]["uid"]]
    )
    assert a.created_at < b.created_at


async def test_empty_turn_is_not_stored(agent_services, offline) -> None:
    out = await turn("  ")
    assert out["episode"]["outcome"] == "empty" and out["episode"]["stored"] is False
    assert await agent_services.graph.episodes.count("alice") == 0


async def test_a_long_message_is_stored_whole_and_the_thread_keeps_a_bounded_copy(
    agent_services, offline
) -> None:
    text = "x" * 200_000
    out = await turn(text)
    stored = await agent_services.graph.episodes.get("alice", out["episode"]["uid"])
    assert stored.user_text == text
    kept = out["messages"][0]
    assert kept.id == "h" and len(kept.content) < THREAD_CHARS + 100
    assert len(out["turn"]["text"]) < THREAD_CHARS + 100 and out["turn"]["chars"] == 200_000


async def test_a_message_over_the_limit_is_refused_unwritten(agent_services, offline) -> None:
    out = await turn("y" * 300_000, reply=None)
    assert out["episode"]["outcome"] == "refused" and "262,144" in out["episode"]["reason"]
    assert "I'll remember" not in out["reply"] and "not saved" in out["reply"]
    assert await agent_services.graph.episodes.count("alice") == 0


async def test_non_text_parts_are_noted(agent_services, offline) -> None:
    parts = [{"type": "text", "text": "Look at my cat Tom"}, {"type": "image_url", "image_url": {}}]
    out = await turn(parts)
    stored = await agent_services.graph.episodes.get("alice", out["episode"]["uid"])
    assert stored.user_text.startswith("Look at my cat Tom")
    assert "[non-text content not kept: image_url]" in stored.user_text


async def test_full_queue_leaves_the_episode_pending_for_the_sweep(agent_services, offline) -> None:
    gate = asyncio.Event()

    async def slow(services, tenant, uid):
        await gate.wait()
        from graph.bookkeeping import run_episode

        await run_episode(services, tenant, uid)

    previous = agent_services.queue
    queue = BookkeepingQueue(agent_services, slow, maxsize=1, sweep_interval_s=None)
    agent_services.queue = queue
    try:
        outs = [await turn(f"Fact number {i}.", message_id=f"f{i}") for i in range(3)]
        scheduled = [o["episode"]["scheduled"] for o in outs]
        assert scheduled.count(False) >= 1  # the queue was full for at least one
        for o, s in zip(outs, scheduled, strict=True):
            if not s:
                episode = await agent_services.graph.episodes.get("alice", o["episode"]["uid"])
                assert episode.status == EpisodeStatus.PENDING
        gate.set()
        async with asyncio.timeout(60):
            await queue.drain()
            report = await queue.sweep_once()
        assert report.ok
        for o in outs:
            episode = await agent_services.graph.episodes.get("alice", o["episode"]["uid"])
            assert episode.status == EpisodeStatus.PROCESSED
    finally:
        await queue.close()
        agent_services.queue = previous


def broken_store(agent_services, monkeypatch) -> list[int]:
    """Make every episode write fail; the list counts the attempts."""
    calls: list[int] = []

    async def broken(*args, **kwargs):
        calls.append(1)
        raise OSError("disk full")

    monkeypatch.setattr(agent_services.graph.episodes, "create", broken)
    monkeypatch.setattr(agent_services.graph.episodes, "attach_reply", broken)
    return calls


async def test_store_down_goes_to_the_outbox_and_drains_exactly_once_in_order(
    agent_services, offline, monkeypatch
) -> None:
    calls = broken_store(agent_services, monkeypatch)
    first = await turn("I like tea.", message_id="t1", reply=None)
    second = await turn("I like coffee too.", message_id="t2", reply=None)
    assert first["episode"]["outcome"] == second["episode"]["outcome"] == "outbox"
    assert "I'll remember that" in first["reply"] and "saved on this machine" in first["reply"]
    assert len(calls) == 1  # the breaker sent the second turn straight to the outbox
    outbox, breaker = write_path(agent_services.settings.resolved_outbox_dir)
    assert outbox.state().depth == 4  # two turns, each: the user's side, then with the reply
    assert await agent_services.graph.episodes.count("alice") == 0

    monkeypatch.undo()  # the store is back
    report = await drain_outbox(agent_services)
    assert report.applied == 4 and report.error is None and outbox.state().depth == 0
    assert breaker.allows()
    again = await drain_outbox(agent_services)
    assert again.applied == 0
    episodes = await agent_services.graph.episodes.list_by_status("alice", list(EpisodeStatus))
    assert [e.user_text for e in episodes] == ["I like tea.", "I like coffee too."]
    assert [e.agent_text for e in episodes] == [first["reply"], second["reply"]]
    assert [e.uid for e in episodes] == [first["episode"]["uid"], second["episode"]["uid"]]
    assert all(e.ess is not None for e in episodes)


async def test_store_and_outbox_down_says_not_remembered(
    agent_services, offline, monkeypatch, tmp_path: Path
) -> None:
    broken_store(agent_services, monkeypatch)
    outdir = agent_services.settings.resolved_outbox_dir
    outdir.parent.mkdir(parents=True, exist_ok=True)
    outdir.write_text("not a directory")  # the outbox cannot be created
    out = await turn("My locker code is 1234.", reply=None)
    assert out["episode"]["outcome"] == "not_remembered"
    assert "I'll remember" not in out["reply"]
    assert "will not remember it" in out["reply"]


async def test_nul_bytes_are_removed_and_the_reply_says_so(agent_services, offline) -> None:
    out = await turn("my code is 12\x0034", reply=None)
    stored = await agent_services.graph.episodes.get("alice", out["episode"]["uid"])
    assert stored.user_text == "my code is 1234"
    assert "1 NUL characters in your message were not kept" in out["reply"]
