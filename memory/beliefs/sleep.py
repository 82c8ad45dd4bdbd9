"""Deep sleep for beliefs: decay the unsupported, reassess those that lost evidence, and keep
a journal of every change (docs/design.md section 6; docs/adr/0091-beliefs-at-deep-sleep.md).

Run by deep sleep's `beliefs` stage (`graph/consolidation.py`), after forgetting, at the run's
(possibly simulated) time:

1. **Decay** is `memory.beliefs.evidence.decay_beliefs`, the rule reflection already applies: after 30
   days without support, confidence -0.01 a day and valence halves every 90 days; a belief at
   confidence 0 is removed. Deep sleep runs it too, so a person who stops talking (no
   reflection is triggered) still sees the agent's unsupported views fade.
2. **Reassessment**: a belief whose stored `evidence_count` exceeds its evidence edges lost
   evidence (an episode was forgotten or deleted; archiving keeps the graph, so an archived
   episode is still evidence). Its confidence is capped by what the remaining evidence would
   have built from nothing (the update rule replayed over the remaining edges, oldest first,
   each damped as it was when its episode was among the tenant's first ten); when the cap
   lowers it, the valence is the replayed one. Only a cap: reflection's moves since are kept
   unless the remaining evidence cannot carry them.
   `evidence_count` becomes the number of edges, and `contested` is decided again from the
   remaining evidence balance (`memory.beliefs.evidence.contested`): a contested belief is resolved
   only when the evidence left no longer contests it, never by time. A belief with no
   evidence left is removed (confidence 0, as decay would).

Every change is written to the tenant's belief journal (`JOURNAL_KEY`) before the belief is:
before, after (None when removed) and why. A run killed between the two writes the same entry
again on the next run, which the journal ignores (same belief, time and reason).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from memory.beliefs.evidence import (
    clamp,
    contested,
    decay_beliefs,
    effective_magnitude,
    interaction_index,
    list_active_beliefs,
    move,
)
from memory.schema import Belief, Evidence, as_utc

if TYPE_CHECKING:
    from memory.services import Services

JOURNAL_KEY = "beliefs:journal"
"""Tenant-state key of the belief journal (JSON list, oldest first)."""

JOURNAL_LIMIT = 1000
"""The journal keeps the newest this many changes (a bound on one tenant-state document)."""

_EVIDENCE_SCAN = 10_000


@dataclass(frozen=True, slots=True)
class BeliefState:
    """What a journal entry records of a belief at one time."""

    valence: float
    confidence: float
    contested: bool
    evidence_count: int

    @classmethod
    def of(cls, belief: Belief) -> BeliefState:
        """The recorded part of `belief`."""
        return cls(belief.valence, belief.confidence, belief.contested, belief.evidence_count)


@dataclass(frozen=True, slots=True)
class BeliefChange:
    """One journal entry: a belief changed (or was removed) at `at`, and why."""

    at: str
    uid: str
    topic: str
    statement: str
    reason: str
    before: BeliefState
    after: BeliefState | None

    def key(self) -> tuple[str, str, str]:
        """What makes an entry the same change when a resumed run writes it again."""
        return (self.uid, self.at, self.reason)


@dataclass(slots=True)
class BeliefSleepReport:
    """What the deep level did to beliefs."""

    decayed: int = 0
    reassessed: int = 0
    resolved: int = 0
    removed: int = 0
    changes: list[BeliefChange] = field(default_factory=list)


async def journal(services: Services, tenant: str) -> list[BeliefChange]:
    """The tenant's belief journal, oldest first."""
    raw = await services.graph.state.get(tenant, JOURNAL_KEY)
    rows = json.loads(raw) if raw else []
    out = []
    for row in rows if isinstance(rows, list) else []:
        after = row.get("after")
        out.append(
            BeliefChange(
                at=row["at"],
                uid=row["uid"],
                topic=row["topic"],
                statement=row["statement"],
                reason=row["reason"],
                before=BeliefState(**row["before"]),
                after=BeliefState(**after) if after else None,
            )
        )
    return out


