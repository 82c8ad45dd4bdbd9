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
`search_many`. Counts see live points only, as the engines' corpus IDF does (archived points
included, as in the contract). docs/decisions.md has the measurement and the cost.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable

from qdrant_client import AsyncQdrantClient, models

from memory.stores.base import SparseVector
from memory.stores.qdrant_server import Endpoints

TERMS_FIELD = "sparse_terms"
"""Payload field (server only) holding the ids of a point's sparse terms; never returned."""


def bm25_idf(n_docs: int, with_term: int) -> float:
    """BM25's IDF of a term held by `with_term` of `n_docs` documents (never negative)."""
    return math.log(1.0 + (n_docs - with_term + 0.5) / (with_term + 0.5))


async def tenant_idf(
    nodes: Endpoints,
    collection: str,
    tenant: models.Filter,
    terms: Iterable[int],
    shard_key: models.ShardKeySelector | None = None,
) -> dict[int, float]:
    """idf(t) over the tenant's points of `collection` for each term (`tenant`: the filter
    that selects the tenant's points; `shard_key`: where they are, with tenant shards)."""
    wanted = sorted(set(terms))
    if not wanted:
        return {}

    async def count(condition: models.Condition | None) -> int:
        flt = models.Filter(
            must=[tenant] + ([condition] if condition is not None else []),
            must_not=None
            if condition is not None
            else [models.IsEmptyCondition(is_empty=models.PayloadField(key=TERMS_FIELD))],
        )
        return await nodes.call(lambda c: _count(c, collection, flt, shard_key))

    counts = await asyncio.gather(
        count(None),
        *(
            count(models.FieldCondition(key=TERMS_FIELD, match=models.MatchValue(value=t)))
            for t in wanted
        ),
    )
    n_docs = counts[0]
    return {t: bm25_idf(n_docs, n) for t, n in zip(wanted, counts[1:], strict=True)}


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
