"""route: the shared structured call (route + evidence), its retry and fallback, context
overrides, odd input."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from nodes.route import FOUND_BY_A_TURN, route
from tasks.route import DEFAULT_N_RESULTS, RouteDecision, heuristic_route, result_count
from tests.unit.fake_chat import assessment, runtime

DECISION = {
    "kind": "TEMPORAL",
    "n_results": 5,
    "temporal_expansion": True,
    "passes": [{"query": "trip to Lisbon date", "signal_weights": {"specificity": 0.9}}],
}
STRONG = {
    "score": 0.8,
    "specificity": 0.9,
    "grounding": 0.8,
    "rigor": 0.7,
    "source_quality": 0.8,
    "objectivity": 0.9,
    "reasoning_type": "empirical",
    "topics": ["sleep"],
    "summary": "A trial found sleep helps.",
    "belief_update_recommended": True,
}


async def test_one_call_routes_and_scores_the_evidence(fake_chat) -> None:
    model = fake_chat(by_tool={"TurnAssessment": [assessment(DECISION, STRONG)]})
    out = await route({"messages": [HumanMessage("When did I go to Lisbon?")]}, runtime())
    assert out["route"]["kind"] == "TEMPORAL" and out["route"]["n_results"] == 5
    assert out["route"]["passes"][0]["query"] == "trip to Lisbon date"
    assert out["route"]["passes"][0]["signal_weights"]["specificity"] == 0.3  # bounded
    assert out["ess"]["reasoning_type"] == "empirical" and out["ess"]["score"] == 0.8
    assert out["turn"]["text"] == "When did I go to Lisbon?"
    assert out["usage"]["reset"] is True and out["usage"]["llm_calls"] == 1
    prompt = model.calls[0]["messages"]
    assert "When did I go to Lisbon?" in prompt[-1].content
    assert "evidence" in prompt[0].content and "reasoning_type" in prompt[0].content


async def test_invalid_decision_is_retried(fake_chat) -> None:
    bad = assessment({"kind": "MAYBE", "n_results": 99})
    fake_chat(by_tool={"TurnAssessment": [bad, assessment(DECISION)]})
    out = await route({"messages": [HumanMessage("When did I go to Lisbon?")]}, runtime())
    assert out["route"]["kind"] == "TEMPORAL"
    assert out["usage"]["retries"] == 1 and out["usage"]["llm_calls"] == 2


async def test_garbage_twice_falls_back_to_keywords_and_cues(fake_chat) -> None:
    fake_chat(by_tool={"TurnAssessment": ["no idea", {"route": {"kind": 3}}]})
    text = "How many books did I read? Everyone knows you must agree with me."
    out = await route({"messages": [HumanMessage(text)]}, runtime())
    assert out["route"]["kind"] == "AGGREGATION" and out["route"]["n_results"] == 10
    assert out["ess"]["reasoning_type"] == "social_pressure"
    assert out["usage"]["fallbacks"] == 1


async def test_offline_routes_by_keywords(offline) -> None:
    out = await route({"messages": [HumanMessage("What is my dog's name?")]}, runtime())
    assert out["route"]["kind"] == "SIMPLE" and out["usage"]["llm_calls"] == 0
    assert out["route"]["n_results"] == 7  # the kind's default, resolved once
    assert out["ess"]["reasoning_type"] == "no_argument"


async def test_a_turn_starts_with_nothing_found(offline) -> None:
    """What the last turn found is gone before this one is answered: a NONE turn skips retrieval,
    and its reply must not read the last turn's memories, beliefs, diary or reveries."""
    stale = [{"text": "last turn's memory"}]
    state = {
        "messages": [HumanMessage("thanks!")],
        **{channel: stale for channel in FOUND_BY_A_TURN},
    }
    out = await route(state, runtime())  # type: ignore[arg-type]
    assert out["route"]["kind"] == "NONE"
    assert {channel: out[channel] for channel in FOUND_BY_A_TURN} == {
        channel: [] for channel in FOUND_BY_A_TURN
    }


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
    assert out["ess"]["score"] == 0.0
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


def test_the_result_count_is_the_routes_else_its_kinds() -> None:
    assert result_count({"kind": "TEMPORAL", "n_results": 3}) == 3
    assert result_count({"kind": "AGGREGATION", "n_results": None}) == 10
    assert result_count({"kind": "SIMPLE"}) == result_count({}) == DEFAULT_N_RESULTS == 7
    assert result_count(heuristic_route("hi").model_dump()) == 1
