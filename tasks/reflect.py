"""Reflection, run (docs/design.md section 6): gather the inputs, triage, deep reflection, apply.

`reflect` reads the snapshot, the pending insights, the relevant beliefs and the recent
qualifying episodes (`gather`), makes the triage call and, when it says so, the deep call of
`tasks.reflection` (its heuristics offline), then applies the answer (`apply`): patches and new
beliefs bounded and with provenance (`memory.beliefs.revision`), a snapshot through the
acceptance rule (`memory.beliefs.evidence.propose_snapshot`), decay of beliefs without recent
support. Bookkeeping runs it when the sponge's trigger fires; deep sleep runs it forced.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.beliefs.evidence import DecayReport, SnapshotOutcome, decay_beliefs, propose_snapshot
from memory.beliefs.revision import Citation, Revision, new_belief, patch_belief
from memory.beliefs.sponge import SpongeStatus, finish_reflection, status
from memory.beliefs.views import relevant_beliefs
from memory.schema import EvidenceKind, as_utc, topic_slug, utcnow
from memory.services import Services, Tier
from memory.services.usage import Usage
from tasks.llm import structured
from tasks.reflection import (
    RECENT_EPISODES,
    RELEVANT_BELIEFS,
    Inputs,
    Reflection,
    Triage,
    deep_messages,
    heuristic_reflection,
    heuristic_triage,
    short_ids,
    triage_messages,
)
from tasks.respond import DEFAULT_SNAPSHOT

log = logging.getLogger("mneme.reflection")


@dataclass(slots=True)
class ReflectionResult:
    """What one reflection did."""

    ran: bool
    reason: str = ""
    triage: Triage | None = None
    revisions: list[Revision] = field(default_factory=list)
    snapshot: SnapshotOutcome | None = None
    decay: DecayReport | None = None
    usage: dict[str, Any] = field(default_factory=dict)


def checked(value: Reflection, inputs: Inputs) -> str | None:
    """Why a deep-reflection answer cannot be used, or None."""
    topics = {b.topic for b in inputs.beliefs}
    for p in value.patches:
        if topic_slug(p.topic) not in topics:
            return f"patch topic {p.topic!r} is not a listed belief; use the topics as written"
    for ref in [i for p in value.patches for i in p.evidence] + [
        i for n in value.new_beliefs for i in n.evidence
    ]:
        if ref.strip("[] ") not in inputs.ids:
            return f"episode id {ref!r} is not one of the listed episodes"
    return None


def _citations(refs: list[str], inputs: Inputs, kind: EvidenceKind) -> list[Citation]:
    episodes = {e.uid: e for e in inputs.episodes}
    out = []
    for ref in dict.fromkeys(r.strip("[] ") for r in refs):
        uid = inputs.ids.get(ref)
        if uid is not None:
            ess = episodes[uid].ess
            out.append(Citation(uid, kind, ess.score if ess else 0.5))
    return out


async def gather(services: Services, tenant: str, st: SpongeStatus) -> Inputs:
    """Snapshot, insights, the 15 most relevant beliefs and the recent qualifying episodes."""
    graph = services.graph
    current = await graph.snapshots.current(tenant)
    insights = [i.text for i in st.state.insights]
    uids = [i.episode_uid for i in st.state.insights if i.episode_uid][-RECENT_EPISODES:]
    episodes = await graph.episodes.get_many(tenant, uids)
    query = " ".join(insights[-20:]) or (current.text if current else "")
    beliefs = await relevant_beliefs(services, tenant, query, RELEVANT_BELIEFS)
    return Inputs(
        snapshot=current.text if current else DEFAULT_SNAPSHOT,
        insights=insights,
        beliefs=beliefs,
        episodes=episodes,
        ids=short_ids([e.uid for e in episodes]),
    )


async def apply(
    services: Services, tenant: str, value: Reflection, inputs: Inputs, at: datetime
) -> tuple[list[Revision], SnapshotOutcome | None]:
    """Land patches, new beliefs and the snapshot."""
    graph = services.graph
    revisions: list[Revision] = []
    for p in value.patches:
        kind = EvidenceKind.SUPPORTS if p.direction == "supports" else EvidenceKind.CONTRADICTS
        rev = await patch_belief(
            services,
            tenant,
            p.topic,
            statement=p.statement,
            valence=p.valence,
            confidence=p.confidence,
            contested=p.contested,
            citations=_citations(p.evidence, inputs, kind),
            reasoning=p.reasoning,
            at=at,
        )
        if rev is not None:
            revisions.append(rev)
    for n in value.new_beliefs:
        rev = await new_belief(
            services,
            tenant,
            n.topic,
            n.statement,
            valence=n.valence,
            confidence=n.confidence,
            citations=_citations(n.evidence, inputs, EvidenceKind.SUPPORTS),
            reasoning=n.reasoning,
            at=at,
        )
        if rev is not None:
            revisions.append(rev)
    outcome = None
    if value.snapshot and value.snapshot.strip():
        outcome = await propose_snapshot(graph, tenant, value.snapshot, at)
        if not outcome.accepted:
            log.info("reflection: snapshot for %s not kept (%s)", tenant, outcome.reason)
    return revisions, outcome


async def reflect(
    services: Services,
    tenant: str,
    *,
    usage: Usage | None = None,
    model: str | None = None,
    now: datetime | None = None,
    force: bool = False,
) -> ReflectionResult:
    """Reflect if the trigger fired (or `force`): decay, triage, deep reflection, apply.

    One reflection per tenant at a time in this process; a second caller returns at once.
    """
    usage = usage or Usage()
    at = as_utc(now) if now else utcnow()
    running = services.locks.get("reflection", tenant)
    if running.locked():
        return ReflectionResult(ran=False, reason="a reflection is already running")
    async with running:
        st = await status(services.graph, tenant)
        if not force and not st.due():
            return ReflectionResult(ran=False, reason="not due")
        decay = await decay_beliefs(services, tenant, at)
        inputs = await gather(services, tenant, st)
        changed = len(decay.decayed) + len(decay.removed) + int(st.state.cumulative_shift > 0)
        triage = await structured(
            "reflection_triage",
            Triage,
            triage_messages(st, changed),
            fallback=lambda: heuristic_triage(st, changed),
            chat=services.chat,
            usage=usage,
            tier=Tier.FAST,
            model=model,
            max_tokens=128,
        )
        if not triage.reflect:
            await finish_reflection(services, tenant, st, at)
            return ReflectionResult(
                True, "triage: skipped", triage, decay=decay, usage=usage.update()
            )
        offline = await heuristic_reflection(services, inputs)
        value = await structured(
            "reflection",
            Reflection,
            deep_messages(inputs),
            fallback=lambda: offline,
            chat=services.chat,
            usage=usage,
            model=model,
            max_tokens=3000,
            check=lambda v: checked(v, inputs),
        )
        revisions, snapshot = await apply(services, tenant, value, inputs, at)
        await finish_reflection(services, tenant, st, at)
        return ReflectionResult(
            True, value.summary, triage, revisions, snapshot, decay, usage.update()
        )
