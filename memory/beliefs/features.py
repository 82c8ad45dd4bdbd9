"""Semantic features of the agent's personality: the sponge's second store (DESIGN section 6).

A feature is a persistent signal in one of four categories (values and opinions, interests,
communication style, expertise) that the agent takes from conversations whose evidence passed
the ESS gate. `absorb` writes what one episode proposes: a proposal within `SAME_FEATURE` cosine
of an existing feature of its category updates that feature (newer wording, one more piece of
evidence, a little stronger); otherwise it is a new feature. A feature is deleted only on an
explicit counter-claim (`absorb(counters=...)`), never because a topic went quiet: nothing here
decays. `search_features` is what the router's `search_features` asks for.

Idempotent: feature uids are uuid5(tenant, category, normalised text) and the evidence count
moves once per (episode, feature). No prompts here; the proposals come from the belief
assessment call (`tasks.belief_assessment`), offline from its heuristic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory.schema import Episode, Feature, FeatureCategory, as_utc, normalise_text, stable_uid
from memory.stores.base import VectorPoint
from memory.text.sparse import encode_document

if TYPE_CHECKING:
    from memory.services import Services

SAME_FEATURE = 0.82
"""A proposal closer than this to a feature of its category updates that feature."""
STRENGTH_STEP = 0.1
"""How much stronger a feature gets with each new piece of evidence (capped at 1)."""
SEARCH_MIN = 0.3


@dataclass(frozen=True, slots=True)
class Proposal:
    """A feature an episode shows."""

    category: FeatureCategory
    text: str
    strength: float = 0.5


@dataclass(slots=True)
class Absorbed:
    """What `absorb` did."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, list[str]]:
        """JSON-friendly uids for the bookkeeping state."""
        return {"created": self.created, "updated": self.updated, "deleted": self.deleted}


def feature_uid(tenant: str, category: FeatureCategory, text: str) -> str:
    """The deterministic uid of a new feature."""
    return stable_uid(tenant, "feature", category.value, normalise_text(text))


def _point(feature: Feature, dense: list[float], episode_uid: str) -> VectorPoint:
    return VectorPoint(
        id=stable_uid(feature.tenant, "feature-point", feature.uid),
        dense=dense,
        sparse=encode_document(feature.text),
        payload={
            "tenant": feature.tenant,
            "episode_uid": episode_uid,
            "text": feature.text,
            "feature_uid": feature.uid,
            "category": feature.category.value,
            "created_at": as_utc(feature.created_at).isoformat(),
            "archived": False,
        },
    )


async def absorb(
    services: Services,
    episode: Episode,
    proposals: Sequence[Proposal],
    counters: Sequence[str] = (),
) -> Absorbed:
    """Create or update the features an episode shows and delete those it explicitly refutes
    (`counters`: feature uids); see the module docstring."""
    out = Absorbed()
    graph, tenant = services.graph, episode.tenant
    for uid in counters:
        if await graph.features.delete(tenant, uid):
            await services.vectors.delete_points(
                "features", tenant, [stable_uid(tenant, "feature-point", uid)]
            )
            out.deleted.append(uid)
    props = [p for p in proposals if p.text.strip()]
    if not props:
        return out
    vectors = await services.embedder.embed_documents([p.text for p in props])
    at = as_utc(episode.created_at)
    points = []
    for p, vec in zip(props, vectors, strict=True):
        hits = await services.vectors.search(
            "features", tenant, dense=vec.tolist(), limit=5, score_threshold=SAME_FEATURE
        )
        same = [
            f
            for f in await graph.features.get_many(
                tenant, [str(h.payload.get("feature_uid", "")) for h in hits]
            )
            if f.category == p.category
        ]
        if same:
            old = same[0]
            if episode.uid in await graph.features.sources(tenant, old.uid):
                continue  # this episode was counted already (a re-run)
            feature = old.model_copy(
                update={
                    "text": p.text if at >= as_utc(old.updated_at) else old.text,
                    "evidence_count": old.evidence_count + 1,
                    "strength": min(1.0, max(old.strength, p.strength) + STRENGTH_STEP),
                    "updated_at": max(at, as_utc(old.updated_at)),
                }
            )
            out.updated.append(old.uid)
        else:
            uid = feature_uid(tenant, p.category, p.text)
            existing = await graph.features.get(tenant, uid)
            if existing is not None:  # a re-run of the episode that created it
                await graph.features.upsert(existing, episode.uid)
                continue
            feature = Feature(
                uid=uid,
                tenant=tenant,
                category=p.category,
                text=p.text,
                strength=p.strength,
                evidence_count=1,
                created_at=at,
                updated_at=at,
            )
            out.created.append(uid)
        stored = await graph.features.upsert(feature, episode.uid)
        points.append(_point(stored, vec.tolist(), episode.uid))
    if points:
        await services.vectors.upsert("features", points)
    return out


async def related_features(
    services: Services, tenant: str, text: str, limit: int = 5, floor: float = SEARCH_MIN
) -> list[tuple[Feature, float]]:
    """The tenant's features most similar to `text` (cosine >= `floor`), best first."""
    if not text.strip():
        return []
    query = (await services.embedder.embed_query(text)).tolist()
    hits = await services.vectors.search(
        "features", tenant, dense=query, limit=limit, score_threshold=floor
    )
    sims = {str(h.payload.get("feature_uid", "")): h.score for h in hits}
    found = await services.graph.features.get_many(tenant, list(sims))
    return sorted(((f, sims[f.uid]) for f in found), key=lambda fs: -fs[1])


async def search_features(
    services: Services, tenant: str, text: str, limit: int = 5
) -> list[dict[str, object]]:
    """What the router's `search_features` brings to the reply: the most related features."""
    return [
        {
            "uid": f.uid,
            "category": f.category.value,
            "text": f.text,
            "strength": f.strength,
            "evidence_count": f.evidence_count,
            "similarity": round(sim, 4),
        }
        for f, sim in await related_features(services, tenant, text, limit)
    ]


async def index_features(services: Services, tenant: str) -> int:
    """(Re-)embed every feature of the tenant into the `features` collection (`mneme reindex`)."""
    features = await services.graph.features.list(tenant)
    if not features:
        return 0
    vectors = await services.embedder.embed_documents([f.text for f in features])
    points = []
    for f, vec in zip(features, vectors, strict=True):
        sources = await services.graph.features.sources(tenant, f.uid)
        points.append(_point(f, vec.tolist(), sources[0] if sources else f.uid))
    await services.vectors.upsert("features", points)
    return len(points)
