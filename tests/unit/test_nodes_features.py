"""Semantic features (the sponge's second store) and standing instructions through the agent's
nodes, offline and with a scripted model; real SQLite, Qdrant in memory, the real embedder."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from graph.bookkeeping import run_episode
from memory.schema import FeatureCategory
from memory.services import Services
from memory.write.episodes import remember
from nodes.respond import respond
from nodes.retrieve import retrieve
from nodes.state import route_state
from tasks.ess import heuristic_ess
from tasks.route import RouteDecision, SearchPass
from tests.unit.fake_chat import ScriptedChatModel, human, runtime, seed

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
STUDY = (
    "A 2023 meta-analysis of 40 randomised trials published in The Lancet found that regular "
    "cycling cuts cardiovascular mortality by 20 percent."
)
AGAIN = (
    "A 2024 meta-analysis of 52 randomised trials published in The Lancet found that regular "
    "cycling cuts cardiovascular mortality by 21 percent."
)
RETRACTION = (
    "I was wrong about this: a 2025 reanalysis in JAMA of the same trials found that regular "
    "cycling does not cut cardiovascular mortality once income is controlled."
)


async def said(services: Services, text: str, day: int) -> dict:
    """One user turn with the router's offline evidence score, then its bookkeeping."""
    done = await remember(
        services,
        tenant="alice",
        thread_id=f"d{day}",
        user_text=text,
        agent_text="Interesting.",
        at=T0 + timedelta(days=day),
        ess=heuristic_ess(text).record(),
    )
    return await run_episode(services, "alice", done.uid)


async def test_features_grow_with_evidence_and_go_only_on_a_counter_claim(
    offline: Services,
) -> None:
    first = await said(offline, STUDY, 0)
    created = first["features"]["created"]
    graph = offline.graph
    categories = {f.category for f in await graph.features.list("alice")}
    assert FeatureCategory.VALUES in categories and FeatureCategory.INTERESTS in categories
    second = await said(offline, AGAIN, 1)
    assert second["features"]["updated"]  # the same traits, more evidence
    grown = [f for f in await graph.features.get_many("alice", created) if f.evidence_count == 2]
    assert grown and all(f.strength > 0.5 for f in grown)

    small_talk = await said(offline, "Nice weather today.", 2)  # the ESS gate does not pass
    assert small_talk["features"] == {"created": [], "updated": [], "deleted": []}
    assert len(await graph.features.list("alice")) == len(created)  # nothing decays

    retraction = await said(offline, RETRACTION, 3)
    (gone,) = retraction["features"]["deleted"]
    assert (await graph.features.list("alice", FeatureCategory.VALUES)) != []
    assert await graph.features.get("alice", gone) is None
    interests = await graph.features.list("alice", FeatureCategory.INTERESTS)
    assert any(f.uid in created for f in interests)  # an interest is not refuted by a claim


async def test_the_router_brings_features_to_the_reply(offline: Services) -> None:
    await said(offline, STUDY, 0)
    route = route_state(RouteDecision(kind="SIMPLE", passes=[SearchPass()], search_features=True))
    out = await retrieve(
        {**human("What do you think about cycling and heart health?"), "route": route}, runtime()
    )
    assert out["features"] and {f["category"] for f in out["features"]} & {"values", "interests"}


async def test_a_code_request_brings_back_the_current_code_instruction(
    agent_services: Services, fake_chat: Callable[..., ScriptedChatModel]
) -> None:
    offline_chat = agent_services.chat
    agent_services.chat = type(offline_chat).offline_for(agent_services.settings)
    await seed(agent_services, "alice", ["Please always show code examples in TypeScript."], at=T0)
    later = T0 + timedelta(days=30)
    await seed(agent_services, "alice", ["From now on use Python for code examples."], at=later)
    agent_services.chat = offline_chat
    model = fake_chat(default_text="def is_prime(n): ...")
    request = "Write a function that checks whether a number is prime."
    route = route_state(RouteDecision(kind="SIMPLE", passes=[SearchPass()], n_results=5))
    found = await retrieve({**human(request), "route": route}, runtime())
    first = found["candidates"][0]
    assert first["kind"] == "fact" and "Python" in first["content"]
    assert not any(
        "TypeScript" in c["content"] and c["kind"] == "fact" for c in found["candidates"][:1]
    )

    await respond({**human(request), "memories": found["candidates"][:5]}, runtime())
    system = str(model.calls[-1]["messages"][0].content)
    section = system.split("# How the user asked you to behave", 1)[1]
    assert "<instructions>" in section and "Python for code examples" in section
    assert "TypeScript" not in section.split("</instructions>", 1)[0]
