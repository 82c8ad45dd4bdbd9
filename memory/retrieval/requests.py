"""The requests of a pass: what one query sends to the vector index, and the session turns a
matched summary expands to.

A pass sends every search in one `VectorIndex.search_many` call: for each searched collection
of turns (`Search.kinds`) a dense and a sparse search, each asking for points enough for
`max_candidates x overfetch` episodes of `fragments_per_episode` points (prospective questions
a share of that); the facts (`knowledge`: dense, and sparse over `fact_terms` of the query;
facts hold over spans); and the session summaries (one hybrid search).
Hits carry only the payload fields the pass reads.

Pure functions, except `session_turns` (one more search).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

from memory.retrieval.facts import fact_terms
from memory.retrieval.recipes import Recipe
from memory.stores.base import SearchRequest, SparseVector, VectorFilter, VectorHit
from memory.text.sparse import encode_query
from memory.text.timeparse import TimeWindow

if TYPE_CHECKING:
    from memory.services import Services

__all__ = [
    "FACT_FIELDS",
    "HIT_FIELDS",
    "SUMMARY_FIELDS",
    "WINDOW_FIELDS",
    "Labelled",
    "Probe",
    "pass_requests",
    "point_limit",
    "session_turns",
]

HIT_FIELDS = ("episode_uid", "role", "text", "derivative_text")
"""The payload fields a pass reads of a derivative or prospective hit (the rest of the payload
is not fetched: reading and converting payloads is a large part of a search's cost); with
`created_at` when the question names a time window (`WINDOW_FIELDS`)."""
WINDOW_FIELDS = (*HIT_FIELDS, "created_at")
FACT_FIELDS = ("fact_uid",)
SUMMARY_FIELDS = ("episode_uids",)

Mode = Literal["dense", "sparse", "hybrid"]


@dataclass(frozen=True, slots=True)
class Probe:
    """One pass's query as the index reads it."""

    text: str
    dense: list[float] | None
    """The query's embedding (None: the recipe searches no dense vectors)."""
    sparse: SparseVector | None
    """Its sparse vector (None: no sparse search, or no token the index knows)."""
    window: TimeWindow | None = None
    """The time window the query names."""


@dataclass(frozen=True, slots=True)
class Labelled:
    """One search of a pass and what its hits are: which list (`mode`) of which surface
    (`kind`: a turn collection, `knowledge` or `summaries`)."""

    mode: Mode
    kind: str
    request: SearchRequest


def point_limit(recipe: Recipe) -> int:
    """Points one turn search asks for: enough for `overfetch x max_candidates` episodes of
    `fragments_per_episode` points each."""
    search = recipe.search
    return max(
        1, math.ceil(search.max_candidates * search.overfetch * search.fragments_per_episode)
    )


def hit_fields(recipe: Recipe, window: TimeWindow | None) -> tuple[str, ...]:
    """The payload fields a turn hit carries: `created_at` too when the time boost reads it."""
    return WINDOW_FIELDS if window is not None and recipe.time.boost else HIT_FIELDS


def pass_requests(recipe: Recipe, probe: Probe) -> list[Labelled]:
    """Every search of one pass, in the order the pass reads their hits: the turn collections,
    the facts, then the summaries."""
    return [
        *_turn_requests(recipe, probe),
        *_fact_requests(recipe, probe),
        *_summary(recipe, probe),
    ]


def _turn_requests(recipe: Recipe, probe: Probe) -> list[Labelled]:
    limit = point_limit(recipe)
    fields = hit_fields(recipe, probe.window)
    out: list[Labelled] = []
    for kind in recipe.search.kinds:
        kind_limit = (
            max(1, math.ceil(limit * recipe.search.prospective_share))
            if kind == "prospective"
            else limit
        )
        if probe.dense is not None:
            request = SearchRequest(
                kind,
                dense=probe.dense,
                limit=kind_limit,
                score_threshold=recipe.search.similarity_floor,
                fields=fields,
            )
            out.append(Labelled("dense", kind, request))
        if probe.sparse is not None:
            request = SearchRequest(kind, sparse=probe.sparse, limit=kind_limit, fields=fields)
            out.append(Labelled("sparse", kind, request))
    return out


def _fact_requests(recipe: Recipe, probe: Probe) -> list[Labelled]:
    # Facts hold over spans, their history is `memory.retrieval.facts`'s.
    if not recipe.facts.on:
        return []
    limit = max(1, recipe.facts.limit * 2)
    out: list[Labelled] = []
    if probe.dense is not None:
        request = SearchRequest(
            "knowledge",
            dense=probe.dense,
            limit=limit,
            score_threshold=recipe.facts.similarity_floor,
            fields=FACT_FIELDS,
        )
        out.append(Labelled("dense", "knowledge", request))
    sparse = encode_query(fact_terms(probe.text)) if recipe.search.sparse else None
    if sparse is not None and sparse.indices:
        request = SearchRequest("knowledge", sparse=sparse, limit=limit, fields=FACT_FIELDS)
        out.append(Labelled("sparse", "knowledge", request))
    return out


def _summary(recipe: Recipe, probe: Probe) -> list[Labelled]:
    if not recipe.summaries.on or (probe.dense is None and probe.sparse is None):
        return []
    request = SearchRequest(
        "summaries",
        dense=probe.dense,
        sparse=probe.sparse,
        limit=recipe.summaries.hits,
        score_threshold=recipe.search.similarity_floor,  # an unrelated session expands to nothing
        fields=SUMMARY_FIELDS,
    )
    return [Labelled("hybrid", "summaries", request)]


async def session_turns(
    services: Services, tenant: str, found: list[VectorHit], recipe: Recipe, probe: Probe
) -> list[VectorHit]:
    """The best turns of the sessions whose summaries matched the query (`found`): one hit per
    turn (its best derivative's payload), scored summary match (relative to the best summary)
    / (1 + the turn's rank in its session); a turn in two sessions keeps its best."""
    sessions = [
        (hit.score, [str(u) for u in cast(list[object], hit.payload.get("episode_uids") or [])])
        for hit in found
    ]
    sessions = [(score, uids) for score, uids in sessions if uids and score > 0]
    if not sessions:
        return []
    requests = session_requests(recipe, probe, [uids for _, uids in sessions])
    turns = await services.vectors.search_many(tenant, requests)
    return ranked_session_turns([s for s, _ in sessions], turns, recipe.summaries.turns)


def session_requests(
    recipe: Recipe, probe: Probe, sessions: Sequence[list[str]]
) -> list[SearchRequest]:
    """One search of the derivatives per matched session (its episodes), with the pass's
    vectors and payload fields."""
    per_session = max(1, math.ceil(recipe.summaries.turns * recipe.search.fragments_per_episode))
    return [
        SearchRequest(
            "derivatives",
            dense=probe.dense,
            sparse=probe.sparse,
            limit=min(point_limit(recipe), per_session),
            filter=VectorFilter(episode_uids=uids),
            fields=hit_fields(recipe, probe.window),
        )
        for uids in sessions
    ]


def ranked_session_turns(
    scores: Sequence[float], turns: Sequence[Sequence[VectorHit]], per_session: int
) -> list[VectorHit]:
    """The first `per_session` distinct turns of each session's hits (best first), scored
    (session score / the best session's) / (1 + rank); a turn in two sessions keeps its best;
    best first, ties by id."""
    best = scores[0]
    out: dict[str, VectorHit] = {}
    for score, hits in zip(scores, turns, strict=True):
        ranked: list[VectorHit] = []
        for hit in hits:  # best first; a turn is its best fragment
            uid = str(hit.payload.get("episode_uid", ""))
            if uid and all(str(h.payload.get("episode_uid")) != uid for h in ranked):
                ranked.append(hit)
        for rank, hit in enumerate(ranked[:per_session]):
            value = (score / best) / (1 + rank)
            uid = str(hit.payload["episode_uid"])
            if uid not in out or value > out[uid].score:
                out[uid] = VectorHit(id=hit.id, score=value, payload=hit.payload)
    return sorted(out.values(), key=lambda h: (-h.score, h.id))
