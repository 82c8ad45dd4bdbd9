"""One pass of retrieval: one query through the steps, to a relevance per episode.

    probe       embed the query (while the associative path reads the graph), its sparse vector
    requests    every search of the pass (`memory.retrieval.requests`), in one call
    accumulate  hits to episodes, max-sim per list (`memory.retrieval.accumulate`)
    fuse        the lists into one relevance, the dense weight fitted to the query
                (`memory.retrieval.fusion`)
    boosts      smoothing along the thread, graph proximity, the time window
                (`memory.retrieval.boosts`)

Passes (sub-queries of one retrieval) run side by side and combine by each episode's best
relevance (`combined`), in the units the facts are scored in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory.retrieval.accumulate import Accumulated, Found, accumulate, merged
from memory.retrieval.associative import Association, associate
from memory.retrieval.boosts import smoothed, smoothing_on, with_proximity, within_window
from memory.retrieval.facts import FactHits
from memory.retrieval.fusion import dense_gain, fuse, lexical_fit
from memory.retrieval.recipes import Recipe
from memory.retrieval.requests import Probe, pass_requests, session_turns
from memory.stores.base import VectorHit
from memory.text.sparse import encode_query, tokenize
from memory.text.timeparse import Resolution

if TYPE_CHECKING:
    from memory.services import Services

__all__ = ["Combined", "Pass", "combined", "fused", "run_pass"]


@dataclass(slots=True)
class Pass:
    """What one pass found: each episode's relevance, what matched of it, the entities the
    query named and the facts it hit."""

    relevance: dict[str, float]
    episodes: dict[str, Found]
    association: Association
    facts: FactHits = field(default_factory=FactHits)


async def run_pass(
    services: Services, tenant: str, query: str, recipe: Recipe, when: Resolution
) -> Pass:
    """Search for `query` (whose time words resolved to `when`) and rank what it finds."""
    # The associative path runs while the query is embedded (both wait on worker threads).
    association = (
        asyncio.ensure_future(
            associate(
                services.graph,
                tenant,
                query,
                hops=recipe.graph.entity_hops,
                pointer_max=recipe.graph.pointer_max,
            )
        )
        if recipe.graph.associative
        else None
    )
    try:
        probe = await _probe(services, query, recipe, when)
        found = await _search(services, tenant, recipe, probe)
    except BaseException:
        if association is not None:
            association.cancel()
        raise
    assoc = await association if association is not None else Association()
    acc = accumulate(recipe, found, assoc.pointers)
    relevance = fused(acc, query, recipe)
    if smoothing_on(recipe.graph) and relevance:
        # Only neighbours that are candidates lend relevance, so the links among the candidates
        # are all smoothing needs (and which of the linked episodes hold their own reply).
        links = await services.graph.episodes.thread_links(tenant, list(relevance))
        relevance = smoothed(relevance, links, recipe.graph)
    with_proximity(relevance, assoc.proximity, recipe.graph.proximity_weight)
    if probe.window is not None:
        payloads = {uid: acc.episodes[uid].payload for uid in relevance}
        within_window(relevance, payloads, probe.window, recipe.time.boost)
    return Pass(relevance=relevance, episodes=acc.episodes, association=assoc, facts=acc.facts)


async def _probe(services: Services, query: str, recipe: Recipe, when: Resolution) -> Probe:
    dense = (await services.embedder.embed_query(query)).tolist() if recipe.search.dense else None
    sparse = encode_query(query) if recipe.search.sparse else None
    if sparse is not None and not sparse.indices:
        sparse = None
    return Probe(query, dense, sparse, when.window)


async def _search(
    services: Services, tenant: str, recipe: Recipe, probe: Probe
) -> list[tuple[str, str, Sequence[VectorHit]]]:
    """Every search of the pass in one call (one batch per collection on Qdrant Edge), the
    summaries' hits expanded to their sessions' turns: (mode, kind, hits) per search."""
    labelled = pass_requests(recipe, probe)
    results = await services.vectors.search_many(tenant, [s.request for s in labelled])
    out: list[tuple[str, str, Sequence[VectorHit]]] = []
    for search, hits in zip(labelled, results, strict=True):
        if search.kind == "summaries":
            hits = await session_turns(services, tenant, hits, recipe, probe)
        out.append((search.mode, search.kind, hits))
    return out


def fused(acc: Accumulated, query: str, recipe: Recipe) -> dict[str, float]:
    """The relevance of every episode of the pass: its lists fused, the dense weight first
    scaled by how little the best lexical hits hold the query (`Fusion.dense_gain`); the facts
    of the pass take the same dense weight."""
    lists = acc.lists
    if recipe.fusion.dense_gain and lists["sparse"].scores:
        lexical = sorted(acc.lexical, key=lambda h: -h[0])[: recipe.fusion.lexical_hits]
        fit = lexical_fit(set(tokenize(query)), (text for _, text in lexical))
        lists["dense"].weight *= dense_gain(fit, recipe.fusion.dense_gain)
    acc.facts.dense_weight = lists["dense"].weight
    on = {
        "dense": recipe.search.dense,
        "sparse": recipe.search.sparse,
        "summaries": recipe.summaries.on,
    }
    return fuse(
        [lists[name] for name in ("dense", "sparse", "summaries") if on[name]],
        acc.episodes,
        method=recipe.fusion.method,
        rrf_k=recipe.fusion.rrf_k,
    )


@dataclass(slots=True)
class Combined:
    """The passes of one retrieval combined: each episode's relevance and graph proximity, the
    best of any pass (one pass's relevance as it is)."""

    relevance: dict[str, float]
    proximity: dict[str, float]
    passes: Sequence[Pass]

    @property
    def entities(self) -> list[str]:
        """The entity names the passes recognised, pass after pass."""
        return [n for p in self.passes for n in p.association.entities]

    @property
    def facts(self) -> list[FactHits]:
        """Each pass's knowledge hits."""
        return [p.facts for p in self.passes]

    def found(self, uids: Sequence[str]) -> Mapping[str, Found]:
        """What the passes found of each of `uids` (`accumulate.merged`)."""
        return merged([p.episodes for p in self.passes], uids)

    def demote(self, factors: Mapping[str, float]) -> None:
        """Scale the relevance of the episodes in `factors` (those not found: nothing)."""
        for uid, factor in factors.items():
            if uid in self.relevance:
                self.relevance[uid] *= factor

    def ranked(self, depth: int) -> list[str]:
        """The `depth` most relevant episodes, best first, ties by uid."""
        return sorted(self.relevance, key=lambda u: (-self.relevance[u], u))[:depth]


def combined(passes: Sequence[Pass]) -> Combined:
    """The passes combined: an episode is as relevant as the pass that found it best, and as
    close to the query's entities as the closest pass found it."""
    if len(passes) == 1:
        relevance = passes[0].relevance
    else:  # sub-queries: an episode is as relevant as the pass that found it best
        relevance = {}
        for p in passes:
            for uid, value in p.relevance.items():
                if value > relevance.get(uid, -float("inf")):
                    relevance[uid] = value
    proximity: dict[str, float] = {}
    for p in passes:
        for uid, value in p.association.proximity.items():
            proximity[uid] = max(proximity.get(uid, 0.0), value)
    return Combined(relevance, proximity, passes)
