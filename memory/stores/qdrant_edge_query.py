"""Pure builders for the Qdrant Edge index: shard config, filters, query plans and points.

The Edge twin of `qdrant_query.py` (which builds qdrant-client models): the same filter
semantics, the same plans (nearest, RRF fusion) and the same point validation
with the same messages, expressed in `qdrant_edge` types. Nothing here touches a shard. Every
filter starts from the tenant condition; there is no builder without it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import qdrant_edge as qe

from memory.schema import DENSE_VECTOR, PAYLOAD_INDEXES, SPARSE_VECTOR, as_utc, clean_text
from memory.stores.base import SchemaMismatch, SparseVector, VectorFilter, VectorPoint
from memory.stores.qdrant_query import (
    OVERFETCH,
    REQUIRED_PAYLOAD,
    RRF_K,
    RRF_SCALE,
    encode_payload,
)
from memory.tenant import tenant_id

HNSW_M = 16
"""Edges per node of the HNSW graph (Qdrant's default)."""
HNSW_EF_CONSTRUCT = 128
"""Candidates kept while building the graph."""
HNSW_EF = 128
"""Candidates kept while searching it (recall@10 vs exact search:
docs/experiments/vector-engines.md)."""
SEARCH_THREADS = 1
"""Threads of each shard's search pool. The engine's default is one per CPU for every shard,
woken to read a shard's segments in parallel for each of a retrieval's seven searches; with
one, a search reads the segments in turn, and a retrieval cost 19 ms of CPU instead of 26 at
10k derivatives and 31-40 instead of 42-43 at 100k on 2 CPUs
(docs/experiments/retrieval-latency.md)."""
FULL_SCAN_KB = 10_000
"""Below this many KB of vectors matching a filter (~6,600 points of 384 floats) the engine
scores every candidate exactly instead of walking the graph; one person's memory stays exact."""


def shard_config(dim: int) -> qe.EdgeConfig:
    """The shard of one collection: cosine `dense` of `dim` floats + IDF `sparse`, HNSW tuned,
    one search thread. Given at every load too, so a shard made before a setting changed takes
    it (the engine checks the vectors' layout against it and rewrites its config file)."""
    return qe.EdgeConfig(
        vectors={DENSE_VECTOR: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
        sparse_vectors={SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        hnsw_config=qe.HnswIndexConfig(
            m=HNSW_M, ef_construct=HNSW_EF_CONSTRUCT, full_scan_threshold=FULL_SCAN_KB
        ),
        max_search_threads=SEARCH_THREADS,
    )


def payload_index(field: str) -> qe.PayloadSchemaType | qe.KeywordIndexParams:
    """The index schema of a field of `schema.PAYLOAD_INDEXES` (the tenant as a tenant index)."""
    if field == "tenant":
        return qe.KeywordIndexParams(is_tenant=True)
    kinds = {
        "keyword": qe.PayloadSchemaType.Keyword,
        "datetime": qe.PayloadSchemaType.Datetime,
        "bool": qe.PayloadSchemaType.Bool,
        "float": qe.PayloadSchemaType.Float,
    }
    return kinds[PAYLOAD_INDEXES[field]]


# --------------------------------------------------------------------------- filters


def edge_filter(
    tenant: str | None,
    flt: VectorFilter | None = None,
    *,
    episode_uid: str | None = None,
    ids: Sequence[str] | None = None,
    exclude_ids: Sequence[str] | None = None,
) -> qe.Filter:
    """The payload filter of a read or delete: the tenant (None only for maintenance) and more.

    Same semantics as `qdrant_query.tenant_filter`: with `flt`, archived points are excluded
    unless `flt.include_archived`; `created_from` is inclusive, `created_to` exclusive.
    """
    must: list[qe.FieldCondition | qe.HasIdCondition] = []
    must_not: list[qe.FieldCondition | qe.HasIdCondition] = []
    if tenant is not None:
        must.append(_match("tenant", tenant_id(tenant)))  # checked, never cleaned
    if episode_uid is not None:
        must.append(_match("episode_uid", clean_text(episode_uid)))
    if ids is not None:
        must.append(qe.HasIdCondition(set(ids)))
    if exclude_ids:
        must_not.append(qe.HasIdCondition(set(exclude_ids)))
    if flt is not None:
        if flt.episode_uids is not None:
            uids = [clean_text(u) for u in flt.episode_uids]
            must.append(qe.FieldCondition(key="episode_uid", match=qe.MatchAny(uids)))
        if flt.created_from is not None or flt.created_to is not None:
            window = qe.RangeDateTime(
                gte=as_utc(flt.created_from).isoformat() if flt.created_from else None,
                lt=as_utc(flt.created_to).isoformat() if flt.created_to else None,
            )
            must.append(qe.FieldCondition(key="created_at", range=window))
        if not flt.include_archived:
            must_not.append(_match("archived", True))
    return qe.Filter(must=list(must) or None, must_not=list(must_not) or None)


def _match(key: str, value: str | bool) -> qe.FieldCondition:
    if isinstance(value, bool):
        # qdrant-edge-py 0.9.0 turns a Python bool into the integer 1/0 (bool is an int), which
        # matches no boolean payload; a numpy bool comes through as a bool.
        return qe.FieldCondition(key=key, match=qe.MatchValue(cast(bool, np.bool_(value))))
    return qe.FieldCondition(key=key, match=qe.MatchValue(value))


# --------------------------------------------------------------------------- search plans


@dataclass(frozen=True, slots=True)
class EdgePlan:
    """One `QueryRequest` (minus limit and payload options) and the factor for its scores."""

    query: qe.Query | qe.Fusion
    prefetches: list[qe.Prefetch] | None
    params: qe.SearchParams | None
    score_threshold: float | None
    scale: float = 1.0
    """Multiply returned scores by this (normalises plain fused scores)."""


def plan_edge_search(
    *,
    dense: Sequence[float] | None,
    sparse: SparseVector | None,
    limit: int,
    flt: qe.Filter,
    idf_corpus: qe.Filter,
    score_threshold: float | None,
    hnsw_ef: int = HNSW_EF,
    exact: bool = False,
) -> EdgePlan:
    """Turn a search request into an Edge query: nearest or fused (RRF).

    The plans of `qdrant_query.plan_search`: dense legs search the graph with `hnsw_ef` (or
    exactly with `exact`), sparse legs compute IDF over `idf_corpus` (the tenant's points). `flt` goes on
    every leg as well as on the request. `score_threshold` is a floor on the dense side
    whenever a dense vector is given, before fusion; else on the BM25 score.
    """
    wide = limit * OVERFETCH
    dense_q = [float(x) for x in dense] if dense is not None else None
    sparse_q = (
        qe.SparseVector(list(sparse.indices), [float(v) for v in sparse.values])
        if sparse is not None and sparse.indices
        else None
    )
    if dense_q is None and sparse_q is None:
        raise ValueError("search needs a dense or a non-empty sparse query vector")
    dense_params = qe.SearchParams(hnsw_ef=hnsw_ef, exact=exact)
    sparse_params = qe.SearchParams(idf=qe.IdfParams(corpus=idf_corpus))

    if dense_q is not None and sparse_q is not None:
        legs = [
            qe.Prefetch(
                limit=wide,
                query=qe.Query.Nearest(dense_q, using=DENSE_VECTOR),
                params=dense_params,
                filter=flt,
                score_threshold=score_threshold,
            ),
            qe.Prefetch(
                limit=wide,
                query=qe.Query.Nearest(sparse_q, using=SPARSE_VECTOR),
                params=sparse_params,
                filter=flt,
            ),
        ]
        # The stubs do not declare Fusion.Rrf a Fusion; the engine takes it as one.
        rrf = cast(qe.Fusion, qe.Fusion.Rrf(k=RRF_K))
        return EdgePlan(rrf, legs, None, None, RRF_SCALE)
    if dense_q is not None:
        return EdgePlan(
            qe.Query.Nearest(dense_q, using=DENSE_VECTOR), None, dense_params, score_threshold
        )
    assert sparse_q is not None
    return EdgePlan(
        qe.Query.Nearest(sparse_q, using=SPARSE_VECTOR), None, sparse_params, score_threshold
    )


# --------------------------------------------------------------------------- points


def edge_point(point: VectorPoint, *, dim: int, fingerprint: str) -> qe.Point:
    """Validate a point and convert it; raise before anything is written.

    The checks and messages of `qdrant_query.point_struct`: a dense vector of the wrong length
    is a `SchemaMismatch`; a bad id, payload or vector is a `ValueError`. An empty sparse vector
    is left out of the point.
    """
    if len(point.dense) != dim:
        raise SchemaMismatch(
            f"point {point.id} has a {len(point.dense)}-dimensional dense vector but the index of "
            f"embedder {fingerprint} expects {dim}; embed with the configured embedder (or run "
            f"`mneme reindex` after changing it)"
        )
    try:
        uuid.UUID(point.id)
    except (ValueError, TypeError, AttributeError):
        raise ValueError(
            f"point id {point.id!r} is not a UUID; derive it with schema.stable_uid(...)"
        ) from None
    try:
        dense_arr = np.asarray(point.dense, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"point {point.id} has a dense vector that is not numbers") from None
    if not np.isfinite(dense_arr).all():
        raise ValueError(f"point {point.id} has NaN or infinite values in its dense vector")
    missing = [k for k in REQUIRED_PAYLOAD if not isinstance(point.payload.get(k), str)]
    if missing:
        raise ValueError(
            f"point {point.id} needs string payload fields {list(REQUIRED_PAYLOAD)}; "
            f"missing or invalid: {missing}"
        )
    tenant_id(point.payload["tenant"], name=f"point {point.id}'s tenant")  # never cleaned
    vector: dict[str, list[float] | qe.SparseVector | list[list[float]]] = {
        DENSE_VECTOR: dense_arr.tolist()
    }
    sparse = point.sparse
    if sparse is not None and sparse.indices:
        if (
            len(sparse.indices) != len(sparse.values)
            or len(set(sparse.indices)) != len(sparse.indices)
            or not all(math.isfinite(v) for v in sparse.values)
        ):
            raise ValueError(
                f"point {point.id} has a malformed sparse vector (unique indices, one finite "
                f"value each); build it with memory.text.sparse.encode_document"
            )
        vector[SPARSE_VECTOR] = qe.SparseVector(
            [int(i) for i in sparse.indices], [float(v) for v in sparse.values]
        )
    try:
        return qe.Point(point.id, vector, encode_payload(point.payload))
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(
            f"point {point.id} has a payload the engine cannot store ({exc}); use JSON values "
            f"(str, int, float, bool, None, lists, dicts) and datetimes"
        ) from None
