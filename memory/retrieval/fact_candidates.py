"""Facts as candidates: the facts a retrieval found (`memory.retrieval.facts.FactPool`) ranked
among its episode candidates, each standing for its source episodes, and for a "why" question
the turns that led to a matched decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from memory.retrieval.candidates import Candidate, two_sided, user_answers
from memory.retrieval.facts import FactHit, FactPool
from memory.retrieval.question import Question
from memory.retrieval.recipes import Recipe
from memory.schema import Episode, as_utc

if TYPE_CHECKING:
    from memory.services import Services

__all__ = ["fact_candidates"]


async def fact_candidates(
    services: Services,
    tenant: str,
    pool: FactPool,
    out: list[Candidate],
    recipe: Recipe,
    question: Question,
) -> list[Candidate]:
    """The episode candidates `out` with the pool's facts ranked among them (`FactPool.rank`,
    scaled by `pool.scale`) and, for a "why" question, the turns that led to a matched
    decision."""
    hits = await pool.rank(services, tenant, recipe, question)
    read = await services.graph.episodes.get_many(
        tenant, list({s for h in hits for s in h.sources})
    )
    episodes = {e.uid: e for e in read}
    # A question about what the agent said may be answered by a fact taken from its reply:
    # both sides of the source then rank at the fact's score.
    reply_weight = 1.0 if question.about_agent else recipe.turns.reply_weight
    out = out + [_fact_candidate(h, episodes, reply_weight) for h in hits]
    if pool.cause_turns:
        out = await _with_cause_turns(
            services, tenant, out, pool.cause_turns, question.cutoff, recipe.turns.reply_weight
        )
    return out


async def _with_cause_turns(
    services: Services,
    tenant: str,
    out: list[Candidate],
    turns: Mapping[str, float],
    cutoff: datetime,
    reply_weight: float,
) -> list[Candidate]:
    """`out` with the turns that led to a matched decision: lifted to their cause score (their
    sides alike), or added when retrieval had not found them (the user's side answering)."""
    present = {c.uid: c for c in out if c.kind == "episode"}
    for uid, score in turns.items():
        found = present.get(uid)
        if found is not None and score > found.score:
            was, found.score = found.score, score
            found.sides = {s: v * score / was if was > 0 else score for s, v in found.sides.items()}
    missing = [u for u in turns if u not in present]
    for episode in await services.graph.episodes.get_many(tenant, missing):
        if episode.archived or as_utc(episode.created_at) > cutoff:
            continue
        out.append(
            Candidate(
                episode_uid=episode.uid,
                score=turns[episode.uid],
                similarity=None,
                created_at=as_utc(episode.created_at),
                thread_id=episode.thread_id,
                content=episode.content,
                said=episode.source.value,
                source="cause",
                signals=episode.ess.signals() if episode.ess else {},
                relevance=turns[episode.uid],
                salience=episode.salience,
                sides=user_answers(turns[episode.uid], reply_weight) if two_sided(episode) else {},
                uid=episode.uid,
                sources=[episode.uid],
            )
        )
    return out


def _fact_candidate(
    hit: FactHit, episodes: Mapping[str, Episode], reply_weight: float
) -> Candidate:
    """A fact as a retrieval candidate; `episode_uid` and `thread_id` are its first source's
    (`episodes`: its sources, read).

    A fact is what the user's side of its source turns stated (the offline rules read the
    user's text; the extraction prompt asks for what the speaker states), so when a source
    holds both sides the user's answers at the fact's score and the reply is context at
    `reply_weight` x it (`Candidate.sides`), as for an episode found by the user's words; 1
    when the question asks what the agent said."""
    f = hit.fact
    learned = as_utc(f.learned_at or f.valid_from)
    first = hit.sources[0] if hit.sources else ""
    source = episodes.get(first)
    replied = any(two_sided(e) for u in hit.sources if (e := episodes.get(u)) is not None)
    return Candidate(
        episode_uid=first,
        score=hit.score,
        similarity=hit.cosine,
        created_at=learned,
        thread_id=source.thread_id if source is not None else "",
        content=f.text,
        said=source.source.value if source is not None else "stated",
        fragments=[f.text],
        relevance=hit.relevance,
        sides=user_answers(hit.score, reply_weight) if replied else {},
        kind="fact",
        uid=f.uid,
        sources=list(hit.sources),
        fact={
            "kind": f.kind.value,
            "subject": f.subject,
            "attribute": f.attribute,
            "value": f.value,
            "valid_from": as_utc(f.valid_from).isoformat(),
            "valid_to": as_utc(f.valid_to).isoformat() if f.valid_to else None,
            "current": f.superseded_by is None,
            "superseded_by": f.superseded_by,
            "confidence": f.confidence,
            "grounding": f.grounding,
            "via": hit.via,
        },
    )
