"""The agent loop (docs/design.md section 2), one turn per run.

    START -> record -> route -+- NONE -----------------+-> respond -+-> remember -> END
                              +- retrieve -> rerank ---+            |
                              +- ess_gate --------------------------+

`route` and `rerank` share the turn's latency budget (MNEME_TURN_BUDGET_S, counted from the
turn's start, when `record` wrote it): a slow model costs them at most that, then their offline
heuristics answer (`tasks.llm.turn_budget`). `record` makes the user's message durable first (graph store, else the local outbox) so the
reply can say truthfully whether it is remembered; `route` makes the turn's first LLM call,
which also scores the message's evidence, so the evidence gate runs beside retrieval instead
of after the reply (what the gate decides reaches the sponge through the stored ESS, in
bookkeeping: docs/adr/0135-no-sponge-update-node.md); `remember` waits for both branches, runs after the
reply's last token and completes the episode with the reply. `builder` is the uncompiled graph;
`graph` is compiled without a checkpointer (the server provides persistence). Tests and
notebooks compile `builder` with their own saver.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Literal, TypeVar

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graph.errors import shielded
from memory.services import available
from nodes.context import Context
from nodes.ess_gate import ess_gate
from nodes.record import record
from nodes.remember import remember
from nodes.rerank import rerank
from nodes.respond import respond
from nodes.retrieve import retrieve
from nodes.route import route
from nodes.state import AgentState, InputState, route_of
from tasks.llm import turn_budget

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


def turn_started(state: AgentState) -> float | None:
    """When the turn started (epoch seconds): when `record` wrote its episode, if it did."""
    at = (state.get("episode") or {}).get("created_at")
    return datetime.fromisoformat(str(at)).timestamp() if at else None


def budgeted(node: F) -> F:
    """`node(state, runtime)`, its model calls limited by the turn's latency budget."""

    @functools.wraps(node)
    async def run(state: AgentState, runtime: Runtime[Context]) -> Any:
        budget = (await available()).settings.turn_budget_s
        with turn_budget(turn_started(state), budget):
            return await node(state, runtime)

    return run  # type: ignore[return-value]


def after_route(state: AgentState) -> list[Literal["retrieve", "respond", "ess_gate"]]:
    """Score the evidence in parallel; skip retrieval when the router said no memory is needed."""
    return ["respond" if route_of(state)["kind"] == "NONE" else "retrieve", "ess_gate"]


builder = StateGraph(AgentState, context_schema=Context, input_schema=InputState)
builder.add_node("record", shielded(record))
builder.add_node("route", shielded(budgeted(route)))
builder.add_node("retrieve", shielded(retrieve))
builder.add_node("rerank", shielded(budgeted(rerank)))
builder.add_node("respond", shielded(respond))
builder.add_node("ess_gate", shielded(ess_gate))
builder.add_node("remember", shielded(remember))

builder.add_edge(START, "record")
builder.add_edge("record", "route")
builder.add_conditional_edges("route", after_route)
builder.add_edge("retrieve", "rerank")
builder.add_edge("rerank", "respond")
builder.add_edge(["respond", "ess_gate"], "remember")
builder.add_edge("remember", END)

graph = builder.compile(name="agent")
