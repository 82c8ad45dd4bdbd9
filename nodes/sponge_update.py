"""sponge_update: record an insight when the evidence gate passed, freeze the sponge otherwise.

A qualifying turn (ESS passed, reasoning not manipulative) stages a one-sentence insight in the
turn's state; anything else freezes the personality for this turn and says why. This node only
decides and records in the turn's state: the durable part (provenance edges, bounded belief
moves, the persisted insight and shift, reflection when due) runs in bookkeeping
(`tasks.provenance`, `tasks.reflect`) from the ESS stored on the episode, so a restart or a
sweep decides exactly as the live turn did.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from nodes.context import Context
from nodes.ess_gate import ESS_THRESHOLD
from nodes.state import AgentState, Evidence

INSIGHT_CHARS = 240


def insight_from(ess: Evidence) -> str:
    """One sentence worth keeping from a qualifying message."""
    summary = str(ess.get("summary") or "").strip()
    topics = ", ".join(ess.get("topics") or [])
    text = summary or (
        f"The user made a {ess.get('reasoning_type')} point"
        + (f" about {topics}" if topics else "")
    )
    return text[:INSIGHT_CHARS]


async def sponge_update(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Stage an insight when the gate passed; freeze (and say why) when it did not."""
    ess = state.get("ess")
    if ess is not None and ess.get("passed"):
        insight = insight_from(ess)
        return {"sponge": {"frozen": False, "insight": insight}}
    if ess is not None and ess.get("manipulative"):
        reason = f"manipulative reasoning ({ess.get('reasoning_type')})"
    else:
        score = float(ess.get("score", 0.0)) if ess is not None else 0.0
        reason = f"evidence too weak ({score:.2f} < {ESS_THRESHOLD})"
    return {"sponge": {"frozen": True, "insight": None, "reason": reason}}
