"""The knowledge stage with a model (scripted): facts from the shared extraction call, the
model confirming what a fact replaces, a bad answer falling back to the heuristic, and at most
two extraction requests per episode. Real SQLite, Qdrant in memory and the real embedder."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import BaseMessage

from memory.schema import EpisodeStatus
from memory.services import Services
from tests.unit.fake_chat import ScriptedChatModel, seed

T0 = datetime(2026, 1, 8, 9, 0, tzinfo=UTC)


def extraction(text: str, *facts: dict[str, Any]) -> dict[str, Any]:
    return {"chunks": [{"text": text}], "topics": [], "entities": [], "facts": list(facts)}


def known_ids(messages: list[BaseMessage]) -> dict[str, str]:
    """The known facts listed in an extraction prompt: id -> text."""
    out = {}
    for line in str(messages[-1].content).splitlines():
        if line.startswith("[K"):
            ref, _, rest = line.partition("]")
            out[ref[1:]] = rest.split(") ", 1)[-1]
    return out


async def test_the_model_decides_what_a_fact_it_was_shown_replaces(
    agent_services: Services, fake_chat: Callable[..., ScriptedChatModel]
) -> None:
    lyon = "I live in Lyon, near the old town."
    second = "I also rent a small flat in Porto now, besides my home in Lyon."
    porto = "We moved to Porto for good, the Lyon home is sold."
    sister = "My sister lives in Lyon."
    shown: list[dict[str, str]] = []

    def answer(text: str, fact: dict[str, Any], replaces: bool) -> Any:
        def reply(messages: list[BaseMessage]) -> dict[str, Any]:
            listed = known_ids(messages)
            shown.append(listed)
            refs = [r for r, t in listed.items() if "Lyon" in t] if replaces else []
            return extraction(text, {**fact, "kind": "attribute", "supersedes": refs})

        return reply

    model = fake_chat(
        by_tool={
            "Extraction": [
                extraction(
                    lyon,
                    {
                        "text": "The user lives in Lyon.",
                        "kind": "attribute",
                        "attribute": "home",
                        "value": "Lyon",
                    },
                ),
                # same subject and attribute, another value: the offline rule would supersede,
                # but the model saw the Lyon fact and says the flat does not replace it
                answer(
                    second,
                    {
                        "text": "The user also rents a flat in Porto.",
                        "attribute": "home",
                        "value": "Porto",
                    },
                    False,
                ),
                answer(
                    porto,
                    {
                        "text": "The user moved to Porto for good.",
                        "attribute": "home",
                        "value": "Porto",
                    },
                    True,
                ),
                # a careless model "replaces" the user's Lyon home with the sister's
                answer(
                    sister,
                    {
                        "text": "The user's sister lives in Lyon.",
                        "subject": "sister",
                        "attribute": "home",
                        "value": "Lyon",
                    },
                    True,
                ),
            ]
        }
    )
    for day, text in [(0, lyon), (60, second), (150, porto), (170, sister)]:
        await seed(agent_services, "ada", [text], thread=f"d{day}", at=T0 + timedelta(days=day))
    assert model.tools_called().count("Extraction") == 4  # one call per episode, no retries
    assert all(any("Lyon" in t for t in listed.values()) for listed in shown[:2])

    graph = agent_services.graph
    everything = await graph.facts.list("ada", attribute="home", include_superseded=True)
    by_text = {f.text: f for f in everything}
    lyon_fact = by_text["The user lives in Lyon."]
    moved = by_text["The user moved to Porto for good."]
    assert lyon_fact.superseded_by == moved.uid
    assert by_text["The user also rents a flat in Porto."].superseded_by is None
    # the sister's fact is about someone else: it replaced nothing of the user's
    assert moved.superseded_by is None and moved.grounding == 1.0
    assert by_text["The user's sister lives in Lyon."].subject == "sister"


async def test_a_fact_answer_that_does_not_validate_falls_back_to_the_heuristic(
    agent_services: Services, fake_chat: Callable[..., ScriptedChatModel]
) -> None:
    bad = extraction("I work at Acme Logistics.", {"text": "x", "kind": "opinion"})
    unknown_id = extraction(
        "I work at Acme Logistics.",
        {"text": "The user works at Acme.", "kind": "attribute", "supersedes": ["K7"]},
    )
    model = fake_chat(by_tool={"Extraction": [bad, unknown_id]})
    (uid,) = await seed(agent_services, "bob", ["I work at Acme Logistics."], at=T0)
    assert model.tools_called().count("Extraction") == 2  # the call and its one retry
    episode = await agent_services.graph.episodes.get("bob", uid)
    assert episode is not None and episode.status is EpisodeStatus.PROCESSED
    (work,) = await agent_services.graph.facts.list("bob", attribute="work")
    assert work.value == "Acme Logistics"  # read by the offline heuristic
    assert await agent_services.graph.facts.sources("bob", work.uid) == [uid]


async def test_an_ungrounded_fact_is_kept_with_its_score(
    agent_services: Services, fake_chat: Callable[..., ScriptedChatModel]
) -> None:
    invented = {
        "text": "The user owns a yacht in Monaco.",
        "kind": "attribute",
        "attribute": "boat",
    }
    fake_chat(by_tool={"Extraction": [extraction("I love sailing.", invented)]})
    await seed(agent_services, "cy", ["I love sailing."], at=T0)
    (fact,) = await agent_services.graph.facts.list("cy")
    assert fact.grounding < 0.6  # kept, but `tasks.knowledge_prompt` never shows it
