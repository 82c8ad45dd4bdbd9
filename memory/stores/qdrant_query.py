"""Pure builders for the Qdrant index: filters, query plans and payload conversion.

Kept apart from `qdrant.py` so that the index reads as I/O and this module as data: nothing here
talks to Qdrant. Every filter starts from the tenant condition; there is no builder without it.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from qdrant_client import models

from memory.schema import (
    DENSE_VECTOR,
    PAYLOAD_INDEXES,
    SPARSE_VECTOR,
    as_utc,
    clean_text,
)
from memory.stores.base import SchemaMismatch, SparseVector, VectorFilter, VectorPoint
from memory.stores.qdrant_idf import TERMS_FIELD
from memory.tenant import tenant_id

RRF_K = 60
"""Reciprocal-rank-fusion constant (docs/design.md section 5); Qdrant's own default is 2."""
RRF_SCALE = RRF_K / 2
"""Fused scores are multiplied by this so that first place in both lists (2/k) scores 1.0, the
top of a cosine's scale, instead of a raw RRF score (≤ 0.033)."""
OVERFETCH = 2
"""Each prefetch returns OVERFETCH × limit candidates for fusion."""
REQUIRED_PAYLOAD = ("tenant", "episode_uid", "text")

_DATETIME_KEYS = frozenset(k for k, t in PAYLOAD_INDEXES.items() if t == "datetime")


def tenant_filter(
    tenant: str | None,
    flt: VectorFilter | None = None,
    *,
    episode_uid: str | None = None,
    ids: Sequence[str] | None = None,
    exclude_ids: Sequence[str] | None = None,
) -> models.Filter:
    """The payload filter of a read or delete: the tenant (None only for maintenance) and more.

    With `flt`, archived points are excluded unless `flt.include_archived` (a point without an
    `archived` field counts as not archived); `created_from` is inclusive, `created_to` exclusive.
    """
    must: list[models.Condition] = []
    must_not: list[models.Condition] = []
    # The tenant is checked, never cleaned (`memory.tenant`; a valid id is one clean_text keeps
    # as it is); other identifiers are matched as stored: payload strings are cleaned on upsert.
    if tenant is not None:
        must.append(_match("tenant", tenant_id(tenant)))  # checked, never cleaned
    if episode_uid is not None:
        must.append(_match("episode_uid", clean_text(episode_uid)))
    if ids is not None:
        must.append(models.HasIdCondition(has_id=list(ids)))
    if exclude_ids:
        must_not.append(models.HasIdCondition(has_id=list(exclude_ids)))
    if flt is not None:
        if flt.episode_uids is not None:
            must.append(
                models.FieldCondition(
                    key="episode_uid",
                    match=models.MatchAny(any=[clean_text(u) for u in flt.episode_uids]),
                )
            )
        if flt.created_from is not None or flt.created_to is not None:
            must.append(
                models.FieldCondition(
                    key="created_at",
                    range=models.DatetimeRange(
                        gte=as_utc(flt.created_from) if flt.created_from else None,
                        lt=as_utc(flt.created_to) if flt.created_to else None,
                    ),
                )
            )
        if not flt.include_archived:
            must_not.append(_match("archived", True))
    return models.Filter(must=must or None, must_not=must_not or None)


def _match(key: str, value: str | bool) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """Keyword arguments of one `query_points` call (minus collection and payload options)."""

    query: models.Query | list[float] | models.SparseVector
    using: str | None
    prefetch: list[models.Prefetch] | None
    score_threshold: float | None
    scale: float = 1.0
    """Multiply returned scores by this (normalises plain fused scores)."""


