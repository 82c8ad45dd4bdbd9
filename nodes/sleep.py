"""The sleep graph's nodes (`graph/consolidation.py`): the input checked, the lease held around
the stages, and one small node per stage.

A stage node takes the run's tenant from the context (`user_id`: the authenticated caller on a
server), its time from `state["at"]` (set by `check`), does its work through `memory.sleep` and
the other memory rooms, and returns what it did under the report's field names with its
seconds, in `stages`. With a chat model the stages ask the LLM tasks of `tasks/`: the forgetting
classifier (`tasks.forgetting`) and the reverie impressions (`tasks.reverie_impression`), the
goal judge (`tasks.goal_assessment`), the concept namer (`tasks.concept_naming`), the diary
writer (`tasks.diary_writing`), the reflection (`tasks.reflection`, forced: the same triage,
patches and snapshot rule as when bookkeeping triggers it), the narrative revision that reads
the chapters and the diary into the snapshot (`tasks.narrative_revision`) and the session
summariser (`tasks.sessions`); offline, the utility thresholds, the impression template, the
goal rules, offline labels, templated entries, the heuristic reflection, the chapters' section
and extractive summaries. `finish` folds the outputs into the report (`memory.sleep.report`)
and records the run's time for the schedule.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from memory.beliefs.apperception import assess
from memory.beliefs.sleep import sleep_beliefs
from memory.knowledge.goals import reassess_goals
from memory.schema import as_utc
from memory.services import Services, get_services
from memory.services.usage import Usage
from memory.sleep import expiry, forgetting, plan
from memory.sleep import rescore as scores
from memory.sleep.chapters import build_chapters
from memory.sleep.concepts import build_concepts
from memory.sleep.coretrieval import decay_links
from memory.sleep.diary import write_diary
from memory.sleep.fidelity import check_fidelity, remember_check
from memory.sleep.leases import holding
from memory.sleep.levels import Level, Progress, parse_level, parse_now, remember_run
from memory.sleep.report import Report
from memory.write.sessions import summarise_sessions
from nodes.context import Context, context_of
from nodes.state import ConsolidationState
from tasks.concept_naming import llm_namer
from tasks.diary_writing import llm_writer
from tasks.forgetting import llm_classifier
from tasks.goal_assessment import llm_judge
from tasks.narrative_revision import revise_narrative
from tasks.reflect import ReflectionResult
from tasks.reflect import reflect as reflection
from tasks.reverie_impression import llm_impression
from tasks.sessions import llm_summariser


class Node(Protocol):
    """A node of the consolidation graph."""

    def __call__(
        self, state: ConsolidationState, runtime: Runtime[Context]
    ) -> Awaitable[dict[str, Any]]:
        """Run the stage on `state`; the partial update of the state."""
        ...


@dataclass(kw_only=True)
class SleepContext(Context):
    """The context a caller in this process gives a run (`run_consolidation`): the agent's
    `Context` and two things only such a caller can pass. A served run gets a plain `Context`."""

    progress: Progress | None = None
    """Called as progress(stage, done, total) by the stages that go through many episodes."""

    classify: forgetting.Classifier | None = None
    """Decides the forgetting batches in place of the model (or, offline, of the thresholds)."""


@dataclass(frozen=True, slots=True)
class Run:
    """What every stage node starts from: the services, the context, the tenant, the time."""

    services: Services
    ctx: Context
    now: datetime
    started: float

    @property
    def tenant(self) -> str:
        """Whose memory sleeps."""
        return self.ctx.user_id

    @property
    def online(self) -> bool:
        """Whether a chat model is configured (the LLM tasks are asked)."""
        return not self.services.chat.offline

    @property
    def model(self) -> str | None:
        """The structured model the context names, if any."""
        return self.ctx.model_structured

    @property
    def progress(self) -> Progress | None:
        """Where the stages report progress (a caller in this process only)."""
        return self.ctx.progress if isinstance(self.ctx, SleepContext) else None

    @property
    def classify(self) -> forgetting.Classifier | None:
        """The forgetting classifier the caller gave, if any."""
        return self.ctx.classify if isinstance(self.ctx, SleepContext) else None

    def done(self, stage: str, usage: Usage | None = None, /, **out: Any) -> dict[str, Any]:
        """The state update of a stage: what it did, its seconds, the LLM usage if any."""
        update: dict[str, Any] = {
            "stages": {stage: {**out, "seconds": time.perf_counter() - self.started}}
        }
        if usage is not None:
            update["usage"] = usage.update()
        return update


async def begin(state: ConsolidationState, runtime: Runtime[Context]) -> Run:
    """The run a stage works in (`state["at"]` is set by `check`)."""
    started = time.perf_counter()
    now = as_utc(datetime.fromisoformat(state["at"]))
    return Run(await get_services(), context_of(runtime.context), now, started)


async def check(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """A known level and a time not before the tenant's newest memory (`InvalidInput` else);
    memories dated in the future never refuse the run: the report's notes name them."""
    services = await get_services()
    tenant = context_of(runtime.context).user_id
    level = parse_level(state.get("level") or "micro")
    checked = await parse_now(services, tenant, state.get("now"))
    update: dict[str, Any] = {"level": level.value, "at": checked.now.isoformat()}
    if checked.notes:  # memories the run leaves out, in the report's notes
        update["stages"] = {"check": {"notes": checked.notes}}
    return update


