"""The decisions of forgetting and expiry, written before they are applied (docs/adr/0079).

Crash safety: the decisions of a batch are written to the tenant's state (`PLAN_KEY`) before
any is applied, and a run first finishes a plan it finds. Each application is ordered so that
every intermediate state is consistent for `mneme doctor`: an episode is marked archived before
its vectors go, and its vectors and fact points go before its graph node. Whatever the plan
says, an episode pinned since it was made is left alone, and one that has become the only
evidence of an active belief, the only source of a current fact or a source of a current
timeless fact is kept (re-checked one by one: forgetting one episode can leave another the only
evidence).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from memory.knowledge.facts import index_facts
from memory.knowledge.goals import release_episode as release_goals
from memory.knowledge.rules import point_id
from memory.schema import Episode
from memory.sleep.concepts import release_episode
from memory.sleep.reveries import REVERIE_SALIENCE, Impress, write_reverie
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


Applied = Counter[str]
"""What applying decisions did, by report field (`memory.sleep.report`): `archived`,
`forgotten`, `protected` (kept as the only evidence of an active belief or the only source of a
current fact), `context` (kept next to a protected turn, `memory.sleep.protection`), `pinned`
(left alone: pinned since the decision was made), `facts_deleted`, `reveries`, `summaries`
(session summaries rebuilt or removed)."""


async def save_plan(services: Services, tenant: str, plan: Mapping[str, Decision]) -> None:
    """Write the decisions about to be applied to the tenant's state (before any is applied)."""
    value = json.dumps([[uid, d.value] for uid, d in plan.items()])
    await services.graph.state.put(tenant, PLAN_KEY, value)


async def clear_plan(services: Services, tenant: str) -> None:
    """Mark the tenant's plan done (every decision applied)."""
    await services.graph.state.put(tenant, PLAN_KEY, "[]")


async def load_plan(services: Services, tenant: str) -> dict[str, Decision]:
    """The decisions a run wrote and did not finish applying (empty when there are none)."""
    raw = await services.graph.state.get(tenant, PLAN_KEY)
    if not raw:
        return {}
    try:
        return {str(uid): Decision(d) for uid, d in json.loads(raw)}
    except (ValueError, TypeError):
        log.warning("consolidation: unreadable plan for %s dropped", tenant)
        return {}


async def carry_out(
    services: Services,
    tenant: str,
    plan: Mapping[str, Decision],
    now: datetime,
    salience: Mapping[str, float] | None = None,
    *,
    saved: bool = False,
    impress: Impress | None = None,
) -> Applied:
    """Write `plan` to the tenant's state (unless it is `saved` there already), apply each
    decision (see the module docstring for what is left alone), mark the plan done; what was
    applied. `salience` (uid -> salience at the run's time) decides which forgotten episodes
    leave a reverie (else their stored salience); `impress` writes their impressions (the
    template without it)."""
    if not saved:
        await save_plan(services, tenant, plan)
    done: Applied = Counter()
    for uid, decision in plan.items():
        episode = await services.graph.episodes.get(tenant, uid)
        if episode is None:
            continue  # forgotten by the run this plan was left by
        if episode.pinned:  # pinned since the plan was made: the pin wins
            done["pinned"] += 1
            continue
        if decision == Decision.ARCHIVE:
            await archive_episode(services, episode)
            done["archived"] += 1
        elif decision == Decision.FORGET:
            # Re-checked one by one: forgetting one episode can leave another the only evidence.
            if await services.graph.episodes.sole_evidence(tenant, [uid]):
                done["protected"] += 1
                continue
            faded = (salience or {}).get(uid, episode.salience)
            deleted, reverie, rebuilt = await forget_episode(services, episode, faded, now, impress)
            done["forgotten"] += 1
            done["summaries"] += rebuilt
            done["facts_deleted"] += deleted
            done["reveries"] += int(reverie)
    await clear_plan(services, tenant)
    return done


async def resume(services: Services, tenant: str, now: datetime) -> dict[str, object]:
    """Finish the plan a killed run left, whatever level runs now: what was applied, how many
    decisions were `resumed`, and a note (nothing when there was no plan)."""
    pending = await load_plan(services, tenant)
    if not pending:
        return {}
    done = await carry_out(services, tenant, pending, now, saved=True)
    note = f"finished {len(pending)} decisions of an interrupted run"
    return {"resumed": len(pending), **done, "notes": [note]}


async def archive_episode(services: Services, episode: Episode) -> None:
    """Graph kept, vectors of its text removed (no longer found by similarity). Idempotent."""
    if not episode.archived:
        await services.graph.episodes.update_scores(episode.tenant, episode.uid, archived=True)
    await services.vectors.delete_by_episode(
        episode.tenant, episode.uid, ["derivatives", "prospective"]
    )


async def forget_episode(
    services: Services,
    episode: Episode,
    salience: float,
    now: datetime,
    impress: Impress | None = None,
) -> tuple[int, bool, int]:
    """Remove an episode from both stores; returns (facts deleted, reverie written, session
    summaries rebuilt or removed). A faded one leaves a reverie (its impression by `impress`,
    the model, when given).

    Facts only it stated are deleted; facts it shared keep their other sources and their point
    is re-pointed at one of those. The summaries of its session are rebuilt from the session's
    other turns (extractively: forgetting makes no LLM call) or removed when it was the only
    one, before the episode goes. Ordered for crash safety (see the module docstring).
    """
    tenant, uid = episode.tenant, episode.uid
    await archive_episode(services, episode)
    reverie = False
    if salience < REVERIE_SALIENCE:
        reverie = await write_reverie(services, episode, now, impress)
    fact_uids = await services.graph.facts.stated_by(tenant, uid)
    sources = await services.graph.facts.sources_many(tenant, fact_uids)
    alone = [f for f in fact_uids if [s for s in sources.get(f, []) if s != uid] == []]
    shared = [f for f in fact_uids if f not in alone]
    if alone:
        points = [point_id(tenant, f) for f in alone]
        await services.vectors.delete_points("knowledge", tenant, points)
        for f in alone:
            await services.graph.facts.delete(tenant, f)
    if shared:  # re-pointed at a remaining source before this one goes
        facts = await services.graph.facts.get_many(tenant, shared)
        await index_facts(services, tenant, facts, exclude={uid})
    await release_episode(services, tenant, uid)
    await release_goals(services, tenant, uid, now)
    rebuilt = await without_episode(services, tenant, uid)
    await services.graph.episodes.delete(tenant, uid)
    return len(alone), reverie, rebuilt
