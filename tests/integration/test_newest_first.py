"""What is true now ranks first, on every graph backend (real stores, the real embedder, the
offline write path): for a question about the present the newest statement of what the best
candidates say takes the best one's place; asked about the past, the oldest does; and the
agent's offline reply quotes the one that comes first (issue 30 item 2,
docs/adr/0152-newest-statement-first.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta

import numpy as np
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from graph.agent import builder
from memory.embeddings.embedders import Matrix
from memory.retrieval.current import said, stated_vectors
from memory.retrieval.recipes import RECIPES, SIMPLE, changed
from memory.retrieval.retrieve import retrieve
from memory.services import ChatModels, Services
from tests.conftest import installed
from tests.integration.test_agent_memory import ask
from tests.integration.test_consolidation import T0, tell

STORY = [
    (0, "I work at Veldkamp Insurance in Amsterdam as a UX designer."),
    (2, "The train to Amsterdam was packed again this morning."),
    (5, "My sister is visiting next weekend, she wants to see the tulips."),
    (9, "Lunch with colleagues at the canteen, the soup was cold."),
    (14, "My manager wants the claims form redesigned by Friday."),
    (20, "Another long week at Veldkamp Insurance, three meetings about the claims form."),
    (27, "Bought a new laptop bag for the commute."),
    (
        40,
        "Started my new job at Fietsly this week, a bike-share startup, so different from insurance.",
    ),
    (42, "Made lasagne tonight, far too much of it."),
    (45, "The team at Fietsly has a ping-pong table, I lost every game."),
]
"""A new job said in passing: "started my new job at Fietsly" reads as no change of employer to
the offline rules, and matches "where do I work" less than the old statement does."""
NOW = T0 + timedelta(days=60)
ON = changed(SIMPLE, {"rerank.newest": True, "rerank.oldest": True})
"""The step is off by default (ADR 0152: it cost `mneme bench sleep`'s changed facts)."""


def first_said(found: list) -> str:  # type: ignore[type-arg]
    return next(c.content for c in found if c.kind == "episode")


@pytest.fixture
async def told(services: Services) -> AsyncIterator[list[str]]:
    yield await tell(services, "nf", STORY)


async def test_the_newest_statement_answers_the_present(
    services: Services, told: list[str]
) -> None:
    question = "Where do I work now?"
    plain = await retrieve(services, "nf", question, SIMPLE, NOW)
    assert "Veldkamp" in first_said(plain)  # relevance alone: the old employer first
    found = await retrieve(services, "nf", question, ON, NOW)
    assert "Fietsly" in first_said(found)
    # moved, not removed: the old statement is still there, right below the new one
    uids = [c.uid for c in found]
    assert uids.index(told[7]) == 0 and uids.index(told[0]) == 1
    assert sorted((c.score for c in found), reverse=True) == [c.score for c in found]


async def test_the_past_and_the_agent_are_left_as_they_are(
    services: Services, told: list[str]
) -> None:
    question = "Where did I work before?"
    found = await retrieve(services, "nf", question, ON, NOW)
    assert "Veldkamp" in first_said(found)
    # a question about what the agent said is not reordered
    asked = "What did you say about my job?"
    assert [c.uid for c in await retrieve(services, "nf", asked, ON, NOW)] == [
        c.uid for c in await retrieve(services, "nf", asked, SIMPLE, NOW)
    ]


async def test_the_offline_reply_says_the_current_value(
    services: Services, told: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, recipe in list(RECIPES.items()):  # the agent's recipes with the step on
        monkeypatch.setitem(
            RECIPES, name, changed(recipe, {"rerank.newest": True, "rerank.oldest": True})
        )
    with installed(services, ChatModels.offline_for(services.settings)):
        app = builder.compile(checkpointer=InMemorySaver())
        now = await ask(app, "Where do I work now?", "q-1", "nf")
        before = await ask(app, "Where did I work before?", "q-2", "nf")
    assert "Fietsly" in now["messages"][-1].content
    assert "Veldkamp" not in now["messages"][-1].content
    assert "Veldkamp" in before["messages"][-1].content


async def test_the_step_reads_stored_vectors_instead_of_embedding_the_turns_again(
    services: Services, told: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turns' vectors come from the index (`VectorIndex.read_vectors`), equal to what
    embedding their words gives; only the question and what the index holds no vector of (a
    fact: its point embeds its concepts too; a turn not in the index) are embedded."""
    found = await retrieve(services, "nf", "Where do I work now?", SIMPLE, NOW)
    top = [(c, said(c)) for c in found[:10] if said(c)]
    gone = next(c for c, _ in top if c.kind == "episode")
    await services.vectors.delete_by_episode("nf", gone.episode_uid)
    asked: list[str] = []
    embed = services.embedder.embed_documents

    async def recording(texts: Sequence[str]) -> Matrix:
        asked.extend(texts)
        return await embed(texts)

    monkeypatch.setattr(services.embedder, "embed_documents", recording)
    question, stated = await stated_vectors(services, "nf", "Where do I work now?", top)
    expected = [t for c, t in top if c.kind == "fact" or c is gone]
    assert asked == ["Where do I work now?", *expected]
    assert len(asked) < len(top)  # the other turns were read, not embedded
    monkeypatch.setattr(services.embedder, "embed_documents", embed)
    fresh = await embed(["Where do I work now?", *(t for _, t in top)])
    assert np.allclose(question, fresh[0], atol=1e-5)
    assert np.allclose(stated, fresh[1:], atol=1e-5)
