"""Bookkeeping (the bookkeeping graph): one extraction call (chunks, questions, topics, entities), its retry and
fallback, indexing into both collections, graph links, idempotence, and the LLM budget."""

from __future__ import annotations

from graph.bookkeeping import run_episode
from memory.schema import EntityType, EpisodeStatus
from memory.write.episodes import remember
from tasks.extract import heuristic_extraction

TURN = (
    "My sister Clara is getting married in Lisbon on June 14th. I'm giving a speech.",
    "How lovely! Good luck with the speech.",
)
EXTRACTION = {
    "chunks": [
        {
            "text": "The user's sister Clara is getting married in Lisbon on June 14th.",
            "questions": [
                "When is Clara's wedding?",
                "Where is my sister getting married?",
                "Who is getting married?",
                "What date is the wedding?",
                "a fifth question is dropped",
            ],
        },
        {
            "text": "The user is giving a speech at the wedding. Good luck with the speech.",
            "questions": ["Am I giving a speech?"],
        },
    ],
    "topics": ["wedding", "family"],
    "entities": [{"name": "Clara", "type": "Person"}, {"name": "Lisbon", "type": "Place"}],
}


async def _episode(services):
    result = await remember(
        services, tenant="alice", thread_id="t1", user_text=TURN[0], agent_text=TURN[1]
    )
    return result.uid


async def test_extraction_indexes_chunks_questions_and_links(agent_services, fake_chat) -> None:
    model = fake_chat(by_tool={"Extraction": [EXTRACTION]})
    uid = await _episode(agent_services)
    result = await run_episode(agent_services, "alice", uid)
    assert not result["fallback"]
    assert result["derivatives"] == 2 and result["questions"] == 5  # 4 + 1: the fifth was dropped
    assert result["usage"]["llm_calls"] == 1 and model.tools_called() == ["Extraction"]
    graph, vectors = agent_services.graph, agent_services.vectors
    assert (await graph.episodes.get("alice", uid)).status == EpisodeStatus.PROCESSED
    assert await graph.topics.of_episode("alice", uid) == ["family", "wedding"]
    mentioned = {(e.name, e.type) for e in await graph.entities.of_episode("alice", uid)}
    assert mentioned == {("Clara", EntityType.PERSON), ("Lisbon", EntityType.PLACE)}
    assert await vectors.count("derivatives", "alice") == 2
    assert await vectors.count("prospective", "alice") == 5


async def test_ungrounded_chunks_are_retried(agent_services, fake_chat) -> None:
    invented = {**EXTRACTION, "chunks": [{"text": "Penguins enjoy quantum chromodynamics."}]}
    model = fake_chat(by_tool={"Extraction": [invented, EXTRACTION]})
    uid = await _episode(agent_services)
    result = await run_episode(agent_services, "alice", uid)
    assert result["usage"]["llm_calls"] == 2 and result["usage"]["retries"] == 1
    assert "not taken from the conversation" in model.calls[1]["messages"][-1].content
    assert result["derivatives"] == 2


async def test_fallback_uses_the_splitter_and_heuristics(agent_services, fake_chat) -> None:
    fake_chat(by_tool={"Extraction": [{"chunks": []}, {"topics": "x"}]})
    uid = await _episode(agent_services)
    result = await run_episode(agent_services, "alice", uid)
    assert result["fallback"] and result["questions"] == 0
    assert result["usage"]["llm_calls"] == 2  # never more than two per episode
    assert "Clara" in result["entities"] and "Lisbon" in result["entities"]
    assert await agent_services.vectors.count("prospective", "alice") == 0
    assert await agent_services.vectors.count("derivatives", "alice") == 2  # user + agent side
    episode = await agent_services.graph.episodes.get("alice", uid)
    assert episode.status == EpisodeStatus.PROCESSED


async def test_rerunning_is_idempotent(agent_services, fake_chat) -> None:
    fake_chat(by_tool={"Extraction": [EXTRACTION, EXTRACTION]})
    uid = await _episode(agent_services)
    await run_episode(agent_services, "alice", uid)
    await agent_services.graph.episodes.set_status(
        "alice", uid, EpisodeStatus.PENDING, only_forward=False
    )
    await run_episode(agent_services, "alice", uid)
    assert await agent_services.vectors.count("derivatives", "alice") == 2
    assert await agent_services.vectors.count("prospective", "alice") == 5
    assert len(await agent_services.graph.entities.of_episode("alice", uid)) == 2
    again = await run_episode(agent_services, "alice", uid)  # processed: nothing to do
    assert again["status"] == "processed" and not again["usage"] and "derivatives" not in again


async def test_offline_bookkeeping_makes_no_calls(agent_services, offline) -> None:
    uid = await _episode(agent_services)
    result = await run_episode(agent_services, "alice", uid)
    assert result["fallback"] and result["usage"]["offline"] == 1
    totals = agent_services.chat.totals.snapshot()
    assert totals["extract"] == {"calls": 0, "input_tokens": 0, "output_tokens": 0, "fallbacks": 1}


def test_heuristic_extraction_shape() -> None:
    from datetime import UTC, datetime

    from memory.schema import Episode

    episode = Episode(
        uid="e",
        tenant="t",
        thread_id="x",
        content="User: I met Marco at Acme Labs in Berlin.",
        user_text="I met Marco at Acme Labs in Berlin.",
        agent_text="",
        created_at=datetime.now(UTC),
    )
    out = heuristic_extraction(episode)
    names = {(e.name, e.type) for e in out.entities}
    assert ("Marco", EntityType.PERSON) in names
    assert ("Acme Labs", EntityType.ORGANIZATION) in names
    assert ("Berlin", EntityType.PLACE) in names
    assert out.topics
