"""The consolidation graph ("sleep", docs/design.md sections 3 and 7): the third registered graph.

    START -> check -> sleep -> END

`sleep` runs the stages under the tenant's lock and consolidation lease:

    START -> resume -> links -> rescore
    rescore -> expire (daily, deep) | sessions (micro)
    expire  -> forget (deep)        | concepts (daily)
    forget -> beliefs -> goals -> apperception -> concepts -> diary
    diary   -> chapters (deep)      | sessions (daily)
    chapters -> reflect -> fidelity -> sessions -> finish -> END

    micro: resume, links, rescore, sessions
    daily: resume, links, rescore, expire, concepts, diary, sessions
    deep:  resume, links, rescore, expire, forget, beliefs, goals, apperception, concepts,
           diary, chapters, reflect, fidelity, sessions

Input `{"level": "micro" | "daily" | "deep", "now": ISO 8601 | null}`; whose memory it is comes
from the run's context (`user_id`), as for the other graphs, so a served run consolidates only
the caller's memory. The order: a plan a killed run left is finished first; links decay before
the scores that count them; expiry and forgetting decide on fresh scores; beliefs, goals and
apperception are judged on what forgetting left; concepts and the diary are built after
forgetting (no concept on a turn being forgotten) and name the beliefs still held; the chapters
are built from them; reflection looks at the beliefs the deep stages changed and the chapters;
the fidelity check compares what is then held about the person with their words; the sessions
pass comes last, after any summary forgetting rebuilt. `finish` folds what each stage did into
the report.

Every caller runs this graph: `mneme consolidate`, the server's schedule
(`serve.schedule`), `mneme eval retrieval --consolidate` and `mneme bench sleep` through
`run_consolidation`, Studio and the HTTP API as `consolidation`.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import END, START, StateGraph

from graph.errors import shielded
from memory.services import Services, use_services
from memory.sleep.forgetting import Classifier
from memory.sleep.levels import Level, Progress
from nodes import sleep as stage
from nodes.context import Context
from nodes.sleep import SleepContext, check, leased
from nodes.state import ConsolidationInput, ConsolidationState


def after_rescore(state: ConsolidationState) -> Literal["expire", "sessions"]:
    """Micro sleep goes straight to the sessions; daily and deep expire first."""
    return "sessions" if Level(state["level"]) is Level.MICRO else "expire"


def after_expire(state: ConsolidationState) -> Literal["forget", "concepts"]:
    """Deep sleep forgets (and reassesses) before the concepts; daily goes on to them."""
    return "forget" if Level(state["level"]) is Level.DEEP else "concepts"


def after_diary(state: ConsolidationState) -> Literal["chapters", "sessions"]:
    """Deep sleep writes the chapters and reflects before the sessions; daily goes on to them."""
    return "chapters" if Level(state["level"]) is Level.DEEP else "sessions"


stages_builder = StateGraph(ConsolidationState, context_schema=Context)
# Three chains, each node named after its function, joined by the levels' conditional edges.
stages_builder.add_sequence([stage.resume, stage.links, stage.rescore])
stages_builder.add_node(stage.expire)
stages_builder.add_sequence(
    [stage.forget, stage.beliefs, stage.goals, stage.apperception, stage.concepts, stage.diary]
)
stages_builder.add_sequence(
    [stage.chapters, stage.reflect, stage.fidelity, stage.sessions, stage.finish]
)
stages_builder.add_edge(START, "resume")
stages_builder.add_conditional_edges("rescore", after_rescore)
stages_builder.add_conditional_edges("expire", after_expire)
stages_builder.add_conditional_edges("diary", after_diary)
stages_builder.add_edge("finish", END)

stages = stages_builder.compile(name="sleep")
"""The stages alone (no lease): only ever run by the `sleep` node below."""

builder = StateGraph(ConsolidationState, context_schema=Context, input_schema=ConsolidationInput)
builder.add_node("check", shielded(check))
builder.add_node("sleep", shielded(leased(stages)))
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
    progress: Progress | None = None,
    classify: Classifier | None = None,
) -> dict[str, Any]:
    """Run the consolidation graph for `tenant` with `services`; the final state (its `report`).

    `progress(stage, done, total)` hears from the long stages; `classify` decides the forgetting
    batches instead of the model or the thresholds (a caller's own policy; tests pin with it)."""
    context = SleepContext(
        user_id=tenant, model_structured=model, progress=progress, classify=classify
    )
    with use_services(services):
        result: dict[str, Any] = await graph.ainvoke({"level": level, "now": now}, context=context)
    return result
