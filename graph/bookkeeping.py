"""The bookkeeping graph of one episode (DESIGN section 3), usable served or as a subgraph:

    START -> load -> extract -> index -> beliefs -> link -> END

The same steps as `nodes.bookkeeping.process_episode`, which the background queue and the
sweep run. Input: `{"tenant": ..., "episode_uid": ...}`. A processed episode goes straight to
END. `graph` is compiled without a checkpointer.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from graph.context import Context, context_of
from memory.schema import Episode, EpisodeStatus
from memory.services import get_services
from nodes import bookkeeping as steps
from nodes.extract import Extraction, extract
from nodes.llm import Usage, merge_usage


class BookkeepingInput(TypedDict):
    """Which episode to process."""

    tenant: str
    episode_uid: str


class BookkeepingState(TypedDict, total=False):
    """Progress of one episode through bookkeeping."""

    tenant: str
    episode_uid: str
    status: str
    """The episode's status after the last step."""
    extraction: dict[str, Any]
    """Chunks, questions, topics and entities (`nodes.extract.Extraction` as a dict)."""
    fallback: bool
    """True when the extraction is the heuristic one."""
    derivatives: int
    questions: int
    topics: list[str]
    entities: list[str]
    beliefs: list[dict[str, Any]]
    """Beliefs the episode moved (empty when its ESS did not recommend an update)."""
    reflected: bool
    """True when the episode's provenance fired the reflection trigger and reflection ran."""
    usage: Annotated[dict[str, Any], merge_usage]
    """LLM calls and tokens spent on this episode."""


async def _episode(state: BookkeepingState) -> Episode:
    services = await get_services()
    return await steps.load(services, state["tenant"], state["episode_uid"])


async def load(state: BookkeepingState) -> dict[str, Any]:
    """Check the episode exists and read its status."""
    episode = await _episode(state)
    return {"status": episode.status.value}


def after_load(state: BookkeepingState) -> Literal["extract", "__end__"]:
    """A processed episode needs nothing more."""
    return "__end__" if state.get("status") == EpisodeStatus.PROCESSED.value else "extract"


async def extract_node(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Chunks, prospective questions, topics and entities (one LLM call, heuristic fallback)."""
    ctx = context_of(runtime.context)
    usage = Usage()
    extraction, fallback = await extract(await _episode(state), usage, ctx.model_structured)
    return {
        "extraction": extraction.model_dump(mode="json"),
        "fallback": fallback,
        "usage": usage.update(),
    }


async def index(state: BookkeepingState) -> dict[str, Any]:
    """Embed and upsert derivatives and questions; the episode becomes `indexed`."""
    services = await get_services()
    extraction = Extraction.model_validate(state["extraction"])
    n, questions = await steps.index(
        services, await _episode(state), extraction, fallback=bool(state.get("fallback"))
    )
    return {"derivatives": n, "questions": questions, "status": EpisodeStatus.INDEXED.value}


async def beliefs(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Belief provenance (when the ESS recommends it), then reflection if its trigger fired."""
    ctx = context_of(runtime.context)
    services = await get_services()
    usage = Usage()
    moved, reflected = await steps.beliefs(
        services, await _episode(state), usage, ctx.model_structured
    )
    return {"beliefs": moved, "reflected": reflected, "usage": usage.update()}


async def link(state: BookkeepingState) -> dict[str, Any]:
    """Topics and entities into the graph; the episode becomes `processed`."""
    services = await get_services()
    extraction = Extraction.model_validate(state["extraction"])
    slugs, names = await steps.link(services, await _episode(state), extraction)
    return {"topics": slugs, "entities": names, "status": EpisodeStatus.PROCESSED.value}


builder = StateGraph(BookkeepingState, context_schema=Context, input_schema=BookkeepingInput)
builder.add_node("load", load)
builder.add_node("extract", extract_node)
builder.add_node("index", index)
builder.add_node("beliefs", beliefs)
builder.add_node("link", link)
builder.add_edge(START, "load")
builder.add_conditional_edges("load", after_load)
builder.add_edge("extract", "index")
builder.add_edge("index", "beliefs")
builder.add_edge("beliefs", "link")
builder.add_edge("link", END)

graph = builder.compile(name="bookkeeping")
