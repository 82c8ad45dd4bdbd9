"""route: the structured decision, its retry and fallback, context overrides, odd input."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from nodes.route import RouteDecision, heuristic_route, route
from tests.unit.fake_chat import runtime

DECISION = {
    "kind": "TEMPORAL",
    "n_results": 5,
    "temporal_expansion": True,
    "search_features": False,
    "passes": [{"query": "trip to Lisbon date", "signal_weights": {"specificity": 0.9}}],
}


async def test_llm_decision_is_used(fake_chat) -> None:
    model = fake_chat(by_tool={"RouteDecision": [DECISION]})
    out = await route({"messages": [HumanMessage("When did I go to Lisbon?")]}, runtime())
    assert out["route"]["kind"] == "TEMPORAL" and out["route"]["n_results"] == 5
    assert out["route"]["passes"][0]["query"] == "trip to Lisbon date"
    assert out["route"]["passes"][0]["signal_weights"]["specificity"] == 0.3  # bounded
    assert out["turn"]["text"] == "When did I go to Lisbon?"
    assert out["usage"]["reset"] is True and out["usage"]["llm_calls"] == 1
    prompt = model.calls[0]["messages"]
    assert "When did I go to Lisbon?" in prompt[-1].content


async def test_invalid_decision_is_retried(fake_chat) -> None:
    fake_chat(by_tool={"RouteDecision": [{"kind": "MAYBE", "n_results": 99}, DECISION]})
    out = await route({"messages": [HumanMessage("When did I go to Lisbon?")]}, runtime())
    assert out["route"]["kind"] == "TEMPORAL"
    assert out["usage"]["retries"] == 1 and out["usage"]["llm_calls"] == 2


async def test_garbage_twice_falls_back_to_keywords(fake_chat) -> None:
    fake_chat(by_tool={"RouteDecision": ["no idea", {"kind": 3}]})
    out = await route({"messages": [HumanMessage("How many books did I read?")]}, runtime())
    assert out["route"]["kind"] == "AGGREGATION"
    assert out["usage"]["fallbacks"] == 1


async def test_offline_routes_by_keywords(offline) -> None:
    out = await route({"messages": [HumanMessage("What is my dog's name?")]}, runtime())
    assert out["route"]["kind"] == "SIMPLE" and out["usage"]["llm_calls"] == 0


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("hi!", "NONE"),
        ("thanks", "NONE"),
        ("What do you think about remote work?", "BELIEF_QUERY"),
        ("How many times did I mention my sister?", "AGGREGATION"),
        ("What did I do last week?", "TEMPORAL"),
        ("What's my dog called?", "SIMPLE"),
        ("", "NONE"),
    ],
)
def test_heuristic_route(text: str, kind: str) -> None:
    decision = heuristic_route(text)
    assert decision.kind == kind
    assert RouteDecision.model_validate(decision.model_dump()) == decision


async def test_context_can_fix_the_recipe_and_count(offline) -> None:
    out = await route(
        {"messages": [HumanMessage("What's my dog called?")]},
        runtime(recipe="TEMPORAL", n_results=3),
    )
    assert out["route"]["kind"] == "TEMPORAL" and out["route"]["temporal_expansion"]
    assert out["route"]["n_results"] == 3


async def test_empty_and_non_text_messages_skip_the_model(fake_chat) -> None:
    model = fake_chat()
    out = await route({"messages": [HumanMessage("   ")]}, runtime())
    assert out["route"]["kind"] == "NONE" and out["turn"]["empty"]
    image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    out = await route({"messages": [HumanMessage(content=image)]}, runtime())
    assert out["turn"]["empty"] and out["turn"]["dropped_parts"] == ["image_url"]
    out = await route({"messages": []}, runtime())
    assert out["turn"]["missing"] and out["route"]["kind"] == "NONE"
    assert model.calls == []


async def test_mixed_content_parts_keep_the_text(offline) -> None:
    parts = [{"type": "text", "text": "What is my dog's name?"}, {"type": "file", "file": {}}]
    out = await route({"messages": [HumanMessage(content=parts)]}, runtime())
    assert out["turn"]["text"] == "What is my dog's name?"
    assert out["turn"]["dropped_parts"] == ["file"] and out["route"]["kind"] == "SIMPLE"
