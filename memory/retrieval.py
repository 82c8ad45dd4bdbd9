"""Retrieval: one `retrieve` function driven by a `Recipe` (DESIGN section 5, first version).

For each query pass it runs dense and sparse searches over the recipe's collections
(derivatives, prospective questions), fuses every ranked list with reciprocal-rank fusion
(k = 60), deduplicates by episode, applies the similarity floor to dense cosine similarity,
adds credibility weights, and optionally brings the temporal neighbours of the best candidates.
Candidates carry their provenance: episode uid, thread, creation time, the fragments that
matched. No prompts and no LangGraph here.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal

from memory.recipes import Recipe
from memory.schema import SIGNAL_NAMES, Episode, VectorKind, as_utc
from memory.services import Services
from memory.sparse import encode_query
from memory.stores.base import VectorFilter, VectorHit

Source = Literal["search", "neighbour"]


@dataclass(slots=True)
class Candidate:
    """One episode brought back by retrieval. Higher `score` is better."""

    episode_uid: str
    score: float
    """Fused score in [0, ~1]: normalised RRF plus credibility weights."""
    similarity: float | None
    """Best dense cosine similarity of any of the episode's points to a query (None: neighbour)."""
    created_at: datetime
    thread_id: str
    content: str
    """The episode as stored (user and agent text)."""
    fragments: list[str] = field(default_factory=list)
    """Matched derivative texts, best first."""
    questions: list[str] = field(default_factory=list)
    """Prospective questions that matched, best first."""
    source: Source = "search"
    neighbour_of: str | None = None
    offset: int = 0
    """Position relative to `neighbour_of` on the TEMPORAL_NEXT chain (negative: earlier)."""
    signals: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly copy (datetimes as ISO strings)."""
        out = asdict(self)
        out["created_at"] = self.created_at.isoformat()
        return out


@dataclass(slots=True)
class _Acc:
    rrf: float = 0.0
    similarity: float | None = None
    fragments: dict[str, float] = field(default_factory=dict)
    questions: dict[str, float] = field(default_factory=dict)
    signals: dict[str, float] = field(default_factory=dict)


def rrf_fuse(lists: Sequence[Sequence[VectorHit]], k: int) -> dict[str, float]:
    """Reciprocal-rank fusion of ranked hit lists by hit id: sum of 1 / (k + rank), rank from 1."""
    scores: dict[str, float] = {}
    for hits in lists:
        for rank, hit in enumerate(hits, start=1):
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (k + rank)
    return scores


def _episode_ranking(hits: Sequence[VectorHit]) -> list[VectorHit]:
    """The hits with each episode kept at its first (best) place, keyed by episode uid."""
    seen: set[str] = set()
    out: list[VectorHit] = []
    for hit in hits:
        uid = str(hit.payload.get("episode_uid", ""))
        if uid not in seen:
            seen.add(uid)
            out.append(VectorHit(id=uid, score=hit.score, payload=hit.payload))
    return out


def _num(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _signals(payload: Mapping[str, object]) -> dict[str, float]:
    return {name: _num(payload.get(f"signal_{name}")) for name in SIGNAL_NAMES}


def credibility_bonus(signals: Mapping[str, float], weights: Mapping[str, float] | None) -> float:
    """Sum of weight x signal over the five credibility signals (weights clamped to [0, 0.3])."""
    if not weights:
        return 0.0
    return sum(min(0.3, max(0.0, weights.get(n, 0.0))) * signals.get(n, 0.0) for n in SIGNAL_NAMES)


async def _search_pass(
    services: Services, tenant: str, query: str, recipe: Recipe, limit: int
) -> tuple[list[list[VectorHit]], dict[str, float]]:
    """Run one query's searches; return the ranked lists and dense similarity per point id."""
    vectors = services.vectors
    dense = (await services.embedder.embed_query(query)).tolist() if recipe.dense else None
    sparse = encode_query(query) if recipe.sparse else None
    jobs: list[tuple[str, VectorKind]] = []
    calls = []
    for kind in recipe.kinds:
        if dense is not None:
            jobs.append(("dense", kind))
            calls.append(
                vectors.search(
                    kind, tenant, dense=dense, limit=limit, score_threshold=recipe.similarity_floor
                )
            )
        if sparse is not None and sparse.indices:
            jobs.append(("sparse", kind))
            calls.append(vectors.search(kind, tenant, sparse=sparse, limit=limit))
    results = await asyncio.gather(*calls)
    sims: dict[str, float] = {}
    for (mode, _kind), hits in zip(jobs, results, strict=True):
        if mode == "dense":
            for hit in hits:
                sims[hit.id] = max(sims.get(hit.id, -1.0), hit.score)
    # A purely lexical hit has no measured similarity yet: measure it on its own episodes.
    lexical = {
        str(h.payload.get("episode_uid"))
        for (mode, _), hits in zip(jobs, results, strict=True)
        if mode == "sparse"
        for h in hits
        if h.id not in sims
    }
    if lexical and dense is not None:
        for kind in recipe.kinds:
            hits = await vectors.search(
                kind,
                tenant,
                dense=dense,
                limit=limit * 2,
                filter=VectorFilter(episode_uids=sorted(lexical)),
                score_threshold=recipe.similarity_floor,
            )
            for hit in hits:
                sims[hit.id] = max(sims.get(hit.id, -1.0), hit.score)
    return list(results), sims


