"""The consolidation graph ("sleep", docs/design.md section 3): the third registered graph.

    START -> check -> sleep -> END

Input `{"level": "micro" | "daily" | "deep", "now": ISO 8601 | null}`; whose memory it is comes
from the run's context (`user_id`), as for the other graphs, so a served run consolidates only
the caller's memory. `mneme consolidate` runs it through `run_consolidation`; Studio and the
HTTP API run it as `consolidation`; another graph can add it as a subgraph.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from graph.errors import shielded
from memory.services import Services, use_services
from nodes.consolidate import check, sleep
from nodes.context import Context
from nodes.state import ConsolidationInput, ConsolidationState

builder = StateGraph(ConsolidationState, context_schema=Context, input_schema=ConsolidationInput)
builder.add_node("check", shielded(check))
builder.add_node("sleep", shielded(sleep))
builder.add_edge(START, "check")
builder.add_edge("check", "sleep")
builder.add_edge("sleep", END)

graph = builder.compile(name="consolidation")


async def run_consolidation(
    services: Services,
    tenant: str,
    level: str = "micro",
    now: str | None = None,
    *,
    model: str | None = None,
) -> dict[str, Any]:
    """Run the consolidation graph for `tenant` with `services`; the final state."""
    context = Context(user_id=tenant, model_structured=model)
    with use_services(services):
        result: dict[str, Any] = await graph.ainvoke({"level": level, "now": now}, context=context)
    return result
