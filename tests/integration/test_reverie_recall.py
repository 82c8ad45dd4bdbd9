"""Reveries on every graph backend (real stores, the real embedder): a recalled reverie's stored
neighbours bring back the living turns its forgotten one sat between, through the real retrieve
node; with a chat model the impression is the model's, vague and checked, offline the template."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from memory.services import ChatModels, Services
from memory.services.usage import Usage
from memory.sleep.plan import forget_episode
from memory.sleep.reveries import list_reveries, reverie_id, vague_recall
from nodes import sleep as stage
from nodes.retrieve import retrieve
from nodes.sleep import SleepContext
from nodes.state import route_state
from tasks.reverie_impression import llm_impression
from tasks.route import RouteDecision
from tests.conftest import installed
from tests.integration.test_api import T0, tell_trip
from tests.integration.test_consolidation import forget_only
from tests.integration.test_sleep_graph import runtime_of
from tests.unit.fake_chat import ScriptedChatModel, asleep, human, runtime

ROUTE = route_state(RouteDecision(kind="SIMPLE", n_results=7))
QUESTION = "Have we seen anything about penguins?"


async def ask(services: Services, question: str) -> dict[str, Any]:
    with installed(services):
        out: dict[str, Any] = await retrieve(
            {**human(question), "route": ROUTE}, runtime(user_id="ada")
        )
    return out


async def test_a_recalled_reverie_brings_back_its_neighbours(services: Services) -> None:
    episodes = await tell_trip(services)
    penguins = episodes[4]
    assert "penguins" in penguins.user_text
    assert (await forget_episode(services, penguins, 0.05, T0 + timedelta(days=400)))[1]
    before, after = episodes[3].uid, episodes[5].uid

    asked = await ask(services, QUESTION)
    (reverie,) = asked["reveries"]
    assert reverie["episode_uid"] == penguins.uid and reverie["neighbours"] == [before, after]
    brought = {
        c["episode_uid"]: c for c in asked["candidates"] if c["neighbour_of"] == penguins.uid
    }
    top = max(c["score"] for c in asked["candidates"] if c["neighbour_of"] != penguins.uid)
    assert brought and all(
        c["source"] == "neighbour" and c["score"] == top * 0.5  # the recipe's neighbour decay
        for c in brought.values()
    )
    assert {c["offset"] for c in brought.values()} <= {-1, 1}
    assert brought.get(before, {"offset": -1})["offset"] == -1

    # Without the reverie nothing brings them back as its neighbours.
    await services.vectors.delete_points("reveries", "ada", [reverie_id("ada", penguins.uid)])
    bare = await ask(services, QUESTION)
    assert bare["reveries"] == []
    assert not [c for c in bare["candidates"] if c["neighbour_of"] == penguins.uid]
    assert [c for c in asked["candidates"] if c["neighbour_of"] != penguins.uid] == bare[
        "candidates"
    ]
    # Search alone found the others: together, both neighbours are among the candidates.
    found = {c["episode_uid"] for c in bare["candidates"]}
    assert set(brought) == {before, after} - found and {before, after} <= found | set(brought)


async def test_with_a_model_the_impression_is_the_models(services: Services) -> None:
    episodes = await tell_trip(services)
    # The rail pass turn, not the flights one: the flights turn sits beside the penguins turn
    # (the only source of a fact), so forgetting keeps it as that turn's context (ADR 0154).
    penguins, rail = episodes[4], episodes[6]
    model = ScriptedChatModel(
        by_tool={
            "Impression": [
                {"text": "something about 2 birds"},  # a number: asked again
                {"text": "Something about a long journey."},
                {"text": "a trip"},  # no prefix, twice: the template
                {"text": "a trip"},
            ]
        }
    )
    late = T0 + timedelta(days=3650)  # faded: a forgotten turn leaves a reverie
    with installed(services, ChatModels(services.settings, override=model)):
        context = SleepContext(user_id="ada", classify=forget_only(rail.uid))
        out = await stage.forget(asleep("deep", late), runtime_of(context))
        assert (out["stages"]["forget"]["forgotten"], out["stages"]["forget"]["reveries"]) == (
            1,
            1,
        )
        impress = llm_impression(services, usage=Usage())
        assert (await forget_episode(services, penguins, 0.05, late, impress))[1]
    assert model.tools_called() == ["Impression"] * 4
    shown = str(model.calls[0]["messages"][1].content)
    assert "<turn>\nI should buy a rail pass before we leave.\n</turn>" in shown
    reveries = {r["episode_uid"]: r for r in await list_reveries(services, "ada")}
    assert reveries[rail.uid]["impression"] == "something about a long journey"
    assert reveries[penguins.uid]["impression"].startswith("something about ")
    assert "penguins" in reveries[penguins.uid]["impression"]  # the template's subjects
    # The template's subjects stay among the words a model's impression is recalled by.
    (vague, *_) = await vague_recall(services, "ada", "Did we talk about a rail pass?")
    assert vague["text"] == "something about a long journey"