def plan_search(
    *,
    dense: Sequence[float] | None,
    sparse: SparseVector | None,
    limit: int,
    flt: models.Filter,
    score_threshold: float | None,
    filter_prefetches: bool = True,
) -> QueryPlan:
    """Turn a search request into a query: nearest or fused (RRF).

    The caller passes `flt` as the top-level filter too; Qdrant propagates it into every
    prefetch. `filter_prefetches` repeats it on each prefetch as well (belt and braces on a
    server, where indexed conditions cost nothing); local mode evaluates each condition in Python
    per point, so there it is left to propagation, which halves the cost of a fused search.

    `score_threshold` is a similarity floor on the *dense* side (cosine) whenever a dense vector
    is given, applied before fusion; sparse-only searches apply it to the BM25 score.
    """
    leaf_filter = flt if filter_prefetches else None
    wide = limit * OVERFETCH
    dense_q = [float(x) for x in dense] if dense is not None else None
    sparse_q = (
        models.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
        if sparse is not None and sparse.indices
        else None
    )
    if dense_q is None and sparse_q is None:
        raise ValueError("search needs a dense or a non-empty sparse query vector")

    if dense_q is not None and sparse_q is not None:
        legs = [
            models.Prefetch(
                query=dense_q,
                using=DENSE_VECTOR,
                limit=wide,
                filter=leaf_filter,
                score_threshold=score_threshold,
            ),
            models.Prefetch(query=sparse_q, using=SPARSE_VECTOR, limit=wide, filter=leaf_filter),
        ]
        return QueryPlan(models.RrfQuery(rrf=models.Rrf(k=RRF_K)), None, legs, None, RRF_SCALE)
    if dense_q is not None:
        return QueryPlan(dense_q, DENSE_VECTOR, None, score_threshold)
    assert sparse_q is not None
    return QueryPlan(sparse_q, SPARSE_VECTOR, None, score_threshold)


# --------------------------------------------------------------------------- points


def point_struct(
    point: VectorPoint, *, dim: int, fingerprint: str, terms: bool = False
) -> models.PointStruct:
    """Validate a point and convert it; raise before anything is written.

    A dense vector of the wrong length is a `SchemaMismatch` (another embedder made it); a bad
    id, payload or vector is a `ValueError`. An empty sparse vector is left out of the point.
    With `terms` (a server) the payload also lists the sparse term ids (`qdrant_idf`).
    """
    if len(point.dense) != dim:
        raise SchemaMismatch(
            f"point {point.id} has a {len(point.dense)}-dimensional dense vector but the index of "
            f"embedder {fingerprint} expects {dim}; embed with the configured embedder (or run "
            f"`mneme reindex` after changing it)"
        )
    try:
        uuid.UUID(point.id)
    except (ValueError, TypeError):
        raise ValueError(
            f"point id {point.id!r} is not a UUID; derive it with schema.stable_uid(...)"
        ) from None
    dense = [float(x) for x in point.dense]
    if not all(math.isfinite(x) for x in dense):
        raise ValueError(f"point {point.id} has NaN or infinite values in its dense vector")
    missing = [k for k in REQUIRED_PAYLOAD if not isinstance(point.payload.get(k), str)]
    if missing:
        raise ValueError(
            f"point {point.id} needs string payload fields {list(REQUIRED_PAYLOAD)}; "
            f"missing or invalid: {missing}"
        )
    tenant_id(point.payload["tenant"], name=f"point {point.id}'s tenant")  # never cleaned
    sparse = point.sparse
    if sparse is None or not sparse.indices:
        vector: models.VectorStruct = {DENSE_VECTOR: dense}
    else:
        if (
            len(sparse.indices) != len(sparse.values)
            or len(set(sparse.indices)) != len(sparse.indices)
            or not all(math.isfinite(v) for v in sparse.values)
        ):
            raise ValueError(
                f"point {point.id} has a malformed sparse vector (unique indices, one finite "
                f"value each); build it with memory.text.sparse.encode_document"
            )
        vector = {DENSE_VECTOR: dense, SPARSE_VECTOR: sparse_model(sparse)}
    payload = encode_payload(point.payload)
    if terms:
        payload[TERMS_FIELD] = sorted(sparse.indices) if sparse is not None else []
    return models.PointStruct(id=point.id, vector=vector, payload=payload)


# --------------------------------------------------------------------------- payloads


def encode_payload(payload: dict[str, object]) -> dict[str, object]:
    """Payload as stored: strings cleaned (`schema.clean_text`), datetimes as ISO-8601 UTC."""
    return {clean_text(k): _encode_value(v) for k, v in payload.items()}


def _encode_value(value: object) -> object:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, datetime):
        return as_utc(value).isoformat()
    if isinstance(value, dict):
        return {clean_text(str(k)): _encode_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode_value(v) for v in value]
    return value


def decode_payload(payload: dict[str, object] | None) -> dict[str, object]:
    """Payload as returned: datetime-indexed fields (`created_at`) back to aware datetimes."""
    out = dict(payload or {})
    for key in _DATETIME_KEYS:
        value = out.get(key)
        if isinstance(value, str):
            try:
                out[key] = as_utc(datetime.fromisoformat(value))
            except ValueError:
                pass  # not ours to reject on the way out; it is returned as stored
    return out


def sparse_model(vector: SparseVector) -> models.SparseVector:
    """A qdrant-client sparse vector."""
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))
