"""Belief math and belief provenance (docs/design.md section 6): no LLM, no prompts.

What lives here:

- the bounded update rule: effective magnitude = base x 1/(confidence + 1), halved during the
  first 10 interactions of a tenant; valence moves by at most that magnitude, confidence rises
  toward 1 when the evidence agrees with the held view and falls when it does not;
- `apply_evidence`: one provenance edge (SUPPORTS_BELIEF / CONTRADICTS_BELIEF) and the updated
  belief, idempotent per (episode, belief);
- strength = confidence x (1 + ln(1 + evidence_count) / ln 21) (the RRF selection of the beliefs
  most relevant to a text, and the beliefs with their evidence, are read in
  `memory.beliefs.views`);
- decay toward neutral for beliefs without recent support, removal at confidence 0;
- the snapshot acceptance rule (reject < 30 characters or < 60% of the previous length).

Conventions. A belief's `statement` is a proposition; `valence` is the agent's stance on it (+1:
holds it, -1: rejects it). An edge's kind says how the episode bears on the statement as written:
SUPPORTS_BELIEF is evidence for it, CONTRADICTS_BELIEF evidence against it. Topics are slugs
(`schema.topic_slug`); topics starting with `~` are reserved for internal records and are never
shown, decayed or selected.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memory.schema import (
    ESS,
    MANIPULATIVE_TYPES,
    Belief,
    Evidence,
    EvidenceKind,
    PersonalitySnapshot,
    ReasoningType,
    as_utc,
    topic_slug,
    utcnow,
)
from memory.stores.base import GraphStore, NotFound

if TYPE_CHECKING:
    from memory.services import Services

# --------------------------------------------------------------------------- the rule

BASE_RATE = 0.2
"""Largest valence move one piece of evidence can make (strength 1, quality 1, confidence 0)."""
BOOTSTRAP_INTERACTIONS = 10
"""The first this-many interactions of a tenant are dampened ..."""
BOOTSTRAP_FACTOR = 0.5
"""... by this factor: first impressions move views half as much."""
ESS_THRESHOLD = 0.45
"""An ESS score at least this (and a non-manipulative, arguing reasoning type) may move beliefs."""
CONTESTED_RATIO = 0.3
"""A belief is contested when the weaker side's total edge strength is >= this x the stronger's."""
INTERNAL_PREFIX = "~"
"""Topics starting with this hold internal records (e.g. the sponge state), not views."""


def clamp(value: float, low: float = 0.0, high: float = 1.0) -> float:
    """`value` bounded to [low, high]."""
    return min(high, max(low, float(value)))


def resistance(confidence: float) -> float:
    """How much a belief resists change: 1 / (confidence + 1), from 1 (none held) to 0.5."""
    return 1.0 / (clamp(confidence) + 1.0)


def is_bootstrap(interaction_index: int | None) -> bool:
    """True during the first `BOOTSTRAP_INTERACTIONS` interactions (index counted from 1)."""
    return interaction_index is not None and interaction_index <= BOOTSTRAP_INTERACTIONS


def effective_magnitude(
    strength: float,
    confidence: float,
    *,
    quality: float = 1.0,
    interaction_index: int | None = None,
) -> float:
    """The valence move one piece of evidence may make on a belief held with `confidence`.

    base = BASE_RATE x strength x quality (quality: the message's ESS score); magnitude = base x
    1/(confidence + 1), halved during the bootstrap interactions.
    """
    base = BASE_RATE * clamp(strength) * clamp(quality)
    magnitude = base * resistance(confidence)
    if is_bootstrap(interaction_index):
        magnitude *= BOOTSTRAP_FACTOR
    return magnitude


@dataclass(frozen=True, slots=True)
class Move:
    """A belief's valence and confidence after one piece of evidence."""

    valence: float
    confidence: float
    magnitude: float
    agrees: bool
    """True when the evidence pushes the way the agent already leans (or it had no view)."""


def move(valence: float, confidence: float, kind: EvidenceKind, magnitude: float) -> Move:
    """Apply one bounded move: valence by +/- magnitude toward the evidence, confidence up if it
    agrees with the held view (diminishing toward 1), down by the magnitude if it does not."""
    push = magnitude if kind is EvidenceKind.SUPPORTS else -magnitude
    agrees = abs(valence) < 1e-9 or (valence > 0) == (push > 0)
    new_valence = clamp(valence + push, -1.0, 1.0)
    if agrees:
        new_confidence = clamp(confidence + magnitude * (1.0 - confidence))
    else:
        new_confidence = clamp(confidence - magnitude)
    return Move(
        valence=round(new_valence, 6),
        confidence=round(new_confidence, 6),
        magnitude=magnitude,
        agrees=agrees,
    )


def belief_strength(confidence: float, evidence_count: int) -> float:
    """The strength, confidence x (1 + ln(1 + evidence_count) / ln 21): 20 pieces of evidence double it."""
    return clamp(confidence) * (1.0 + math.log1p(max(0, evidence_count)) / math.log(21))


def recommends_update(ess: ESS | None) -> bool:
    """Whether a message with this ESS may move beliefs: strong enough, arguing, not manipulative.

    Decided from the stored ESS alone, so that a sweep re-running bookkeeping decides the same.
    """
    if ess is None:
        return False
    if ess.reasoning_type in MANIPULATIVE_TYPES or ess.reasoning_type is ReasoningType.NO_ARGUMENT:
        return False
    return ess.score >= ESS_THRESHOLD


def is_internal(topic: str) -> bool:
    """True for reserved topics that hold internal records rather than views."""
    return topic.startswith(INTERNAL_PREFIX)


def as_kind(direction: EvidenceKind | str) -> EvidenceKind:
    """`supports` / `contradicts` (or an `EvidenceKind`) as an edge kind."""
    if isinstance(direction, EvidenceKind):
        return direction
    text = direction.strip().lower()
    if text in ("supports", "support", "for", "supports_belief", "+"):
        return EvidenceKind.SUPPORTS
    if text in ("contradicts", "contradict", "against", "contradicts_belief", "-"):
        return EvidenceKind.CONTRADICTS
    raise ValueError(f"direction {direction!r} is neither 'supports' nor 'contradicts'")


# --------------------------------------------------------------------------- provenance


async def interaction_index(graph: GraphStore, tenant: str, episode_uid: str) -> int:
    """1-based position of the episode in the tenant's history, exact up to the bootstrap window
    (larger positions come back as `BOOTSTRAP_INTERACTIONS + 1`)."""
    before = await graph.episodes.neighbours(tenant, episode_uid, BOOTSTRAP_INTERACTIONS)
    return 1 + sum(1 for n in before if n.offset < 0)


@dataclass(frozen=True, slots=True)
class EvidenceOutcome:
    """What `apply_evidence` did."""

    applied: bool
    """False when this episode was already evidence for this belief (nothing changed)."""
    created: bool
    """True when the belief did not exist and was created by this evidence."""
    kind: EvidenceKind
    before: Belief
    after: Belief
    magnitude: float = 0.0

    @property
    def shift(self) -> float:
        """The belief's change: |delta valence| + |delta confidence|, halved."""
        dv = abs(self.after.valence - self.before.valence)
        dc = abs(self.after.confidence - self.before.confidence)
        return (dv + dc) / 2.0


def contested(evidence: Sequence[Evidence]) -> bool:
    """Both sides have evidence and the weaker side weighs >= CONTESTED_RATIO of the stronger."""
    pro = sum(e.strength for e in evidence if e.kind is EvidenceKind.SUPPORTS)
    con = sum(e.strength for e in evidence if e.kind is EvidenceKind.CONTRADICTS)
    if pro <= 0 or con <= 0:
        return False
    return min(pro, con) >= CONTESTED_RATIO * max(pro, con)


async def apply_evidence(
    services: Services,
    tenant: str,
    episode_uid: str,
    topic: str,
    direction: EvidenceKind | str,
    strength: float,
    *,
    statement: str | None = None,
    quality: float = 1.0,
    reasoning: str = "",
    interaction: int | None = None,
    at: datetime | None = None,
) -> EvidenceOutcome:
    """Write the provenance edge from an episode to the belief on `topic` and move the belief.

    The belief is created (neutral, with `statement` or the topic as its statement) when the
    tenant has none on this topic. `strength` (0-1) is how strongly the episode bears on the
    statement, `quality` the message's ESS score; the edge's strength is their product.
    `interaction` is the episode's 1-based position in the tenant's history (looked up when not
    given) for the bootstrap dampening. Idempotent per (episode, belief): a second call writes
    nothing and moves nothing. Raises `NotFound` when the episode does not exist.
    """
    graph = services.graph
    kind = as_kind(direction)
    slug = topic_slug(topic)
    if is_internal(topic) or is_internal(slug):
        raise ValueError(f"topic {topic!r} is reserved")
    when = as_utc(at) if at else utcnow()
    async with services.locks.get("beliefs", tenant):
        if await graph.episodes.get(tenant, episode_uid) is None:
            raise NotFound(f"episode {episode_uid!r} does not exist for tenant {tenant!r}")
        existing = await graph.beliefs.get_by_topic(tenant, slug)
        created = existing is None
        if existing is None:
            text = (statement or topic).strip() or slug
            existing = await graph.beliefs.upsert(
                Belief(tenant=tenant, topic=slug, statement=text, updated_at=when)
            )
        edge_strength = round(clamp(strength) * clamp(quality), 6)
        written = await graph.beliefs.add_evidence(
            tenant, episode_uid, existing.uid, kind, edge_strength, reasoning
        )
        if not written:
            return EvidenceOutcome(False, False, kind, existing, existing)
        if interaction is None:
            interaction = await interaction_index(graph, tenant, episode_uid)
        current = await graph.beliefs.get(tenant, existing.uid) or existing
        magnitude = effective_magnitude(
            strength, current.confidence, quality=quality, interaction_index=interaction
        )
        step = move(current.valence, current.confidence, kind, magnitude)
        # `contested` is left to reflection and the contradiction check: a judgement on the
        # whole body of evidence, not on one more edge.
        after = await graph.beliefs.upsert(
            current.model_copy(
                update={"valence": step.valence, "confidence": step.confidence, "updated_at": when}
            )
        )
    return EvidenceOutcome(True, created, kind, existing, after, magnitude)


# --------------------------------------------------------------------------- reading beliefs


async def list_active_beliefs(graph: GraphStore, tenant: str) -> list[Belief]:
    """The tenant's views, by topic (internal records left out)."""
    return [b for b in await graph.beliefs.list(tenant) if not is_internal(b.topic)]


# --------------------------------------------------------------------------- decay

STALE_AFTER = timedelta(days=30)
"""A belief with no evidence for this long starts decaying."""
CONFIDENCE_DECAY_PER_DAY = 0.01
"""Confidence lost per day of staleness (a full-confidence belief is gone ~100 days later)."""
VALENCE_HALF_LIFE_DAYS = 90.0
"""Valence halves toward neutral every this-many days of staleness."""


@dataclass(slots=True)
class DecayReport:
    """What a decay pass did, by topic."""

    decayed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


async def last_support(graph: GraphStore, belief: Belief) -> datetime:
    """When the belief last got evidence (its newest evidence episode), else its update time."""
    edges = await graph.beliefs.evidence(belief.tenant, belief.uid, limit=1000)
    if not edges:
        return as_utc(belief.updated_at)
    episodes = await graph.episodes.get_many(belief.tenant, [e.episode_uid for e in edges])
    times = [e.created_at for e in episodes] or [e.created_at for e in edges]
    return as_utc(max(times))


def decayed(valence: float, confidence: float, days: float) -> tuple[float, float]:
    """Valence and confidence after `days` of staleness."""
    v = valence * 0.5 ** (days / VALENCE_HALF_LIFE_DAYS)
    c = confidence - CONFIDENCE_DECAY_PER_DAY * days
    return round(v, 6), round(max(0.0, c), 6)


async def decay_beliefs(
    services: Services,
    tenant: str,
    now: datetime | None = None,
    *,
    on_change: Callable[[Belief, Belief | None], Awaitable[None]] | None = None,
) -> DecayReport:
    """Decay beliefs without recent support toward neutral; remove those reaching confidence 0.

    Decay is measured in days since the later of (last support + STALE_AFTER) and the belief's
    last update, so running it often or rarely gives the same result. `on_change(before,
    after)` is awaited before each change is written (`after` None: removed), so a caller can
    record it first (deep sleep's belief journal).
    """
    graph = services.graph
    now = as_utc(now) if now else utcnow()
    report = DecayReport()
    async with services.locks.get("beliefs", tenant):
        for belief in await list_active_beliefs(graph, tenant):
            start = max(await last_support(graph, belief) + STALE_AFTER, as_utc(belief.updated_at))
            days = (now - start).total_seconds() / 86400.0
            if days <= 0:
                continue
            valence, confidence = decayed(belief.valence, belief.confidence, days)
            if confidence <= 0.0:
                if on_change:
                    await on_change(belief, None)
                await graph.beliefs.delete(tenant, belief.uid)
                report.removed.append(belief.topic)
                continue
            after = belief.model_copy(
                update={"valence": valence, "confidence": confidence, "updated_at": now}
            )
            if on_change:
                await on_change(belief, after)
            await graph.beliefs.upsert(after)
            report.decayed.append(belief.topic)
    return report


# --------------------------------------------------------------------------- snapshots

MIN_SNAPSHOT_CHARS = 30
MIN_KEEP_RATIO = 0.6


def snapshot_rejection(text: str, previous: str | None) -> str | None:
    """Why a proposed snapshot must be rejected, or None when it is acceptable."""
    new_len = len(text.strip())
    if new_len < MIN_SNAPSHOT_CHARS:
        return f"too short: {new_len} characters (at least {MIN_SNAPSHOT_CHARS})"
    if previous:
        old_len = len(previous.strip())
        if new_len < MIN_KEEP_RATIO * old_len:
            return (
                f"keeps too little: {new_len} characters is under {MIN_KEEP_RATIO:.0%} of the "
                f"previous {old_len}"
            )
    return None


@dataclass(frozen=True, slots=True)
class SnapshotOutcome:
    """Whether a proposed snapshot became the current version, and why not."""

    accepted: bool
    current: PersonalitySnapshot | None
    reason: str | None = None


async def propose_snapshot(
    graph: GraphStore, tenant: str, text: str, at: datetime | None = None
) -> SnapshotOutcome:
    """Store `text` as a new snapshot version unless the acceptance rule rejects it.

    Every accepted snapshot is a new version linked to the previous one; a rejected one leaves
    the previous version current. Identical text is not stored again.
    """
    previous = await graph.snapshots.current(tenant)
    reason = snapshot_rejection(text, previous.text if previous else None)
    if reason is not None:
        return SnapshotOutcome(False, previous, reason)
    if previous is not None and previous.text.strip() == text.strip():
        return SnapshotOutcome(False, previous, "unchanged")
    snapshot = await graph.snapshots.add(tenant, text.strip(), as_utc(at) if at else utcnow())
    return SnapshotOutcome(True, snapshot)
