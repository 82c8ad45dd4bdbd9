"""Retrieval: one `retrieve` function driven by a `Recipe` (docs/design.md section 5).

It reads as its steps, each a module of its own that can be read and tested alone:

    passes      one per query (sub-queries run side by side, `memory.retrieval.passes`):
                requests → accumulate → fuse → boosts, a relevance per episode
    combine     an episode takes its best pass's relevance (the units facts are scored in)
    facts       the knowledge hits, their successors, the instructions that apply, the turns
                to demote (`memory.retrieval.facts`)
    state       what memory's state says of the candidates once sleep has run: salience,
                recency of use, co-retrieval links and concepts (`memory.retrieval.state`)
    assemble    the best episodes as candidates: the final score, the sides of a turn, the
                turn-shape discounts (`memory.retrieval.assemble`, `memory.retrieval.boosts`)
    expand      the members of the best ones' concepts (`Priors.concept_hops`) and the
                cornerstones linked to them (`Priors.cornerstones`), the turns
                around the best ones (`Time.neighbours`), and the facts ranked among the
                turns, each carrying its source episodes
    diversity   a candidate whose sources better ones hold scores x `Rerank.diversity`
    dense head  the turns the dense list ranks first that no lexical hit found take the
                place right after the lexical list's best (`memory.retrieval.floor`)
    newest      for a question about the present, the newest of the best candidates that say
                the same thing takes the best one's place (`memory.retrieval.current`)

Candidates carry provenance: the fragments and prospective questions that matched, the score
parts, and for a user + assistant turn the score of each side (`Candidate.sides`).

No prompts and no LangGraph here; the LLM rerank is the agent's `rerank` node.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memory.retrieval.assemble import Ranked, episode_candidates, neighbours, rerank_depth, shown
from memory.retrieval.candidates import Candidate
from memory.retrieval.current import newest_first
from memory.retrieval.fact_candidates import fact_candidates
from memory.retrieval.facts import FactPool, applicable_instructions, gather_facts
from memory.retrieval.floor import dense_head, with_dense_head
from memory.retrieval.passes import Combined, Pass, combined, run_pass
from memory.retrieval.question import Question
from memory.retrieval.recipes import Recipe
from memory.retrieval.state import diversified, hops, read_state
from memory.schema import Fact, as_utc
from memory.text.timeparse import Resolution, parse_time

if TYPE_CHECKING:
    from memory.services import Services

__all__ = ["Candidate", "pass_queries", "retrieve"]


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

    Returns at most `Search.max_candidates` episodes (plus temporal neighbours when the recipe
    asks) and the facts ranked among them, none created after `now`; the question's time words
    are read against `now`.
    """
    queries = pass_queries(query, recipe)
    if not queries:
        return []
    cutoff = as_utc(now)
    times = [parse_time(q, cutoff) for q in queries]
    passes, instructions = await _passes(services, tenant, queries, times, recipe, cutoff)
    found = combined(passes)
    question = Question.read(queries, cutoff, times, found.entities, recipe, signal_weights)
    pool = (
        await gather_facts(services, tenant, found.facts, recipe, question, instructions)
        if recipe.facts.on
        else FactPool()
    )
    found.demote(pool.demote)  # turns that stated only superseded facts, or another's
    out, best = await _episodes(services, tenant, found, question, recipe)
    if recipe.time.neighbours > 0 and out:
        out += await neighbours(services, tenant, out, recipe, question)
    if pool.facts:
        pool.scale = best  # facts are scored in the episodes' units, scaled alike
        out = await fact_candidates(services, tenant, pool, out, recipe, question)
    out = diversified(out, recipe.rerank.diversity)
    if recipe.rerank.dense_head > 0:
        unmatched, lexical_best = dense_head(
            (p.episodes for p in found.passes), recipe.rerank.dense_head, pool.demote
        )
        out = with_dense_head(out, unmatched, lexical_best)
    return await newest_first(services, tenant, out, question, recipe)


def pass_queries(query: str | Sequence[str], recipe: Recipe) -> list[str]:
    """The queries of the passes: each stripped, blank and repeated ones left out, at most
    `Search.max_passes`."""
    queries = [query] if isinstance(query, str) else list(query)
    kept = dict.fromkeys(q.strip() for q in queries if q and q.strip())
    return list(kept)[: recipe.search.max_passes]


async def _passes(
    services: Services,
    tenant: str,
    queries: Sequence[str],
    times: Sequence[Resolution],
    recipe: Recipe,
    cutoff: datetime,
) -> tuple[list[Pass], asyncio.Future[list[Fact]] | None]:
    """Every pass, side by side, and the graph read of the standing instructions, which needs
    only the queries and so runs while the passes search (None: the recipe reads none)."""
    instructions = (
        asyncio.ensure_future(applicable_instructions(services, tenant, queries, cutoff))
        if recipe.facts.on and recipe.facts.instructions
        else None
    )
    try:
        passes = await asyncio.gather(
            *(run_pass(services, tenant, q, recipe, t) for q, t in zip(queries, times, strict=True))
        )
    except BaseException:
        if instructions is not None:
            instructions.cancel()
        raise
    return list(passes), instructions


async def _episodes(
    services: Services, tenant: str, found: Combined, question: Question, recipe: Recipe
) -> tuple[list[Candidate], float]:
    """The candidates of the most relevant episodes (`assemble.episode_candidates`), and the
    best relevance among those read, by which each relevance was scaled."""
    order = found.ranked(rerank_depth(recipe))
    best = max((found.relevance[u] for u in order), default=1.0) or 1.0
    matched = found.found(order)
    read = {e.uid: e for e in await services.graph.episodes.get_many(tenant, order)}
    ranked = [
        Ranked(episode, matched[uid], found.relevance[uid] / best, found.proximity.get(uid, 0.0))
        for uid in order
        if (episode := read.get(uid)) is not None and shown(episode, question, recipe)
    ]
    state = await read_state(
        services, tenant, [r.episode.uid for r in ranked], recipe, question.cutoff
    )
    out = episode_candidates(ranked, question, recipe, state)
    out += await hops(services, tenant, out, state, recipe, question)
    return out, best
