"""The consolidation graph's nodes: check the input, then sleep at the requested level.

`memory.sleep.consolidation` does the work; this module gives it the run's tenant (the context's
`user_id`, the authenticated caller on a server), the forgetting classifier (the LLM task in
`tasks.forgetting`, which falls back to the utility thresholds offline), the concept namer
(`tasks.concept_naming`), the diary writer (`tasks.diary_writing`), the goal judge
(`tasks.goal_assessment`) and the session summariser (`tasks.sessions`); offline labels,
entries, goal rules and extractive summaries without a model. Deep sleep
ends with a reflection of the personality snapshot (`tasks.reflect.reflect`, forced: the
same triage, patches and snapshot rule as when bookkeeping triggers it). A run holds the
tenant's consolidation lease (`memory.sleep.leases`) throughout: one run per tenant across processes,
and `Busy` for a run that finds another process's.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from langgraph.runtime import Runtime

from memory.schema import as_utc
from memory.services import get_services
from memory.services.usage import Usage
from memory.sleep.consolidation import Level, consolidate, parse_level, parse_now
from memory.sleep.leases import holding
from nodes.context import Context, context_of
from nodes.state import ConsolidationState
from tasks.concept_naming import llm_namer
from tasks.diary_writing import llm_writer
from tasks.forgetting import llm_classifier
from tasks.goal_assessment import llm_judge
from tasks.reflect import ReflectionResult, reflect
from tasks.sessions import llm_summariser


async def check(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """A known level and a time not before the tenant's newest memory (`InvalidInput` else)."""
    services = await get_services()
    tenant = context_of(runtime.context).user_id
    level = parse_level(state.get("level") or "micro")
    now = await parse_now(services, tenant, state.get("now"))
    return {"level": level.value, "at": now.isoformat()}


async def sleep(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Run the level for the run's user (micro < daily < deep, each includes the one before)."""
    ctx = context_of(runtime.context)
    services = await get_services()
    now = as_utc(datetime.fromisoformat(state["at"]))
    usage = Usage()
    online = not services.chat.offline
    classify = llm_classifier(services, now, usage=usage, model=ctx.model_structured)
    name = llm_namer(services, usage=usage, model=ctx.model_structured)
    write = llm_writer(services, usage=usage, model=ctx.model_structured)
    judge = llm_judge(services, usage=usage, model=ctx.model_structured)
    ttl = timedelta(seconds=services.settings.sleep_lease_s)
    async with (
        services.locks.get("consolidation", ctx.user_id),  # one run per tenant in this process
        holding(services.graph, ctx.user_id, ttl),  # and across processes (`Busy` if held)
    ):
        report = await consolidate(
            services,
            ctx.user_id,
            parse_level(state["level"]),
            now,
            classify=classify if online else None,
            name_concepts=name if online else None,
            write_entries=write if online else None,
            judge_goals=judge if online else None,
            summarise=llm_summariser(services, usage, ctx.model_structured),
        )
        summary = report.summary()
        if report.level is Level.DEEP:  # after the beliefs' own deep sleep, on what is left
            reflection = await reflect(
                services, ctx.user_id, usage=usage, model=ctx.model_structured, now=now, force=True
            )
            summary["reflection"] = reflection_summary(reflection)
    return {"report": summary, "usage": usage.update()}


def reflection_summary(result: ReflectionResult) -> dict[str, object]:
    """What deep sleep's reflection did, for the report: whether it ran past triage, why, how
    many beliefs it revised or created, and whether a new snapshot was kept (None: none)."""
    return {
        "ran": result.ran,
        "reason": result.reason,
        "revisions": len(result.revisions),
        "snapshot_kept": None if result.snapshot is None else result.snapshot.accepted,
    }
