"""features: the bookkeeping stage that keeps the agent's semantic features (the sponge's second
store). The belief assessment call proposed them when the episode's evidence passed the ESS
gate (`tasks.provenance`); `memory.beliefs.features.absorb` creates or updates them, and deletes the
ones the message explicitly refuted. An episode whose evidence did not pass changes nothing.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from pydantic import ValidationError

from memory.beliefs.features import Proposal, absorb
from memory.services import get_services
from nodes.context import Context, context_of
from nodes.fallback import stage_note
from nodes.state import BookkeepingState, episode_of
from tasks.belief_assessment import ProposedFeature


async def features(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Create, update or delete the agent's features from what the beliefs stage proposed."""
    proposed = list(state.get("proposed_features") or [])
    counters = list(state.get("feature_counters") or [])
    if not proposed and not counters:
        return {"features": {"created": [], "updated": [], "deleted": []}}
    services, episode = await get_services(), episode_of(state, context_of(runtime.context).user_id)
    proposals = []
    for raw in proposed:
        try:
            f = ProposedFeature.model_validate(raw)
        except ValidationError:
            continue
        proposals.append(Proposal(category=f.category, text=f.text, strength=f.strength))
    try:
        done = await absorb(services, episode, proposals, counters)
    except Exception as exc:
        note = stage_note("features", exc)  # the features stay as they were
        return {
            "features": {"created": [], "updated": [], "deleted": []},
            "notes": [*state.get("notes", []), note],
        }
    return {"features": done.summary()}