def leased(stages: CompiledStateGraph[Any, Any, Any, Any]) -> Node:
    """The `sleep` node: `stages` run under the tenant's process lock (runs in this process
    queue) and its consolidation lease (`memory.sleep.leases`: `Busy` when another process holds
    it, renewed throughout, the run cancelled with `Busy` if it is taken over)."""

    async def sleep(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = context_of(runtime.context)
        services = await get_services()
        ttl = timedelta(seconds=services.settings.sleep_lease_s)
        async with (
            services.locks.get("consolidation", ctx.user_id),
            holding(services.graph, ctx.user_id, ttl),
        ):
            done = await stages.ainvoke(state, context=runtime.context)
        return {"stages": done["stages"], "report": done["report"], "usage": done.get("usage", {})}

    return sleep


async def resume(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Finish the plan of decisions a killed run left (`memory.sleep.plan.resume`)."""
    run = await begin(state, runtime)
    return run.done("resume", **await plan.resume(run.services, run.tenant, run.now))


async def links(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Reweigh the co-retrieval links at the run's time, pruning the faded ones."""
    run = await begin(state, runtime)
    reweighed, pruned = await decay_links(run.services, run.tenant, run.now)
    return run.done("links", links_reweighed=reweighed, links_pruned=pruned)


async def rescore(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write every episode's salience and utility at the run's time."""
    run = await begin(state, runtime)
    rescored = await scores.rescore(run.services, run.tenant, run.now, run.progress)
    return run.done("rescore", rescored=rescored)


async def expire(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Archive the passing remarks whose span is over (`memory.sleep.expiry`)."""
    run = await begin(state, runtime)
    out = await expiry.expire(run.services, run.tenant, run.now, run.progress)
    return run.done("expire", **out)


async def forget(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """The forgetting cycle (`memory.sleep.forgetting`), decided by the caller's classifier, the
    LLM (one call per batch of 50) or, offline, the utility thresholds; with a model, each
    reverie's impression is the model's (`tasks.reverie_impression`, one call each)."""
    run = await begin(state, runtime)
    usage = Usage()
    if run.classify is not None:
        classify = run.classify
    elif run.online:
        classify = llm_classifier(run.services, run.now, usage=usage, model=run.model)
    else:
        classify = forgetting.offline_classifier(forgetting.Thresholds())
    impress = llm_impression(run.services, usage=usage, model=run.model) if run.online else None
    out = await forgetting.forget(
        run.services, run.tenant, run.now, classify, progress=run.progress, impress=impress
    )
    return run.done("forget", usage, **out)


async def beliefs(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Decay and reassess the beliefs on what is left (`memory.beliefs.sleep`)."""
    run = await begin(state, runtime)
    done = await sleep_beliefs(run.services, run.tenant, run.now)
    return run.done(
        "beliefs",
        beliefs_decayed=done.decayed,
        beliefs_reassessed=done.reassessed,
        beliefs_resolved=done.resolved,
        beliefs_removed=done.removed,
    )


async def goals(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Decide each goal's status again on the turns left (`memory.knowledge.goals`; with a
    model, goals that later turns mention are judged by it, one call per batch of 10)."""
    run = await begin(state, runtime)
    usage = Usage()
    judge = llm_judge(run.services, usage=usage, model=run.model) if run.online else None
    left = await scores.live_episodes(run.services, run.tenant)
    found = await reassess_goals(run.services, run.tenant, left, run.now, judge=judge)
    return run.done("goals", usage, goals=found.goals, goals_changed=found.changed)


async def apperception(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Score how well the memory left knows the person (`memory.beliefs.apperception`)."""
    run = await begin(state, runtime)
    left = await scores.live_episodes(run.services, run.tenant)
    linked = await scores.connections_of(run.services, run.tenant, [e.uid for e in left])
    found = await assess(run.services, run.tenant, left, linked, run.now)
    return run.done("apperception", apperception=found.score)


async def concepts(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Rebuild the concepts and narrative loops (`memory.sleep.concepts`; named by the model)."""
    run = await begin(state, runtime)
    usage = Usage()
    name = llm_namer(run.services, usage=usage, model=run.model) if run.online else None
    built = await build_concepts(run.services, run.tenant, run.now, name)
    if run.progress:
        run.progress("concepts", built.concepts, built.concepts)
    return run.done("concepts", usage, notes=[built.note()])


async def diary(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write the diary entries of the days that need one (`memory.sleep.diary`)."""
    run = await begin(state, runtime)
    usage = Usage()
    write = llm_writer(run.services, usage=usage, model=run.model) if run.online else None
    written = await write_diary(run.services, run.tenant, run.now, run.progress, write)
    return run.done("diary", usage, notes=[written.note()])


async def chapters(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Rebuild the chapters and theme trajectories from the diary and the concepts
    (`memory.sleep.chapters`)."""
    run = await begin(state, runtime)
    built = await build_chapters(run.services, run.tenant, run.now)
    return run.done("chapters", notes=[built.note()])


async def reflect(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Reflect on the personality snapshot, forced past the trigger (`tasks.reflection`), then
    revise its account of the chapters and the diary (`tasks.narrative_revision`)."""
    run = await begin(state, runtime)
    usage = Usage()
    result = await reflection(
        run.services, run.tenant, usage=usage, model=run.model, now=run.now, force=True
    )
    revised = await revise_narrative(
        run.services, run.tenant, run.now, usage=usage, model=run.model
    )
    summary = reflection_summary(result) | {"narrative_kept": revised.kept}
    return run.done("reflect", usage, reflection=summary)


async def fidelity(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Compare the agent's account of the person with their own words
    (`memory.sleep.fidelity`): what drifted, in the report, and kept as the last check
    (`mneme doctor` shows it)."""
    run = await begin(state, runtime)
    found = await check_fidelity(run.services, run.tenant)
    await remember_check(run.services, run.tenant, run.now, found)
    return run.done("fidelity", fidelity=found.summary(), notes=[found.note()])


async def sessions(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Summarise the sessions whose idle gap has elapsed (`memory.write.sessions`)."""
    run = await begin(state, runtime)
    usage = Usage()
    summarise = llm_summariser(run.services, usage, run.model)
    written = await summarise_sessions(run.services, run.tenant, run.now, summarise=summarise)
    return run.done("sessions", usage, summaries=written)


async def finish(state: ConsolidationState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Fold what the stages did into the report and record the level's run time."""
    run = await begin(state, runtime)
    level = Level(state["level"])
    report = Report(tenant=run.tenant, level=level, now=run.now)
    for stage, out in (state.get("stages") or {}).items():
        report.add(stage, out)
    await remember_run(run.services, run.tenant, level, run.now)
    return {"report": report.summary()}


def reflection_summary(result: ReflectionResult) -> dict[str, object]:
    """What deep sleep's reflection did, for the report: whether it ran, whether triage sent it
    on to the deep reflection (`reflected`), why, how many beliefs it revised or created, and
    whether a new snapshot was kept (None: none); the `reflect` stage adds `narrative_kept`,
    whether the narrative revision stored a new one (None: no chapter with a theme yet)."""
    return {
        "ran": result.ran,
        "reflected": result.triage is not None and result.triage.reflect,
        "reason": result.reason,
        "revisions": len(result.revisions),
        "snapshot_kept": None if result.snapshot is None else result.snapshot.accepted,
    }
