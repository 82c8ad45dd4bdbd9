"""Retrieval: one `retrieve` function driven by a `Recipe` (docs/design.md section 5).

For each query pass, in parallel: dense and sparse searches over derivatives (exact chunks and
context derivatives) and prospective questions, and the associative path (entities named in the
query → their episodes). Hits collapse to episodes: an episode scores as its best point in each
list (max-sim over the fragments of a long turn, so one reply never fills the list), and each
search fetches enough points for that (`Recipe.fragments_per_episode`). The lists fuse in
`memory.retrieval.fusion` (calibrated scores, or RRF) with a dense weight that grows when no top lexical
hit holds the question's words (`Recipe.dense_gain`); a time window named by the question boosts
what falls inside it; graph proximity and a non-LLM rerank (query-term coverage) adjust it;
neighbours along TEMPORAL_NEXT join when the recipe asks. The session summaries
(`memory.write.sessions`) are searched in the same pass: the best few expand to their sessions' turns
that best match the question, a third list in the fusion (`Recipe.summaries`), so a broad
question reaches the sessions that were about it. Passes (sub-queries) combine by the best
relevance of each episode, in the units the facts are scored in. Candidates carry
provenance: the fragments and prospective questions that matched, the score parts, and for a
user + assistant turn the score of each side (`Candidate.sides`). Facts (the `knowledge`
collection) are searched in the same passes and ranked beside the episodes, conflict-aware, by
`memory.retrieval.facts`; a fact candidate carries its source episodes.

No prompts and no LangGraph here; the LLM rerank is the agent's `rerank` node.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from memory.retrieval.associative import Association, associate
from memory.retrieval.candidates import Candidate, two_sided, user_answers
from memory.retrieval.facts import (
    FactHits,
    FactPool,
    applicable_instructions,
    fact_candidates,
    fact_terms,
    gather_facts,
    subjects_named,
)
from memory.retrieval.fusion import ScoredList, dense_gain, fuse, lexical_fit
from memory.retrieval.ranking import best_coverage, recency, rrf_lists, smooth
from memory.retrieval.recipes import Recipe
from memory.schema import SIGNAL_NAMES, Episode, VectorKind, as_utc, normalise_text
from memory.stores.base import SearchRequest, SparseVector, VectorFilter, VectorHit
from memory.text.query import addresses_agent
from memory.text.questions import BARE_QUESTION_FACTOR, asks_share, is_bare_question
from memory.text.sparse import encode_query, token_set, tokenize
from memory.text.timeparse import Resolution, parse_time
from memory.write.contextual import CONTEXT_ROLE, speaker_label

if TYPE_CHECKING:
    from memory.services import Services

__all__ = ["Candidate", "credibility_bonus", "retrieve", "rrf_fuse"]

HIT_FIELDS = ("episode_uid", "role", "text", "derivative_text")
"""The payload fields a pass reads of a derivative or prospective hit (the rest of the payload
is not fetched: reading and converting payloads is a large part of a search's cost); with
`created_at` when the question names a time window (`WINDOW_FIELDS`)."""
WINDOW_FIELDS = (*HIT_FIELDS, "created_at")
FACT_FIELDS = ("fact_uid",)
SUMMARY_FIELDS = ("episode_uids",)


@dataclass(slots=True)
class _Episode:
    """Per-episode accumulator of one pass."""

    dense: float | None = None
    sparse: float | None = None
    ranks: list[tuple[int, int]] = field(default_factory=list)
    """(list index, rank) for RRF."""
    fragments: dict[str, float] = field(default_factory=dict)
    questions: dict[str, float] = field(default_factory=dict)
    payload: Mapping[str, object] = field(default_factory=dict)
    roles: set[str] = field(default_factory=set)
    """Roles (`user`, `agent`, `chunk`, context) of the points that matched."""


def rrf_fuse(lists: Sequence[Sequence[VectorHit]], k: int) -> dict[str, float]:
    """Reciprocal-rank fusion of ranked hit lists by hit id: sum of 1 / (k + rank), rank from 1."""
    return rrf_lists(((1.0, [h.id for h in hits]) for hits in lists), k)


def credibility_bonus(signals: Mapping[str, float], weights: Mapping[str, float] | None) -> float:
    """Sum of weight x signal over the five credibility signals (weights clamped to [0, 0.3])."""
    if not weights:
        return 0.0
    return sum(min(0.3, max(0.0, weights.get(n, 0.0))) * signals.get(n, 0.0) for n in SIGNAL_NAMES)


def _created(payload: Mapping[str, object]) -> datetime | None:
    value = payload.get("created_at")
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, str):
        try:
            return as_utc(datetime.fromisoformat(value))
        except ValueError:
            return None
    return None


@dataclass(slots=True)
class _Pass:
    relevance: dict[str, float]
    acc: dict[str, _Episode]
    association: Association
    facts: FactHits = field(default_factory=FactHits)


async def _run_pass(
    services: Services, tenant: str, query: str, recipe: Recipe, when: Resolution
) -> _Pass:
    limit = max(
        1, math.ceil(recipe.max_candidates * recipe.overfetch * recipe.fragments_per_episode)
    )
    window = when.window
    flt = (
        VectorFilter(created_from=window.start, created_to=window.end)
        if recipe.time_filter and window is not None
        else None
    )
    # The associative path runs while the query is embedded (both wait on worker threads).
    assoc_task = (
        asyncio.ensure_future(
            associate(
                services.graph,
                tenant,
                query,
                hops=recipe.entity_hops,
                pointer_max=recipe.pointer_max,
            )
        )
        if recipe.associative
        else None
    )
    try:
        dense_vec = (await services.embedder.embed_query(query)).tolist() if recipe.dense else None
    except BaseException:
        if assoc_task is not None:
            assoc_task.cancel()
        raise
    sparse_vec = encode_query(query) if recipe.sparse else None
    if sparse_vec is not None and not sparse_vec.indices:
        sparse_vec = None
    jobs: list[tuple[str, VectorKind]] = []
    requests: list[SearchRequest] = []
    fields = WINDOW_FIELDS if window is not None and recipe.time_boost else HIT_FIELDS
    for kind in recipe.kinds:
        kind_limit = (
            max(1, math.ceil(limit * recipe.prospective_share)) if kind == "prospective" else limit
        )
        if dense_vec is not None:
            jobs.append(("dense", kind))
            requests.append(
                SearchRequest(
                    kind,
                    dense=dense_vec,
                    limit=kind_limit,
                    filter=flt,
                    score_threshold=recipe.similarity_floor,
                    fields=fields,
                )
            )
        if sparse_vec is not None:
            jobs.append(("sparse", kind))
            requests.append(
                SearchRequest(kind, sparse=sparse_vec, limit=kind_limit, filter=flt, fields=fields)
            )
    if recipe.facts:  # the facts surface, searched in the same pass (no time filter: facts
        # hold over spans, their history is handled by `memory.retrieval.facts`)
        fact_limit = max(1, recipe.max_facts * 2)
        if dense_vec is not None:
            jobs.append(("dense", "knowledge"))
            requests.append(
                SearchRequest(
                    "knowledge",
                    dense=dense_vec,
                    limit=fact_limit,
                    score_threshold=recipe.fact_similarity_floor,
                    fields=FACT_FIELDS,
                )
            )
        fact_sparse = encode_query(fact_terms(query)) if recipe.sparse else None
        if fact_sparse is not None and fact_sparse.indices:
            jobs.append(("sparse", "knowledge"))
            requests.append(
                SearchRequest("knowledge", sparse=fact_sparse, limit=fact_limit, fields=FACT_FIELDS)
            )
    if recipe.summaries and (dense_vec is not None or sparse_vec is not None):
        jobs.append(("hybrid", "summaries"))
        requests.append(
            SearchRequest(
                "summaries",
                dense=dense_vec,
                sparse=sparse_vec,
                limit=recipe.summary_hits,
                filter=flt,
                score_threshold=recipe.similarity_floor,  # an unrelated session expands to nothing
                fields=SUMMARY_FIELDS,
            )
        )
    # Every search of the pass in one call (one batch per collection on Qdrant Edge).
    results = await services.vectors.search_many(tenant, requests)
    if jobs and jobs[-1] == ("hybrid", "summaries"):
        results[-1] = await _session_turns(
            services, tenant, results[-1], dense_vec, sparse_vec, recipe, flt, limit, fields
        )
    fact_hits = FactHits()
    association = await assoc_task if assoc_task is not None else Association()

    acc: dict[str, _Episode] = {}
    lists = {
        "dense": ScoredList("dense", "cosine", recipe.dense_weight),
        "sparse": ScoredList("sparse", "top", recipe.sparse_weight),
        "summaries": ScoredList("summaries", "top", recipe.summary_weight),
    }
    lexical: list[tuple[float, str]] = []
    for (mode, kind), hits in zip(jobs, results, strict=True):
        if kind == "knowledge":
            fact_hits.add(mode, hits)
            continue
        if kind == "summaries":
            for hit in hits:
                uid = str(hit.payload.get("episode_uid", ""))
                ep = acc.get(uid) or acc.setdefault(uid, _Episode(payload=hit.payload))
                lists["summaries"].add(uid, hit.score)
                if str(hit.payload.get("role", "")) != CONTEXT_ROLE:
                    ep.fragments.setdefault(str(hit.payload.get("text", "")), 0.0)
            continue
        scored = lists[mode]
        dense = mode == "dense"
        for hit in hits:  # hot: a pass reads hundreds of hits
            payload = hit.payload
            role = str(payload.get("role", ""))
            if role == CONTEXT_ROLE and not recipe.contextual:
                continue
            uid = str(payload.get("episode_uid", ""))
            if not uid:
                continue
            score = hit.score
            found = acc.get(uid)
            if found is None:
                found = acc[uid] = _Episode(payload=payload)
            ep = found
            scored.add(uid, score)
            if dense:
                ep.dense = score if ep.dense is None or score > ep.dense else ep.dense
            else:
                ep.sparse = score if ep.sparse is None or score > ep.sparse else ep.sparse
                lexical.append((score, str(payload.get("text", ""))))
            ep.roles.add(role)
            text = str(payload.get("text", ""))
            if "derivative_text" in payload:
                if score > ep.questions.get(text, 0.0):
                    ep.questions[text] = score
                else:
                    ep.questions.setdefault(text, 0.0)
                text = str(payload["derivative_text"])
            if role != CONTEXT_ROLE:
                if score > ep.fragments.get(text, 0.0):
                    ep.fragments[text] = score
                else:
                    ep.fragments.setdefault(text, 0.0)
    for uid in association.pointers:
        acc.setdefault(uid, _Episode())
    fact_hits.sparse_scale = max((ep.sparse for ep in acc.values() if ep.sparse), default=0.0)

    if recipe.dense_gain and lists["sparse"].scores:
        lexical.sort(key=lambda h: -h[0])
        fit = lexical_fit(set(tokenize(query)), (t for _, t in lexical[: recipe.lexical_hits]))
        lists["dense"].weight *= dense_gain(fit, recipe.dense_gain)
    fact_hits.dense_weight = lists["dense"].weight
    used = [lists[m] for m in ("dense", "sparse", "summaries") if getattr(recipe, m)]
    relevance = fuse(
        used, acc, method="rrf" if recipe.fusion == "rrf" else "score", rrf_k=recipe.rrf_k
    )
    if (recipe.smoothing > 0 or recipe.paired_smoothing > 0) and relevance:
        # Only neighbours that are candidates lend relevance, so the links among the candidates
        # are all smoothing needs (and which of the linked episodes hold their own reply).
        links = await services.graph.thread_links(tenant, list(relevance))
        relevance = smooth(
            relevance,
            links.adjacent,
            recipe.smoothing,
            paired=links.paired,
            paired_weight=recipe.paired_smoothing,
        )
    for uid in list(relevance):
        relevance[uid] += recipe.proximity_weight * association.proximity.get(uid, 0.0)
        if window is not None and recipe.time_boost:
            created = _created(acc[uid].payload)
            if created is not None and window.contains(created):  # not lifted by its date alone
                relevance[uid] *= 1.0 + recipe.time_boost
    return _Pass(relevance=relevance, acc=acc, association=association, facts=fact_hits)


async def _session_turns(
    services: Services,
    tenant: str,
    found: list[VectorHit],
    dense: list[float] | None,
    sparse: SparseVector | None,
    recipe: Recipe,
    flt: VectorFilter | None,
    limit: int,
    fields: tuple[str, ...],
) -> list[VectorHit]:
    """The best turns of the sessions whose summaries matched the query (`found`): one hit per
    turn (its best derivative's payload, `fields` of it), scored summary match (relative to the
    best summary) / (1 + the turn's rank in its session); a turn in two sessions keeps its
    best."""
    sessions = [
        (hit.score, [str(u) for u in cast(list[object], hit.payload.get("episode_uids") or [])])
        for hit in found
    ]
    sessions = [(score, uids) for score, uids in sessions if uids and score > 0]
    if not sessions:
        return []
    per_session = max(1, math.ceil(recipe.summary_turns * recipe.fragments_per_episode))
    turns = await services.vectors.search_many(
        tenant,
        [
            SearchRequest(
                "derivatives",
                dense=dense,
                sparse=sparse,
                limit=min(limit, per_session),
                filter=VectorFilter(
                    episode_uids=uids,
                    created_from=flt.created_from if flt else None,
                    created_to=flt.created_to if flt else None,
                ),
                fields=fields,
            )
            for _, uids in sessions
        ],
    )
    best = sessions[0][0]
    out: dict[str, VectorHit] = {}
    for (score, _), hits in zip(sessions, turns, strict=True):
        ranked: list[VectorHit] = []
        for hit in hits:  # best first; a turn is its best fragment
            uid = str(hit.payload.get("episode_uid", ""))
            if uid and all(str(h.payload.get("episode_uid")) != uid for h in ranked):
                ranked.append(hit)
        for rank, hit in enumerate(ranked[: recipe.summary_turns]):
            value = (score / best) / (1 + rank)
            uid = str(hit.payload["episode_uid"])
            if uid not in out or value > out[uid].score:
                out[uid] = VectorHit(id=hit.id, score=value, payload=hit.payload)
    return sorted(out.values(), key=lambda h: (-h.score, h.id))


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

    Returns at most `recipe.max_candidates` candidates (plus temporal neighbours when the recipe
    asks), none created after `now`; the question's time words are read against `now`.
    """
    queries = [query] if isinstance(query, str) else list(query)
    queries = list(dict.fromkeys(q.strip() for q in queries if q and q.strip()))[
        : recipe.max_passes
    ]
    if not queries:
        return []
    cutoff = as_utc(now)
    whens = [parse_time(q, cutoff) for q in queries]
    # The graph read of the standing instructions needs only the queries: it runs while the
    # passes search.
    instructions = (
        asyncio.ensure_future(applicable_instructions(services, tenant, queries, cutoff))
        if recipe.facts and recipe.instructions
        else None
    )
    try:
        passes = await asyncio.gather(
            *(
                _run_pass(services, tenant, q, recipe, w)
                for q, w in zip(queries, whens, strict=True)
            )
        )
    except BaseException:
        if instructions is not None:
            instructions.cancel()
        raise
    if len(passes) == 1:
        relevance = passes[0].relevance
    else:  # sub-queries: an episode is as relevant as the pass that found it best
        relevance = {}
        for p in passes:
            for uid, value in p.relevance.items():
                if value > relevance.get(uid, -math.inf):
                    relevance[uid] = value
    proximity: dict[str, float] = {}
    for p in passes:
        for uid, value in p.association.proximity.items():
            proximity[uid] = max(proximity.get(uid, 0.0), value)

    about = subjects_named(queries, [n for p in passes for n in p.association.entities])
    pool = (
        await gather_facts(
            services,
            tenant,
            [p.facts for p in passes],
            recipe,
            queries,
            cutoff,
            about,
            instructions=instructions,
        )
        if recipe.facts
        else FactPool()
    )
    for uid, factor in pool.demote.items():  # turns that stated only superseded facts
        if uid in relevance:
            relevance[uid] *= factor
    order = sorted(relevance, key=lambda u: (-relevance[u], u))
    depth = max(recipe.max_candidates, recipe.rerank_depth if recipe.rerank else 0)
    top = order[:depth]
    acc = _merged([p.acc for p in passes], top)
    episodes = {e.uid: e for e in await services.graph.get_episodes(tenant, top)}
    windows = [w.window for w in whens if w.window is not None]
    best = max((relevance[u] for u in top), default=1.0) or 1.0
    q_tokens = [set(tokenize(q)) for q in queries]
    named = {normalise_text(n) for p in passes for n in p.association.entities}
    about_agent = recipe.reply_weight < 1.0 and any(addresses_agent(q) for q in queries)
    out: list[Candidate] = []
    for uid in top:
        episode = episodes.get(uid)
        if episode is None or episode.archived or as_utc(episode.created_at) > cutoff:
            continue  # vectors without a graph node: `mneme doctor` reports them
        if episode.salience < recipe.min_salience:
            continue
        out.append(
            _candidate(
                episode,
                acc[uid],
                relevance[uid] / best,
                proximity.get(uid, 0.0),
                windows,
                recipe,
                cutoff,
                q_tokens,
                signal_weights,
                named,
                about_agent,
            )
        )
    for c in out:
        episode = episodes[c.episode_uid]
        bare = is_bare_question(episode.user_text, episode.agent_text)
        if bare:
            c.score *= BARE_QUESTION_FACTOR  # kept, never above the statements that answer it
            c.sides = {side: value * BARE_QUESTION_FACTOR for side, value in c.sides.items()}
        if two_sided(episode):
            continue  # neither discount: see `Recipe.question_discount`, `brevity_discount`
        if recipe.question_discount and not bare:
            said = speaker_label(episode.user_text)[1]  # "Name: Wow! What did you paint?"
            c.score *= 1.0 - recipe.question_discount * asks_share(said)
        if recipe.brevity_discount:  # a one-sided turn has no sides to scale
            c.score *= 1.0 - recipe.brevity_discount * max(
                0.0, 1.0 - content_words(episode) / recipe.brevity_words
            )
    out.sort(key=lambda c: (-c.score, c.episode_uid))
    out = out[: recipe.max_candidates]
    if recipe.neighbours > 0 and out:
        out += await _neighbours(services, tenant, out, recipe, cutoff)
    if pool.facts:
        out = await fact_candidates(
            services, tenant, pool, out, best, recipe, queries, about, cutoff, about_agent
        )
    out.sort(key=lambda c: (-c.score, c.uid))
    return out


def content_words(episode: Episode) -> int:
    """Distinct content words (`sparse.token_set`) of what an episode says: the user's side
    without its `Name:` label, and the agent's."""
    said = speaker_label(episode.user_text)[1]
    return len(token_set(f"{said} {episode.agent_text or ''}"))


def _merged(accs: Sequence[dict[str, _Episode]], uids: Sequence[str]) -> dict[str, _Episode]:
    """What the passes found of each of `uids` (an episode found by several: its best scores,
    the union of its roles, fragments and questions); one pass's own, as it is."""
    if len(accs) == 1:
        return accs[0]
    out: dict[str, _Episode] = {}
    for uid in uids:
        for found in accs:
            ep = found.get(uid)
            if ep is None:
                continue
            mine = out.setdefault(uid, _Episode(payload=ep.payload))
            mine.roles |= ep.roles
            if ep.dense is not None:
                mine.dense = max(mine.dense or -1.0, ep.dense)
            for text, s in ep.fragments.items():
                mine.fragments[text] = max(mine.fragments.get(text, 0.0), s)
            for text, s in ep.questions.items():
                mine.questions[text] = max(mine.questions.get(text, 0.0), s)
    return out


def _candidate(
    episode: Episode,
    ep: _Episode,
    relevance: float,
    proximity: float,
    windows: Sequence[Any],
    recipe: Recipe,
    cutoff: datetime,
    q_tokens: Sequence[set[str]],
    signal_weights: Mapping[str, float] | None,
    named: set[str],
    about_agent: bool,
) -> Candidate:
    created = as_utc(episode.created_at)
    # An episode without an ESS was indexed with zero signals (`memory.write.episodes`), so its
    # points' payloads (not fetched) hold zeros too.
    signals = episode.ess.signals() if episode.ess else dict.fromkeys(SIGNAL_NAMES, 0.0)
    score = relevance
    if recipe.speaker_boost and named:
        speaker, _ = speaker_label(episode.user_text)
        if speaker and normalise_text(speaker) in named:
            score += recipe.speaker_boost * relevance
    if recipe.rerank:
        score += recipe.rerank_weight * best_coverage(q_tokens, episode.content)
    score += recipe.salience_weight * episode.salience
    score += recipe.recency_weight * recency(created, cutoff, recipe.recency_days)
    score += credibility_bonus(signals, signal_weights)
    sides: dict[str, float] = {}
    if two_sided(episode):
        answer = "agent" if about_agent and "agent" in ep.roles else "user"
        context = "user" if answer == "agent" else "agent"
        sides = {answer: score, context: score * recipe.reply_weight}
        # Found through the reply alone (context derivatives hold earlier turns too, so they
        # are not the user's side): the user's side answers nothing the question asked.
        if (
            answer == "user"
            and recipe.reply_only_as_context
            and "agent" in ep.roles
            and not ep.roles & {"user", "chunk"}
        ):
            sides["user"] = score * recipe.reply_weight
    return Candidate(
        episode_uid=episode.uid,
        score=score,
        similarity=ep.dense,
        created_at=created,
        thread_id=episode.thread_id,
        content=episode.content,
        fragments=[t for t, _ in sorted(ep.fragments.items(), key=lambda kv: -kv[1])],
        questions=[t for t, _ in sorted(ep.questions.items(), key=lambda kv: -kv[1])],
        source="search" if ep.payload else "entity",
        signals=signals,
        relevance=relevance,
        proximity=proximity,
        in_window=any(w.contains(created) for w in windows),
        salience=episode.salience,
        sides=sides,
        uid=episode.uid,
        sources=[episode.uid],
    )


async def _neighbours(
    services: Services, tenant: str, seeds: list[Candidate], recipe: Recipe, cutoff: datetime
) -> list[Candidate]:
    """The ±`recipe.neighbours` episodes around the best seeds, scored below their seed."""
    present = {c.episode_uid for c in seeds}
    top = seeds[: recipe.neighbour_seeds]
    found = await services.graph.neighbours_of(
        tenant, [c.episode_uid for c in top], recipe.neighbours
    )
    out: list[Candidate] = []
    for seed in top:
        for n in found.get(seed.episode_uid, []):
            episode: Episode = n.episode
            if episode.uid in present or episode.archived or as_utc(episode.created_at) > cutoff:
                continue
            present.add(episode.uid)
            score = seed.score * recipe.neighbour_decay / abs(n.offset)
            out.append(
                Candidate(
                    episode_uid=episode.uid,
                    score=score,
                    similarity=None,
                    created_at=as_utc(episode.created_at),
                    thread_id=episode.thread_id,
                    content=episode.content,
                    source="neighbour",
                    neighbour_of=seed.episode_uid,
                    offset=n.offset,
                    signals=episode.ess.signals() if episode.ess else {},
                    relevance=seed.relevance * recipe.neighbour_decay / abs(n.offset),
                    salience=episode.salience,
                    sides=user_answers(score, recipe.reply_weight) if two_sided(episode) else {},
                    uid=episode.uid,
                    sources=[episode.uid],
                )
            )
    return out
