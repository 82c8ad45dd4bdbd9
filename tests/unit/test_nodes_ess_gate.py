"""ess_gate: the gate decision on the router's evidence score, and the ESS heuristic."""

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


async def test_strong_evidence_passes_the_gate() -> None:
    state = {**human("A 2019 randomised trial (n=400) found sleep improves recall."), "ess": STRONG}
    out = await ess_gate(state, runtime())
    assert out["ess"]["passed"] and not out["ess"]["manipulative"]
    assert out["ess"]["reasoning_type"] == "empirical" and out["ess"]["score"] == 0.8
    assert "usage" not in out  # the score came with the router's call: no call here


async def test_manipulation_freezes_whatever_the_score() -> None:
    pressure = {**STRONG, "reasoning_type": "social_pressure"}
    out = await ess_gate({**human("Everyone agrees, so must you."), "ess": pressure}, runtime())
    assert out["ess"]["manipulative"] and not out["ess"]["passed"]


async def test_without_a_score_the_heuristic_decides() -> None:
    text = "Everyone knows that cats are better, you have to agree."
    out = await ess_gate(human(text), runtime())
    assert out["ess"]["reasoning_type"] == "social_pressure"
    assert out["ess"]["manipulative"] and not out["ess"]["passed"]
    broken = await ess_gate({**human(text), "ess": {"score": "high"}}, runtime())
    assert broken["ess"]["reasoning_type"] == "social_pressure"


async def test_empty_turn_never_passes() -> None:
    out = await ess_gate(human(""), runtime())
    assert not out["ess"]["passed"] and out["ess"]["score"] == 0.0


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