async def _record(services: Services, tenant: str, change: BeliefChange) -> None:
    entries = await journal(services, tenant)
    if any(e.key() == change.key() for e in entries):
        return  # written by the run this one resumes
    entries = [*entries, change][-JOURNAL_LIMIT:]
    value = json.dumps([asdict(e) for e in entries], sort_keys=True)
    await services.graph.state.put(tenant, JOURNAL_KEY, value)


def _change(belief: Belief, after: Belief | None, reason: str, now: datetime) -> BeliefChange:
    return BeliefChange(
        at=as_utc(now).isoformat(),
        uid=belief.uid,
        topic=belief.topic,
        statement=belief.statement,
        reason=reason,
        before=BeliefState.of(belief),
        after=BeliefState.of(after) if after else None,
    )


def replayed(edges: list[Evidence], interactions: dict[str, int]) -> tuple[float, float]:
    """(valence, confidence) the update rule builds from nothing over `edges`, oldest first;
    `interactions`: each evidence episode's position in the tenant's history (the damping of
    the first ten). An edge's strength already carries the message's quality."""
    valence = confidence = 0.0
    for edge in sorted(edges, key=lambda e: (as_utc(e.created_at), e.episode_uid)):
        magnitude = effective_magnitude(
            edge.strength, confidence, interaction_index=interactions.get(edge.episode_uid)
        )
        step = move(valence, confidence, edge.kind, magnitude)
        valence, confidence = step.valence, step.confidence
    return valence, confidence


def reassessed(
    belief: Belief, edges: list[Evidence], interactions: dict[str, int]
) -> tuple[Belief, str] | None:
    """The belief after reassessing it against its remaining `edges`, with the reason; None
    when it lost no evidence."""
    if len(edges) >= belief.evidence_count:
        return None
    lost = belief.evidence_count - len(edges)
    valence, cap = replayed(edges, interactions)
    confidence = min(belief.confidence, round(clamp(cap), 6))
    update: dict[str, object] = {
        "evidence_count": len(edges),
        "contested": contested(edges),
        "confidence": confidence,
        "valence": round(valence, 6) if confidence < belief.confidence else belief.valence,
    }
    reason = (
        f"{lost} of {belief.evidence_count} pieces of evidence forgotten; "
        f"confidence capped at {cap:.3f} by the {len(edges)} left"
    )
    if belief.contested and not update["contested"]:
        reason += "; no longer contested by the evidence left"
    return belief.model_copy(update=update), reason


async def sleep_beliefs(services: Services, tenant: str, now: datetime) -> BeliefSleepReport:
    """Deep sleep for the tenant's beliefs at `now`: decay, then reassessment (module doc)."""
    now = as_utc(now)
    report = BeliefSleepReport()

    async def decay_journal(before: Belief, after: Belief | None) -> None:
        reason = "no support for 30 days: decayed toward neutral"
        if after is None:
            reason = "no support: decayed to confidence 0 and removed"
        change = _change(before, after, reason, now)
        await _record(services, tenant, change)
        report.changes.append(change)

    decay = await decay_beliefs(services, tenant, now, on_change=decay_journal)
    report.decayed, report.removed = len(decay.decayed), len(decay.removed)
    graph = services.graph
    async with services.locks.get("beliefs", tenant):
        for belief in await list_active_beliefs(graph, tenant):
            edges = await graph.beliefs.evidence(tenant, belief.uid, limit=_EVIDENCE_SCAN)
            if len(edges) >= belief.evidence_count:
                continue  # nothing lost (the common case: no lookups)
            interactions = {
                e.episode_uid: await interaction_index(graph, tenant, e.episode_uid) for e in edges
            }
            found = reassessed(belief, edges, interactions)
            if found is None:
                continue
            after, reason = found
            if not edges or after.confidence <= 0.0:
                change = _change(belief, None, reason + "; removed", now)
                await _record(services, tenant, change)
                await graph.beliefs.delete(tenant, belief.uid)
                report.removed += 1
            else:
                after = after.model_copy(update={"updated_at": now})
                change = _change(belief, after, reason, now)
                await _record(services, tenant, change)
                await graph.beliefs.upsert(after)
                report.reassessed += 1
                report.resolved += int(belief.contested and not after.contested)
            report.changes.append(change)
    return report
