"""The bookkeeping graph: the one pipeline that turns an episode into memory (docs/design.md section 3).

    START -> load -+- processed ------------------------------------------------------------------------> END
                   +- extract -> index -> beliefs -> features -> knowledge -> thread -> sessions
                      -> link -> salience -> END

Input `{"episode_uid": ...}`; whose episode it is comes from the run's context (`user_id`), as
for the agent, so a served run cannot name another user's episode. The background queue, the
sweep, `mneme sweep`, the CLI and `mneme eval` all run this graph through `run_episode`, which
each composition root gives `Services.open(pipeline=...)` (importing this module registers
nothing). A new stage is one node (in `nodes/`) and one edge here. `graph` is compiled without a
checkpointer.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import END, START, StateGraph

from graph.errors import shielded
from memory.schema import EpisodeStatus
from memory.services import Services, use_services
from nodes.bookkeeping import beliefs, index, link, load
from nodes.compress import compress_thread
from nodes.context import Context
from nodes.extract import extract_step
from nodes.features import features
from nodes.knowledge import knowledge
from nodes.salience import salience
from nodes.sessions import sessions
from nodes.state import BookkeepingInput, BookkeepingState


def after_load(state: BookkeepingState) -> Literal["extract", "__end__"]:
    """A processed episode needs nothing more."""
    return "__end__" if state.get("status") == EpisodeStatus.PROCESSED.value else "extract"


builder = StateGraph(BookkeepingState, context_schema=Context, input_schema=BookkeepingInput)
builder.add_node("load", shielded(load))
builder.add_node("extract", shielded(extract_step))
builder.add_node("index", shielded(index))
builder.add_node("beliefs", shielded(beliefs))
builder.add_node("features", shielded(features))
builder.add_node("knowledge", shielded(knowledge))
builder.add_node("thread", shielded(compress_thread))
builder.add_node("sessions", shielded(sessions))
builder.add_node("link", shielded(link))
builder.add_node("salience", shielded(salience))
builder.add_edge(START, "load")
builder.add_conditional_edges("load", after_load)
builder.add_edge("extract", "index")
builder.add_edge("index", "beliefs")
builder.add_edge("beliefs", "features")
builder.add_edge("features", "knowledge")
builder.add_edge("knowledge", "thread")
builder.add_edge("thread", "sessions")
builder.add_edge("sessions", "link")
builder.add_edge("link", "salience")
builder.add_edge("salience", END)

graph = builder.compile(name="bookkeeping")


async def run_episode(
    services: Services, tenant: str, uid: str, *, model: str | None = None
) -> dict[str, Any]:
    """Run the bookkeeping graph on one episode of `tenant` with `services`; the final state."""
    context = Context(user_id=tenant, model_structured=model)
    with use_services(services):
        result: dict[str, Any] = await graph.ainvoke({"episode_uid": uid}, context=context)
    return result
