"""Reading the beliefs: the ones relevant to a text (RRF of embedding similarity and strength:
`relevant_beliefs`, what reflection sees), and each with the evidence behind it (`belief_views`,
what the agent shows for a BELIEF_QUERY turn). Reads only; the moves live in
`memory.beliefs.evidence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from memory.beliefs.evidence import belief_strength, list_active_beliefs
from memory.schema import (
    Belief,
    EvidenceKind,
)
from memory.stores.base import GraphStore

if TYPE_CHECKING:
    from memory.services import Services


def belief_text(belief: Belief) -> str:
    """What a belief is about, for embedding: topic words and statement."""
    return f"{belief.topic.replace('-', ' ')}: {belief.statement}"


def rrf_rank(
    beliefs: Sequence[Belief], similarity: Mapping[str, float], *, k: int = 60
) -> list[tuple[Belief, float]]:
    """Beliefs fused by reciprocal rank of similarity (to the query) and of strength, best first.

    Ties break by topic so the order is deterministic.
    """
    by_sim = sorted(beliefs, key=lambda b: (-similarity.get(b.uid, 0.0), b.topic))
    by_strength = sorted(
        beliefs, key=lambda b: (-belief_strength(b.confidence, b.evidence_count), b.topic)
    )
    score: dict[str, float] = {}
    for ranking in (by_sim, by_strength):
        for rank, b in enumerate(ranking, start=1):
            score[b.uid] = score.get(b.uid, 0.0) + 1.0 / (k + rank)
    ranked = sorted(beliefs, key=lambda b: (-score[b.uid], b.topic))
    return [(b, score[b.uid]) for b in ranked]


async def similarities(
    services: Services, query: str, beliefs: Sequence[Belief]
) -> dict[str, float]:
    """Cosine similarity of each belief (topic + statement) to `query`, by belief uid."""
    if not beliefs or not query.strip():
        return {b.uid: 0.0 for b in beliefs}
    rows = await services.embedder.embed_documents([query, *(belief_text(b) for b in beliefs)])
    sims = np.asarray(rows[1:] @ rows[0], dtype=float)
    return {b.uid: float(s) for b, s in zip(beliefs, sims, strict=True)}


async def relevant_beliefs(
    services: Services, tenant: str, query: str, limit: int = 15
) -> list[Belief]:
    """The `limit` beliefs most relevant to `query` by RRF of similarity and strength."""
    beliefs = await list_active_beliefs(services.graph, tenant)
    sims = await similarities(services, query, beliefs)
    return [b for b, _ in rrf_rank(beliefs, sims)[:limit]]


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """One provenance edge with its episode, for "I think X because of what you showed me"."""

    kind: EvidenceKind
    strength: float
    reasoning: str
    episode_uid: str
    created_at: datetime
    """When the episode happened."""
    user_text: str


@dataclass(frozen=True, slots=True)
class BeliefView:
    """A belief with its strength, its relevance to a query and its evidence, strongest first."""

    belief: Belief
    strength: float
    similarity: float
    evidence: list[EvidenceItem] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly copy for graph state."""
        return {
            **self.belief.model_dump(mode="json"),
            "strength": round(self.strength, 4),
            "similarity": round(self.similarity, 4),
            "evidence": [
                {
                    "kind": e.kind.value,
                    "strength": e.strength,
                    "reasoning": e.reasoning,
                    "episode_uid": e.episode_uid,
                    "created_at": e.created_at.isoformat(),
                    "user_text": e.user_text,
                }
                for e in self.evidence
            ],
        }


async def evidence_items(
    graph: GraphStore, tenant: str, belief_uid: str, limit: int = 5
) -> list[EvidenceItem]:
    """A belief's evidence episodes ranked by edge strength (strongest first)."""
    edges = await graph.beliefs.evidence(tenant, belief_uid, limit=limit)
    episodes = {
        e.uid: e for e in await graph.episodes.get_many(tenant, [e.episode_uid for e in edges])
    }
    out = []
    for edge in edges:
        episode = episodes.get(edge.episode_uid)
        out.append(
            EvidenceItem(
                kind=edge.kind,
                strength=edge.strength,
                reasoning=edge.reasoning,
                episode_uid=edge.episode_uid,
                created_at=episode.created_at if episode else edge.created_at,
                user_text=episode.user_text if episode else "",
            )
        )
    return out


async def belief_views(
    services: Services,
    tenant: str,
    query: str,
    *,
    limit: int = 3,
    evidence: int = 5,
    min_similarity: float = 0.3,
) -> list[BeliefView]:
    """BELIEF_QUERY retrieval: the beliefs that bear on `query` (similarity >= the floor), fused
    with strength by RRF, each with its evidence episodes ranked by edge strength."""
    beliefs = await list_active_beliefs(services.graph, tenant)
    sims = await similarities(services, query, beliefs)
    near = [b for b in beliefs if sims[b.uid] >= min_similarity]
    out = []
    for belief, _ in rrf_rank(near, sims)[:limit]:
        out.append(
            BeliefView(
                belief=belief,
                strength=belief_strength(belief.confidence, belief.evidence_count),
                similarity=sims[belief.uid],
                evidence=await evidence_items(services.graph, tenant, belief.uid, evidence),
            )
        )
    return out
