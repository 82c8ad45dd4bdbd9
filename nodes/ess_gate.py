"""ess_gate: decide from the message's Evidence Strength Score whether beliefs may move.

The score itself comes from the router's one structured call (`tasks.route`, with the rubric,
schema and offline heuristic of `tasks.ess`); this node applies the gate of
docs/design.md section 6 and needs no model: it passes when `memory.beliefs.evidence.recommends_update`
does (score >= `ESS_THRESHOLD`, an argument, no manipulative reasoning). Bookkeeping decides belief provenance
from the same rule on the stored ESS, so the live turn and a later sweep agree.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from pydantic import ValidationError

from memory.beliefs.evidence import ESS_THRESHOLD, recommends_update
from memory.schema import MANIPULATIVE_TYPES
from nodes.context import Context
from nodes.state import AgentState, Evidence, evidence_state, turn_of
from tasks.content import prompt_text
from tasks.ess import EvidenceScore, heuristic_ess

__all__ = ["ESS_THRESHOLD", "EvidenceScore", "ess_gate", "gate", "heuristic_ess"]


def gate(score: EvidenceScore) -> Evidence:
    """The state value: the score, whether beliefs may move, and whether it was manipulative."""
    return {
        **evidence_state(score),
        "manipulative": score.reasoning_type in MANIPULATIVE_TYPES,
        "passed": recommends_update(score.record()),
    }


def score_of(state: AgentState) -> EvidenceScore:
    """The router's score of the message, or the heuristic's when the state has none."""
    raw = {k: v for k, v in (state.get("ess") or {}).items() if k not in ("manipulative", "passed")}
    if raw:
        try:
            return EvidenceScore.model_validate(raw)
        except ValidationError:
            pass
    return heuristic_ess(prompt_text(turn_of(state)))


async def ess_gate(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Apply the evidence gate; the sponge may change only if it passes."""
    return {"ess": gate(score_of(state))}
