"""The final assembly: the episodes ranked by the passes become candidates, best first, and
the temporal expansion adds the turns around the best ones.

An episode's candidate carries its final score (`boosts.episode_score`: relevance scaled by the
best, the speaker lift, the coverage rerank, memory's state (`memory.retrieval.state`) and
credibility), the score of each side
of a user + assistant turn (`boosts.sides`), both scaled by the turn-shape discounts
(`boosts.shape_factors`), and its provenance: the fragments and prospective questions that
matched, the score parts, the time window it falls in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory.retrieval.accumulate import Found
from memory.retrieval.boosts import episode_score, shape_factors, sides, signals_of
from memory.retrieval.candidates import Candidate, reached, two_sided
from memory.retrieval.question import Question
from memory.retrieval.recipes import Recipe
from memory.retrieval.state import MemoryState, state_terms
from memory.schema import Episode, as_utc

if TYPE_CHECKING:
    from memory.services import Services

__all__ = ["Ranked", "candidate", "episode_candidates", "neighbours", "rerank_depth", "shown"]


def rerank_depth(recipe: Recipe) -> int:
    """How many episodes (best relevance first) become candidates before the final cut."""
    return max(recipe.search.max_candidates, recipe.rerank.depth if recipe.rerank.on else 0)


def shown(episode: Episode | None, question: Question, recipe: Recipe) -> bool:
    """Whether a ranked episode may be returned: read from the graph (vectors without a graph
    node are `mneme doctor`'s to report), not archived, not created after the question, and
    salient enough."""
    if episode is None or episode.archived or as_utc(episode.created_at) > question.cutoff:
        return False
    return episode.salience >= recipe.priors.min_salience


@dataclass(frozen=True, slots=True)
class Ranked:
    """An episode the passes ranked, read from the graph."""

    episode: Episode
    found: Found
    """What the passes found of it."""
    relevance: float
    """Its relevance scaled by the best (1 for the best)."""
    proximity: float = 0.0
    """Its graph proximity to the query's entities."""


def episode_candidates(
    ranked: Sequence[Ranked],
    question: Question,
    recipe: Recipe,
    state: MemoryState | None = None,
) -> list[Candidate]:
    """The candidates of the `ranked` episodes: the best `max_candidates`, best first, ties by
    uid; memory's `state` weighs when it is on."""
    state = state or MemoryState()
    relevance = {r.episode.uid: r.relevance for r in ranked}
    out = [candidate(r, question, recipe, state, relevance) for r in ranked]
    out.sort(key=lambda c: (-c.score, c.episode_uid))
    return out[: recipe.search.max_candidates]


def candidate(
    ranked: Ranked,
    question: Question,
    recipe: Recipe,
    state: MemoryState | None = None,
    relevance_of: Mapping[str, float] | None = None,
) -> Candidate:
    """One episode as a candidate: its score (memory's `state` terms added when it is on, the
    association read against the candidates' `relevance_of`) and sides, scaled by the shape of
    the turn."""
    episode, found, relevance = ranked.episode, ranked.found, ranked.relevance
    created = as_utc(episode.created_at)
    paired = two_sided(episode)
    association, terms = 0.0, 0.0
    if state is not None and state.on:
        association = state.association(episode.uid, relevance_of or {})
        terms = state_terms(episode, association, question, recipe.priors)
        if recipe.priors.relative:
            terms *= relevance
    score = episode_score(episode, relevance, question, recipe, terms)
    scores = sides(score, found.roles, question.about_agent, recipe.turns) if paired else {}
    for factor in shape_factors(episode, paired, recipe.turns):
        score *= factor
        scores = {side: value * factor for side, value in scores.items()}
    return Candidate(
        episode_uid=episode.uid,
        score=score,
        similarity=found.dense,
        created_at=created,
        thread_id=episode.thread_id,
        content=episode.content,
        said=episode.source.value,
        fragments=_best_first(found.fragments),
        questions=_best_first(found.questions),
        source="search" if found.payload else "entity",
        signals=signals_of(episode),
        relevance=relevance,
        proximity=ranked.proximity,
        in_window=any(w.contains(created) for w in question.windows),
        salience=episode.salience,
        association=association,
        sides=scores,
        uid=episode.uid,
        sources=[episode.uid],
    )


def _best_first(scores: Mapping[str, float]) -> list[str]:
    return [t for t, _ in sorted(scores.items(), key=lambda kv: -kv[1])]


async def neighbours(
    services: Services, tenant: str, seeds: list[Candidate], recipe: Recipe, question: Question
) -> list[Candidate]:
    """The ±`Time.neighbours` episodes around the best `Time.neighbour_seeds` seeds that are
    not candidates yet, scored below their seed (its score x decay / |offset|)."""
    time = recipe.time
    present = {c.episode_uid for c in seeds}
    top = seeds[: time.neighbour_seeds]
    found = await services.graph.episodes.neighbours_many(
        tenant, [c.episode_uid for c in top], time.neighbours
    )
    out: list[Candidate] = []
    for seed in top:
        for n in found.get(seed.episode_uid, []):
            episode: Episode = n.episode
            if (
                episode.uid in present
                or episode.archived
                or as_utc(episode.created_at) > question.cutoff
            ):
                continue
            present.add(episode.uid)
            share = time.neighbour_decay / abs(n.offset)
            out.append(
                reached(episode, seed, share, "neighbour", recipe.turns.reply_weight, n.offset)
            )
    return out