async def retrieve(
    services: Services,
    tenant: str,
    query: str | Sequence[str],
    recipe: Recipe,
    now: datetime,
    *,
    signal_weights: Mapping[str, float] | None = None,
) -> list[Candidate]:
    """Search the tenant's memory for `query` (one string, or one per pass); best first.

    Returns at most `min(overfetch * n_results, max_candidates)` search candidates plus their
    temporal neighbours when the recipe asks. Only episodes with a point at or above the
    similarity floor survive. `now` bounds the search: nothing created after it is returned.
    """
    queries = [query] if isinstance(query, str) else list(query)
    queries = [q.strip() for q in queries if q and q.strip()][: recipe.max_passes]
    if not queries:
        return []
    limit = max(1, math.ceil(recipe.n_results * recipe.overfetch))
    passes = await asyncio.gather(
        *(_search_pass(services, tenant, q, recipe, limit) for q in queries)
    )
    lists = [hits for ranked, _ in passes for hits in ranked]
    sims: dict[str, float] = {}
    for _, s in passes:
        for pid, value in s.items():
            sims[pid] = max(sims.get(pid, -1.0), value)
    # Fusion is by episode: in each list an episode ranks at its best point, so that many
    # fragments of one episode count once (dedup) and agreeing lists add up (RRF).
    fused = rrf_fuse([_episode_ranking(hits) for hits in lists], recipe.rrf_k)
    # Normalise by first place in every list that found anything, so scores read as 0..1.
    best_possible = max(1, sum(1 for hits in lists if hits)) / (recipe.rrf_k + 1)
    point_scores = rrf_fuse(lists, recipe.rrf_k)

    by_episode: dict[str, _Acc] = {}
    for hits in lists:
        for hit in hits:
            payload = hit.payload
            uid = str(payload.get("episode_uid", ""))
            acc = by_episode.setdefault(
                uid, _Acc(rrf=fused.get(uid, 0.0), signals=_signals(payload))
            )
            if hit.id in sims:
                acc.similarity = max(acc.similarity or -1.0, sims[hit.id])
            score = point_scores.get(hit.id, 0.0)
            text = str(payload.get("text", ""))
            if "derivative_text" in payload:
                acc.questions[text] = max(acc.questions.get(text, 0.0), score)
                text = str(payload["derivative_text"])
            acc.fragments[text] = max(acc.fragments.get(text, 0.0), score)

    kept = {
        uid: acc
        for uid, acc in by_episode.items()
        if uid and acc.similarity is not None and acc.similarity >= recipe.similarity_floor
    }
    ranked = sorted(
        kept.items(),
        key=lambda kv: (
            -(kv[1].rrf / best_possible + credibility_bonus(kv[1].signals, signal_weights)),
            kv[0],
        ),
    )[: min(limit, recipe.max_candidates)]
    episodes = {
        e.uid: e for e in await services.graph.get_episodes(tenant, [uid for uid, _ in ranked])
    }
    cutoff = as_utc(now)
    out: list[Candidate] = []
    for uid, acc in ranked:
        episode = episodes.get(uid)
        if episode is None or episode.archived or as_utc(episode.created_at) > cutoff:
            continue  # vectors without a graph node: `mneme doctor` reports them
        out.append(
            Candidate(
                episode_uid=uid,
                score=acc.rrf / best_possible + credibility_bonus(acc.signals, signal_weights),
                similarity=acc.similarity,
                created_at=as_utc(episode.created_at),
                thread_id=episode.thread_id,
                content=episode.content,
                fragments=[t for t, _ in sorted(acc.fragments.items(), key=lambda kv: -kv[1])],
                questions=[t for t, _ in sorted(acc.questions.items(), key=lambda kv: -kv[1])],
                signals=acc.signals,
            )
        )
    if recipe.neighbours > 0:
        out += await _neighbours(services, tenant, out, recipe, cutoff)
    return out


async def _neighbours(
    services: Services, tenant: str, seeds: list[Candidate], recipe: Recipe, cutoff: datetime
) -> list[Candidate]:
    """The ±`recipe.neighbours` episodes around the best seeds, scored below their seed."""
    present = {c.episode_uid for c in seeds}
    top = seeds[: recipe.neighbour_seeds]
    found = await asyncio.gather(
        *(services.graph.temporal_neighbours(tenant, c.episode_uid, recipe.neighbours) for c in top)
    )
    out: list[Candidate] = []
    for seed, neighbours in zip(top, found, strict=True):
        for n in neighbours:
            episode: Episode = n.episode
            if episode.uid in present or episode.archived or as_utc(episode.created_at) > cutoff:
                continue
            present.add(episode.uid)
            out.append(
                Candidate(
                    episode_uid=episode.uid,
                    score=seed.score * 0.5 / abs(n.offset),
                    similarity=None,
                    created_at=as_utc(episode.created_at),
                    thread_id=episode.thread_id,
                    content=episode.content,
                    source="neighbour",
                    neighbour_of=seed.episode_uid,
                    offset=n.offset,
                    signals=episode.ess.signals() if episode.ess else {},
                )
            )
    return out
