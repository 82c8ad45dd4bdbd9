"""route: the turn's first node; decides whether and how to search memory (docs/design.md section 2).

It runs the router's task (`tasks.route`: one structured call that also scores the message's
evidence, which the `ess_gate` node then applies), lets the run's context override the route,
resets the turn's usage counters and what the last turn found, and reads the user's message once
for the nodes after it.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from memory.services import available
from memory.services.usage import Usage
from nodes.context import Context, context_of
from nodes.state import AgentState, evidence_state, route_state
from tasks.content import bounded, content_text, prompt_text, read_turn
from tasks.route import (
    RouteDecision,
    assess_turn,
    result_count,
)

FOUND_BY_A_TURN = (
    "candidates",
    "memories",
    "beliefs",
    "features",
    "reveries",
    "diary",
    "chapters",
)
"""The channels retrieval and rerank fill for one turn. The route empties them, so a turn routed
past retrieval (NONE) is never answered from what the turn before it found."""


def apply_context(decision: RouteDecision, ctx: Context) -> RouteDecision:
    """Let the run's context override the router (a fixed recipe, a fixed result count), and
    resolve an unset result count to the recipe's default."""
    update: dict[str, Any] = {}
    kind = decision.kind
    if kind != "NONE" and ctx.recipe != "auto":
        update["kind"] = kind = ctx.recipe
        update["temporal_expansion"] = ctx.recipe == "TEMPORAL" or decision.temporal_expansion
    if ctx.n_results is not None:
        update["n_results"] = ctx.n_results
    elif decision.n_results is None:
        update["n_results"] = result_count({"kind": kind})
    return decision.model_copy(update=update) if update else decision


async def route(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Classify the turn, set the retrieval parameters and score the message's evidence."""
    ctx = context_of(runtime.context)
    messages = state.get("messages", [])
    turn = state.get("turn") or read_turn(messages)  # `record` read it before bounding it
    usage = Usage()
    text = "" if turn["empty"] else prompt_text(turn)
    recent = [f"{m.type}: {bounded(content_text(m.content)[0], 300)}" for m in messages[-5:-1]]
    chat = (await available()).chat  # the stores are not needed: a turn goes on without them
    assessment = await assess_turn(text, recent, chat=chat, usage=usage, model=ctx.model_fast)
    decision = apply_context(assessment.route, ctx)
    return {
        **{channel: [] for channel in FOUND_BY_A_TURN},
        "turn": turn,
        "route": route_state(decision),
        "ess": evidence_state(assessment.evidence),
        "usage": usage.update(reset=True),
    }
