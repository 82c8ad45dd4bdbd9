"""BM25's IDF over one tenant's points on a Qdrant server, computed here from exact counts.

The score contract (`VectorIndex.search`) takes IDF over the tenant's own points, so another
tenant's data never moves a tenant's scores. Qdrant Edge and local mode compute it in the engine
(`SearchParams.idf` with the tenant as corpus); a server before Qdrant 1.19 does not know that
parameter and ignores it silently (measured on 1.18.3: collection-wide IDF, every tenant's
points counted). So on a server the sparse vectors carry no `Modifier.IDF`, each point lists its
term ids in the `sparse_terms` payload field (an integer index, no HNSW), and a sparse query's
weights are multiplied here by

    idf(t) = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))

with N the tenant's points that have a sparse vector and n(t) those holding t: exact counts,
one per distinct term and collection, run concurrently and shared by every request of one
`search_many`, and kept by this process for `CACHE_S` seconds (`TermCounts`; its own writes
drop them at once). Counts see live points only, as the engines' corpus IDF does (archived
points included, as in the contract). docs/adr/0130 has the reasons, docs/experiments/qdrant-server.md the cost.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterable

from qdrant_client import AsyncQdrantClient, models

from memory.stores.base import SparseVector
from memory.stores.qdrant_server import Endpoints

TERMS_FIELD = "sparse_terms"
"""Payload field (server only) holding the ids of a point's sparse terms; never returned."""
CACHE_S = 30.0
"""How long this process reuses a count (`TermCounts`)."""


def bm25_idf(n_docs: int, with_term: int) -> float:
    """BM25's IDF of a term held by `with_term` of `n_docs` documents (never negative)."""
    return math.log(1.0 + (n_docs - with_term + 0.5) / (with_term + 0.5))


class TermCounts:
    """The counts behind a tenant's IDF, cached by this process for `ttl_s` seconds.

    Each count is one request; a fused search of four collections with six query terms costs
    28 of them, most of the search's time, while a tenant's term statistics barely move from one
    minute to the next. So counts are kept for `ttl_s` seconds and dropped at once when this
    index writes (its `generation` moves): what this process wrote counts at its next search,
    another process's writes at most `ttl_s` later.
    """

    def __init__(self, ttl_s: float = CACHE_S, max_entries: int = 100_000) -> None:
        """An empty cache."""
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[tuple[str, str, int | None], tuple[float, int]] = {}
        self._generation: int | None = None

    async def idf(
        self,
        nodes: Endpoints,
        collection: str,
        tenant: str,
        tenant_filter: models.Filter,
        terms: Iterable[int],
        *,
        generation: int,
        shard_key: models.ShardKeySelector | None = None,
    ) -> dict[int, float]:
        """The idf of each term over the tenant's points of `collection` (`tenant_filter` selects
        them; `shard_key`: where they are, with tenant shards)."""
        wanted = sorted(set(terms))
        if not wanted:
            return {}
        if generation != self._generation or len(self._entries) > self.max_entries:
            self._entries.clear()
            self._generation = generation
        now = time.monotonic()
        keys: list[int | None] = [None, *wanted]  # None: the tenant's documents
        fresh = {
            k: hit[1]
            for k in keys
            if (hit := self._entries.get((collection, tenant, k))) is not None and hit[0] > now
        }
        missing = [k for k in keys if k not in fresh]

        async def count(term: int | None) -> int:
            if term is None:
                flt = models.Filter(
                    must=[tenant_filter],
                    must_not=[
                        models.IsEmptyCondition(is_empty=models.PayloadField(key=TERMS_FIELD))
                    ],
                )
            else:
                flt = models.Filter(
                    must=[
                        tenant_filter,
                        models.FieldCondition(key=TERMS_FIELD, match=models.MatchValue(value=term)),
                    ]
                )
            return await nodes.call(lambda c: _count(c, collection, flt, shard_key))

        counted = await asyncio.gather(*(count(k) for k in missing))
        expires = now + self.ttl_s
        for k, n in zip(missing, counted, strict=True):
            fresh[k] = n
            self._entries[(collection, tenant, k)] = (expires, n)
        n_docs = fresh[None]
        return {t: bm25_idf(n_docs, fresh[t]) for t in wanted}


async def _count(
    client: AsyncQdrantClient,
    collection: str,
    flt: models.Filter,
    shard_key: models.ShardKeySelector | None,
) -> int:
    result = await client.count(
        collection, count_filter=flt, exact=True, shard_key_selector=shard_key
    )
    return result.count


def weighted(query: SparseVector, idf: dict[int, float]) -> SparseVector:
    """The query with each term's weight multiplied by its IDF."""
    return SparseVector(
        query.indices, tuple(v * idf[t] for t, v in zip(query.indices, query.values, strict=True))
    )
