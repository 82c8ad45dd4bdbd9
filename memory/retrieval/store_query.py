"""One store at a time: the two sides of the dual-store design queried on their own.

- **graph**: the query's words looked up as known entity names (whole-word matching, an index
  lookup: `memory.retrieval.associative`), then a traversal from those entities to the episodes that
  mention them (one hop: entity → episode, or entity → related entity → episode). Score: graph
  proximity in (0, 1], the share of the recognised entities (weighted by how specific each is)
  that reach the episode, closer hops weighing more.
- **vector**: dense similarity of the query's embedding to the episodes' fragments (the
  `derivatives` collection). Score: the best fragment's cosine similarity, in [-1, 1].

What `retrieve` fuses into one ranking, here apart, so a caller can see what each store finds.
Read-only; every read is the tenant's own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory.retrieval.associative import associate
from memory.services import Services

StoreName = Literal["graph", "vector"]
MAX_QUERY_K = 100


class QueryHit(BaseModel):
    """One episode a store found, best first."""

    model_config = ConfigDict(extra="forbid")

    uid: str
    text: str
    """The episode's text."""
    score: float
    """graph: proximity in (0, 1]; vector: cosine similarity of the best fragment."""
    created_at: datetime
    matched: str | None = None
    """vector: the fragment (or context window around the turn) that matched best; None on
    the graph side."""


class QueryResult(BaseModel):
    """What one store found for a query."""

    store: StoreName
    query: str
    entities: list[str]
    """graph: the entity names recognised in the query (empty on the vector side)."""
    results: list[QueryHit]


async def query_store(
    services: Services, tenant: str, store: StoreName, query: str, k: int
) -> QueryResult:
    """The tenant's `k` best episodes for `query` from one store alone, best first."""
    graph = services.graph
    entities: list[str] = []
    matched: dict[str, str] = {}
    if store == "graph":
        association = await associate(graph, tenant, query)
        entities = association.entities
        scores = association.proximity
    else:
        dense = (await services.embedder.embed_query(query)).tolist()
        scores = {}
        for hit in await services.vectors.search("derivatives", tenant, dense=dense, limit=4 * k):
            uid = str(hit.payload.get("episode_uid", ""))
            if uid and hit.score > scores.get(uid, float("-inf")):
                scores[uid] = hit.score
                matched[uid] = str(hit.payload.get("text", ""))
    best = sorted(scores, key=lambda uid: (-scores[uid], uid))[:k]
    episodes = {e.uid: e for e in await graph.episodes.get_many(tenant, best)}
    results = [
        QueryHit(
            uid=uid,
            text=episodes[uid].content,
            score=round(float(scores[uid]), 6),
            created_at=episodes[uid].created_at,
            matched=matched.get(uid),
        )
        for uid in best
        if uid in episodes
    ]
    return QueryResult(store=store, query=query, entities=entities, results=results)
