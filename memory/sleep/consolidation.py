"""Sleep: salience and utility recomputed, expiry and the forgetting cycle (docs/design.md section 7).

Three levels, each idempotent and safe to kill half way (the next run finishes it):

- **micro**: reweigh the links between episodes retrieved together, pruning the faded ones
  (`memory.sleep.coretrieval`), then recompute every episode's salience (`memory.sleep.salience`: age,
  accesses, connections (strong links included), the heuristic appraisal) and utility
  (FSRS + ACT-R, from the last access);
- **daily**: micro, then expiry: a passing remark (at most one graph edge) about a bounded
  present or future span ("busy this week", "see you tomorrow") is archived once that span is
  over; then concepts, narrative loops and the diary (`memory.sleep.diary.daily_sleep`, after
  forgetting at deep);
- **deep**: daily, then the forgetting cycle: the lowest-utility episodes older than an hour,
  in batches, are classified KEEP / ARCHIVE (graph kept, its vectors removed: no longer found
  by similarity) / FORGET (removed from both stores; a faded one, salience < 0.1, leaves a
  reverie). The classifier is the LLM when there is one (`tasks.forgetting`), else utility
  thresholds. Whatever the classifier says, cornerstones and pinned episodes are never touched
  (a pin is re-read before each ARCHIVE and FORGET is applied) and an episode
  that is the only evidence of an active belief or the only source of a current fact is KEPT;
  the facts only a forgotten episode stated are deleted, facts it shared keep their other
  sources (and their vector is re-pointed at one); then beliefs (`memory.beliefs.sleep`):
  the unsupported decay, those that lost evidence are reassessed, each change journaled;
  goals (`memory.knowledge.goals`): each goal's status (active / completed / abandoned / evolved) is
  decided again on what is left; last, the bulk apperception score of the memory left
  (`memory.beliefs.apperception`).

Every level ends by summarising the sessions whose idle gap has elapsed at `now`
(`memory.write.sessions`); a forgotten episode's session summary is rebuilt from the session's other
turns first (or removed with its last turn).

Crash safety: the decisions of a batch are written to the tenant's state (`PLAN_KEY`) before
any is applied, and a run first finishes a plan it finds. Each application is ordered so that
every intermediate state is consistent for `mneme doctor`: an episode is marked archived before
its vectors go, and its vectors and fact points go before its graph node.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memory.beliefs.apperception import assess
from memory.beliefs.sleep import sleep_beliefs
from memory.knowledge.goals import Judge, reassess_goals
from memory.schema import as_utc
from memory.sleep.concepts import Namer
from memory.sleep.coretrieval import decay_links
from memory.sleep.diary import Writer, daily_sleep
from memory.sleep.expiry import expire
from memory.sleep.forgetting import Classifier, Thresholds, forget, offline_classifier
from memory.sleep.levels import Level, Progress, progress_to, remember_run
from memory.sleep.plan import PLAN_KEY, apply_plan, load_plan
from memory.sleep.report import Report
from memory.sleep.rescore import connections_of, live_episodes, rescore
from memory.write.sessions import Summariser, extractive, summarise_sessions

if TYPE_CHECKING:
    from memory.services import Services


async def consolidate(
    services: Services,
    tenant: str,
    level: Level | str,
    now: datetime,
    *,
    classify: Classifier | None = None,
    thresholds: Thresholds | None = None,
    batch_size: int = 50,
    progress: Progress | None = None,
    name_concepts: Namer | None = None,
    write_entries: Writer | None = None,
    judge_goals: Judge | None = None,
    summarise: Summariser = extractive,
) -> Report:
    """Run one level of consolidation for `tenant` at `now` (a simulated time is fine).

    `name_concepts` names new or changed concepts and `write_entries` writes diary entries at
    the daily level and `judge_goals` judges goals with later mentions at the deep level (the
    LLM; offline labels, entries and goal rules without them). Every level ends by
    summarising the sessions whose idle gap has elapsed at `now` (`summarise`: the LLM task of
    `nodes.sessions`, or the extractive summary)."""
    level = Level(level)
    now = as_utc(now)
    thresholds = thresholds or Thresholds()
    progress = progress or progress_to.get()
    report = Report(tenant=tenant, level=level, now=now)
    # A plan left by a killed run is finished first, whatever level runs now.
    pending = await load_plan(services, tenant)
    if pending:
        report.resumed = len(pending)
        report.notes.append(f"finished {len(pending)} decisions of an interrupted run")
        await apply_plan(services, tenant, pending, now, report)
        await services.graph.put_tenant_state(tenant, PLAN_KEY, "[]")
    report.links_reweighed, report.links_pruned = await decay_links(services, tenant, now)
    scored, connections, report.rescored = await rescore(services, tenant, now, progress)
    if level in (Level.DAILY, Level.DEEP):
        await expire(services, tenant, scored, connections, now, report, progress)
    if level == Level.DEEP:
        await forget(
            services,
            tenant,
            scored,
            connections,
            now,
            classify or offline_classifier(thresholds),
            batch_size,
            report,
            progress,
        )
        done = await sleep_beliefs(services, tenant, now)
        report.beliefs_decayed, report.beliefs_reassessed = done.decayed, done.reassessed
        report.beliefs_resolved, report.beliefs_removed = done.resolved, done.removed
        left = await live_episodes(services, tenant)
        goals = await reassess_goals(services, tenant, left, now, judge=judge_goals)
        report.goals, report.goals_changed = goals.goals, goals.changed
        linked = await connections_of(services, tenant, [e.uid for e in left])
        report.apperception = (await assess(services, tenant, left, linked, now)).score
    if level in (Level.DAILY, Level.DEEP):
        report.notes += await daily_sleep(
            services, tenant, now, name_concepts, progress, write_entries
        )
    report.summaries += await summarise_sessions(services, tenant, now, summarise=summarise)
    await remember_run(services, tenant, level, now)
    return report
