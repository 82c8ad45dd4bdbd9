"""The decisions of forgetting and expiry, written before they are applied (docs/adr/0079).

Crash safety: the decisions of a batch are written to the tenant's state (`PLAN_KEY`) before
any is applied, and a run first finishes a plan it finds. Each application is ordered so that
every intermediate state is consistent for `mneme doctor`: an episode is marked archived before
its vectors go, and its vectors and fact points go before its graph node. Whatever the plan
says, an episode pinned since it was made is left alone, and one that has become the only
evidence of an active belief or the only source of a current fact is kept (re-checked one by
one: forgetting one episode can leave another the only evidence).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from memory.knowledge.facts import index_facts
from memory.knowledge.goals import release_episode as release_goals
from memory.knowledge.rules import point_id
from memory.schema import Episode
from memory.sleep.concepts import release_episode
from memory.sleep.report import Report
from memory.sleep.rescore import Candidate
from memory.sleep.reveries import REVERIE_SALIENCE, write_reverie
from memory.write.sessions import without_episode

if TYPE_CHECKING:
    from memory.services import Services

log = logging.getLogger("mneme.consolidation")

PLAN_KEY = "consolidation:plan"
"""Tenant-state key of the decisions being applied (JSON), cleared when all are applied."""


class Decision(StrEnum):
    """What the forgetting cycle does with an episode."""

    KEEP = "keep"
    ARCHIVE = "archive"
    FORGET = "forget"


async def save_plan(services: Services, tenant: str, plan: dict[str, Decision]) -> None:
    value = json.dumps([[uid, d.value] for uid, d in plan.items()])
    await services.graph.put_tenant_state(tenant, PLAN_KEY, value)


async def load_plan(services: Services, tenant: str) -> dict[str, Decision]:
    raw = await services.graph.get_tenant_state(tenant, PLAN_KEY)
    if not raw:
        return {}
    try:
        return {str(uid): Decision(d) for uid, d in json.loads(raw)}
    except (ValueError, TypeError):
        log.warning("consolidation: unreadable plan for %s dropped", tenant)
        return {}


async def apply_plan(
    services: Services,
    tenant: str,
    plan: dict[str, Decision],
    now: datetime,
    report: Report,
    scored: dict[str, Candidate] | None = None,
) -> None:
    for uid, decision in plan.items():
        episode = await services.graph.get_episode(tenant, uid)
        if episode is None:
            continue  # forgotten by the run this plan was left by
        if episode.pinned:  # pinned since the plan was made: the pin wins
            report.pinned += 1
            continue
        if decision == Decision.ARCHIVE:
            await archive_episode(services, episode)
            report.archived += 1
        elif decision == Decision.FORGET:
            # Re-checked one by one: forgetting one episode can leave another the only evidence.
            if await services.graph.sole_evidence(tenant, [uid]):
                report.protected += 1
                continue
            found = scored.get(uid) if scored else None
            salience = found.salience if found else episode.salience
            deleted, reverie, rebuilt = await forget_episode(services, episode, salience, now)
            report.forgotten += 1
            report.summaries += rebuilt
            report.facts_deleted += deleted
            report.reveries += int(reverie)


async def archive_episode(services: Services, episode: Episode) -> None:
    """Graph kept, vectors of its text removed (no longer found by similarity). Idempotent."""
    if not episode.archived:
        await services.graph.update_scores(episode.tenant, episode.uid, archived=True)
    await services.vectors.delete_by_episode(
        episode.tenant, episode.uid, ["derivatives", "prospective"]
    )


async def forget_episode(
    services: Services, episode: Episode, salience: float, now: datetime
) -> tuple[int, bool, int]:
    """Remove an episode from both stores; returns (facts deleted, reverie written, session
    summaries rebuilt or removed).

    Facts only it stated are deleted; facts it shared keep their other sources and their point
    is re-pointed at one of those. The summaries of its session are rebuilt from the session's
    other turns (extractively: forgetting makes no LLM call) or removed when it was the only
    one, before the episode goes. Ordered for crash safety (see the module docstring).
    """
    tenant, uid = episode.tenant, episode.uid
    await archive_episode(services, episode)
    reverie = False
    if salience < REVERIE_SALIENCE:
        reverie = await write_reverie(services, episode, now)
    fact_uids = await services.graph.facts_stated_by(tenant, uid)
    sources = await services.graph.sources_of_facts(tenant, fact_uids)
    alone = [f for f in fact_uids if [s for s in sources.get(f, []) if s != uid] == []]
    shared = [f for f in fact_uids if f not in alone]
    if alone:
        points = [point_id(tenant, f) for f in alone]
        await services.vectors.delete_points("knowledge", tenant, points)
        for f in alone:
            await services.graph.delete_fact(tenant, f)
    if shared:  # re-pointed at a remaining source before this one goes
        facts = await services.graph.get_facts(tenant, shared)
        await index_facts(services, tenant, facts, exclude={uid})
    await release_episode(services, tenant, uid)
    await release_goals(services, tenant, uid, now)
    rebuilt = await without_episode(services, tenant, uid)
    await services.graph.delete_episode(tenant, uid)
    return len(alone), reverie, rebuilt
