"""The belief path through the real agent graph and background bookkeeping, on both graph
backends, offline and with a scripted chat model: pressure freezes the sponge while every turn
is remembered, evidence moves a belief, and a BELIEF_QUERY answer rests on its evidence."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.agent import builder
from memory.beliefs.sponge import load_state
from memory.schema import Belief, EpisodeStatus, EvidenceKind
from memory.services import Services
from tests.integration.beliefs_support import Mind, llm_ess, mind
from tests.integration.test_beliefs_scenarios import EXERCISE_STUDY, PRESSURE

__all__ = ["mind"]

USER = "ada"


@pytest.fixture
async def agent(services: Services, mind: Mind) -> AsyncIterator[Services]:
    """The parametrised services, installed as the agent's by `mind` (with its chat models)."""
    yield services


async def ask(app, services: Services, text: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    out = await app.ainvoke(
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": "t1"}},
        context={"user_id": USER},
    )
    async with asyncio.timeout(120):
        await services.bookkeeping.drain()
    return out  # type: ignore[no-any-return]


async def test_pressure_then_evidence_then_a_belief_query(agent: Services, mind: Mind) -> None:
    question = "What do you think about exercise and mood?"
    mind.script(
        ess={
            **{m: llm_ess("social_pressure", 0.1, "exercise") for m in PRESSURE},
            EXERCISE_STUDY: llm_ess("empirical", 0.85, "exercise", "mood"),
            question: llm_ess("no_argument", 0.05, "exercise"),
        },
        assess={
            EXERCISE_STUDY: [{"topic": "exercise-mood", "direction": "supports", "strength": 0.9}]
        },
    )
    if mind.model is not None:
        mind.model.default_text = "I hear you."
    graph = agent.graph
    held = await graph.beliefs.upsert(
        Belief(
            tenant=USER,
            topic="exercise-mood",
            statement="Regular exercise improves mood",
            valence=0.1,
            confidence=0.2,
        )
    )
    app = builder.compile(checkpointer=InMemorySaver())

    for text in PRESSURE:
        out = await ask(app, agent, text)
        assert out["ess"]["manipulative"] and not out["ess"]["passed"]
        assert "sponge" not in out and out["episode"]["stored"]  # the gate's verdict is in ess
    assert await graph.beliefs.get(USER, held.uid) == held
    state = await load_state(graph, USER)
    assert state.insights == [] and state.cumulative_shift == 0.0 and state.reflections == 0
    uids = await graph.episodes.list_uids(USER)
    assert len(uids) == len(PRESSURE)
    assert all(
        e.status is EpisodeStatus.PROCESSED for e in await graph.episodes.get_many(USER, uids)
    )

    out = await ask(app, agent, EXERCISE_STUDY)
    assert out["ess"]["passed"]
    moved = await graph.beliefs.get(USER, held.uid)
    assert moved is not None and moved.valence > held.valence and moved.evidence_count == 1
    [edge] = await graph.beliefs.evidence(USER, held.uid)
    assert edge.episode_uid == out["episode"]["uid"] and edge.kind is EvidenceKind.SUPPORTS

    out = await ask(app, agent, question)
    [view] = out["beliefs"]
    assert view["topic"] == "exercise-mood" and view["evidence"][0]["user_text"] == EXERCISE_STUDY
    if mind.model is None:  # offline, the reply itself says why
        reply = out["messages"][-1].content
        assert "Regular exercise improves mood" in reply and "because" in reply
    else:  # the model is shown the belief with its evidence, fenced as data
        prompt = next(c for c in reversed(mind.model.calls) if c["tool"] is None)["messages"][
            0
        ].content
        assert "Regular exercise improves mood" in prompt and "meta-analysis" in prompt


async def test_bookkeeping_graph_runs_belief_provenance(agent: Services, mind: Mind) -> None:
    from graph.bookkeeping import graph as bookkeeping
    from memory.services.usage import Usage
    from memory.write.episodes import remember
    from tasks.ess import assess_ess

    mind.script(
        ess={EXERCISE_STUDY: llm_ess("empirical", 0.85, "exercise")},
        assess={
            EXERCISE_STUDY: [{"topic": "exercise-mood", "direction": "supports", "strength": 0.9}]
        },
    )
    held = await agent.graph.beliefs.upsert(
        Belief(
            tenant=USER,
            topic="exercise-mood",
            statement="Regular exercise improves mood",
            valence=0.1,
            confidence=0.2,
        )
    )
    ess = await assess_ess(EXERCISE_STUDY, chat=agent.chat, usage=Usage())
    stored = await remember(
        agent, tenant=USER, thread_id="t", user_text=EXERCISE_STUDY, ess=ess.record()
    )
    out = await bookkeeping.ainvoke({"episode_uid": stored.uid}, context={"user_id": USER})
    assert out["status"] == EpisodeStatus.PROCESSED.value
    assert [b["topic"] for b in out["beliefs"]] == ["exercise-mood"] and not out["reflected"]
    moved = await agent.graph.beliefs.get(USER, held.uid)
    assert moved is not None and moved.valence > held.valence and moved.evidence_count == 1
