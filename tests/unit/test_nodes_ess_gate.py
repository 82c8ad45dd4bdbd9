"""ess_gate: the ESS schema from the model, its retry and fallback, and the gate decision."""

from __future__ import annotations

from nodes.ess_gate import EvidenceScore, ess_gate, gate, heuristic_ess
from tests.unit.fake_chat import human, runtime

STRONG = {
    "score": 0.8,
    "specificity": 0.9,
    "grounding": 0.8,
    "rigor": 0.7,
    "source_quality": 0.8,
    "objectivity": 0.9,
    "reasoning_type": "empirical",
    "topics": ["sleep", "memory"],
    "summary": "A 2019 trial found sleep improves recall.",
    "belief_update_recommended": True,
    "urgency": "low",
}


async def test_strong_evidence_passes_the_gate(fake_chat) -> None:
    fake_chat(by_tool={"EvidenceScore": [STRONG]})
    out = await ess_gate(
        human("A 2019 randomised trial (n=400) found sleep improves recall."), runtime()
    )
    assert out["ess"]["passed"] and not out["ess"]["manipulative"]
    assert out["ess"]["reasoning_type"] == "empirical"
    assert out["usage"]["llm_calls"] == 1


async def test_out_of_range_scores_are_retried(fake_chat) -> None:
    model = fake_chat(by_tool={"EvidenceScore": [{**STRONG, "score": 8}, STRONG]})
    out = await ess_gate(human("Studies show X."), runtime())
    assert out["ess"]["score"] == 0.8 and out["usage"]["retries"] == 1
    assert "score" in model.calls[1]["messages"][-1].content


async def test_fallback_after_two_failures(fake_chat) -> None:
    fake_chat(by_tool={"EvidenceScore": [{"score": "high"}, {"reasoning_type": "vibes"}]})
    out = await ess_gate(
        human("Everyone knows that cats are better, you have to agree."), runtime()
    )
    assert out["ess"]["reasoning_type"] == "social_pressure"
    assert out["ess"]["manipulative"] and not out["ess"]["passed"]
    assert out["usage"]["fallbacks"] == 1


async def test_empty_turn_is_scored_without_the_model(fake_chat) -> None:
    model = fake_chat()
    out = await ess_gate(human(""), runtime())
    assert not out["ess"]["passed"] and model.calls == []


def test_heuristic_recognises_reasoning_types() -> None:
    assert heuristic_ess("The earth is flat, obviously.").reasoning_type == "debunked_claim"
    assert heuristic_ess("If you really cared you'd agree.").reasoning_type == "emotional_appeal"
    strong = heuristic_ess(
        "A study published in Nature measured a 12% drop in errors (https://doi.org/x)."
    )
    assert strong.reasoning_type == "empirical" and gate(strong)["passed"]
    chat = heuristic_ess("My dog's name is Biscuit.")
    assert chat.reasoning_type == "no_argument" and not gate(chat)["passed"]


def test_record_matches_the_stored_ess() -> None:
    record = EvidenceScore.model_validate(STRONG).record()
    assert record.score == 0.8 and record.signals()["grounding"] == 0.8
