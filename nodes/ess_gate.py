"""ess_gate: score the evidence strength of the user's message and decide if beliefs may move.

One structured call returns the Evidence Strength Score of DESIGN section 6 (schema, prompt and
offline heuristic live in `nodes.ess_prompt`): a score, five credibility signals, the reasoning
type, topics, a one-line summary, whether a belief update is recommended, and urgency. The gate
passes when `memory.beliefs.recommends_update` does: score >= `ESS_THRESHOLD`, an argument, and
no manipulative reasoning. Bookkeeping decides belief provenance from the same rule on the
stored ESS, so the live turn and a later sweep agree.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.context import Context, context_of
from graph.state import AgentState
from memory.beliefs import ESS_THRESHOLD, recommends_update
from memory.schema import MANIPULATIVE_TYPES
from nodes.content import bounded, content_text, prompt_text
from nodes.ess_prompt import EvidenceScore, assess_ess, heuristic_ess
from nodes.llm import Usage

__all__ = ["ESS_THRESHOLD", "EvidenceScore", "ess_gate", "gate", "heuristic_ess"]


def gate(score: EvidenceScore) -> dict[str, Any]:
    """The state value: the score, whether beliefs may move, and whether it was manipulative."""
    return {
        **score.model_dump(mode="json"),
        "manipulative": score.reasoning_type in MANIPULATIVE_TYPES,
        "passed": recommends_update(score.record()),
    }


async def ess_gate(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Score the user's message; the sponge may change only if the gate passes."""
    ctx = context_of(runtime.context)
    turn = state.get("turn") or {}
    text = prompt_text(turn)
    usage = Usage()
    if turn.get("empty"):
        score = heuristic_ess("")
    else:
        recent = [
            f"{m.type}: {bounded(content_text(m.content)[0], 300)}"
            for m in state.get("messages", [])[-5:-2]
        ]
        score = await assess_ess(text, usage=usage, recent=recent, model=ctx.model_structured)
    return {"ess": gate(score), "usage": usage.update()}
