"""sponge_update: an insight when the gate passed, a freeze with its reason otherwise."""

from __future__ import annotations

from nodes.sponge_update import sponge_update
from tests.unit.fake_chat import runtime


async def test_passed_gate_records_an_insight() -> None:
    ess = {
        "passed": True,
        "manipulative": False,
        "summary": "Sleep improves recall.",
        "reasoning_type": "empirical",
        "score": 0.8,
    }
    out = await sponge_update({"ess": ess}, runtime())
    assert out["sponge"] == {"frozen": False, "insight": "Sleep improves recall."}


async def test_manipulation_freezes_the_sponge() -> None:
    ess = {"passed": False, "manipulative": True, "reasoning_type": "social_pressure", "score": 0.2}
    out = await sponge_update({"ess": ess}, runtime())
    assert out["sponge"]["frozen"] and "social_pressure" in out["sponge"]["reason"]
    assert "insights" not in out


async def test_weak_evidence_freezes_the_sponge() -> None:
    out = await sponge_update({"ess": {"passed": False, "score": 0.31}}, runtime())
    assert out["sponge"]["frozen"] and "0.31" in out["sponge"]["reason"]


async def test_missing_ess_freezes() -> None:
    out = await sponge_update({}, runtime())
    assert out["sponge"]["frozen"]
