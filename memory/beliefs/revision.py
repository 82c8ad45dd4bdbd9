"""Belief revision by reflection: bounded patches and new beliefs, each with provenance.

Reflection (docs/design.md section 6) may reword a belief, move its valence and confidence, mark it
contested, or start a new belief. Every change here is bounded, so that reflection consolidates
what evidence already did rather than overriding it, and lands with provenance: the episodes
the patch cites get SUPPORTS_BELIEF / CONTRADICTS_BELIEF edges (idempotent per episode and
belief, like all evidence). No LLM, no prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from memory.beliefs.evidence import clamp, is_internal
from memory.schema import Belief, EvidenceKind, as_utc, topic_slug, utcnow
from memory.stores.base import GraphStore

if TYPE_CHECKING:
    from memory.services import Services

MAX_PATCH_STEP = 0.2
"""A reflection moves a belief's valence or confidence by at most this."""
MAX_NEW_CONFIDENCE = 0.5
"""A belief started by reflection (synthesis, not fresh evidence) is held at most this firmly."""
MAX_NEW_VALENCE = 0.6
"""... and at most this strongly either way."""


@dataclass(frozen=True, slots=True)
class Citation:
    """An episode a patch rests on, and how it bears on the belief's statement."""

    episode_uid: str
    kind: EvidenceKind
    strength: float


@dataclass(slots=True)
class Revision:
    """One applied patch or new belief: before (None for new), after, and the edges written."""

    topic: str
    before: Belief | None
    after: Belief
    cited: list[str] = field(default_factory=list)
    """Episode uids the change rests on (each has a provenance edge to the belief)."""
    written: int = 0
    """How many of those edges this change wrote (the others existed already)."""
    reasoning: str = ""


def bounded_step(current: float, target: float | None, low: float, high: float) -> float:
    """Move from `current` toward `target` by at most MAX_PATCH_STEP, within [low, high]."""
    if target is None:
        return current
    step = max(-MAX_PATCH_STEP, min(MAX_PATCH_STEP, float(target) - current))
    return round(clamp(current + step, low, high), 6)


async def _cite(
    graph: GraphStore, belief: Belief, citations: Sequence[Citation], reasoning: str
) -> tuple[list[str], int]:
    """Provenance edges for the citations of existing episodes: (cited uids, edges written)."""
    found = {
        e.uid
        for e in await graph.episodes.get_many(belief.tenant, [c.episode_uid for c in citations])
    }
    cited, written = [], 0
    for c in citations:
        if c.episode_uid not in found:
            continue
        note = f"reflection: {reasoning}".strip()[:300]
        written += await graph.beliefs.add_evidence(
            belief.tenant, c.episode_uid, belief.uid, c.kind, clamp(c.strength), note
        )
        cited.append(c.episode_uid)
    return cited, written


async def patch_belief(
    services: Services,
    tenant: str,
    topic: str,
    *,
    statement: str | None = None,
    valence: float | None = None,
    confidence: float | None = None,
    contested: bool | None = None,
    citations: Sequence[Citation] = (),
    reasoning: str = "",
    at: datetime | None = None,
) -> Revision | None:
    """Apply a bounded patch to the belief on `topic` and cite its episodes; None if no such
    belief (or a reserved topic)."""
    slug = topic_slug(topic)
    if is_internal(topic):
        return None
    graph = services.graph
    async with services.locks.get("beliefs", tenant):
        before = await graph.beliefs.get_by_topic(tenant, slug)
        if before is None:
            return None
        cited, written = await _cite(graph, before, citations, reasoning)
        current = await graph.beliefs.get(tenant, before.uid) or before
        update: dict[str, object] = {
            "valence": bounded_step(current.valence, valence, -1.0, 1.0),
            "confidence": bounded_step(current.confidence, confidence, 0.0, 1.0),
            "updated_at": as_utc(at) if at else utcnow(),
        }
        if statement and statement.strip():
            update["statement"] = " ".join(statement.split())[:500]
        if contested is not None:
            update["contested"] = contested
        after = await graph.beliefs.upsert(current.model_copy(update=update))
    return Revision(slug, before, after, cited, written, reasoning)


async def new_belief(
    services: Services,
    tenant: str,
    topic: str,
    statement: str,
    *,
    valence: float,
    confidence: float,
    citations: Sequence[Citation] = (),
    reasoning: str = "",
    at: datetime | None = None,
) -> Revision | None:
    """Start a belief that reflection synthesised (bounded), citing its episodes; None when the
    topic already has a belief, is reserved, or the statement is empty."""
    slug = topic_slug(topic)
    if is_internal(topic) or not statement.strip():
        return None
    graph = services.graph
    async with services.locks.get("beliefs", tenant):
        if await graph.beliefs.get_by_topic(tenant, slug) is not None:
            return None
        created = await graph.beliefs.upsert(
            Belief(
                tenant=tenant,
                topic=slug,
                statement=" ".join(statement.split())[:500],
                valence=round(clamp(valence, -MAX_NEW_VALENCE, MAX_NEW_VALENCE), 6),
                confidence=round(clamp(confidence, 0.0, MAX_NEW_CONFIDENCE), 6),
                updated_at=as_utc(at) if at else utcnow(),
            )
        )
        cited, written = await _cite(graph, created, citations, reasoning)
        after = await graph.beliefs.get(tenant, created.uid) or created
    return Revision(slug, None, after, cited, written, reasoning)
