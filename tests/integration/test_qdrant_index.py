"""What is particular to `QdrantIndex` (qdrant-client): server connection failures, the
server-style query plans, local mode's status. The backend-agnostic contract, local mode and a
real server included, is `tests/contract/test_vectors.py`; a real server's particulars are
`test_qdrant_server.py`."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.embeddings.embedders import Embedder
from memory.schema import collection_name, stable_uid
from memory.stores.base import (
    StoreUnavailable,
    VectorFilter,
    VectorHit,
    VectorPoint,
)
from memory.stores.qdrant import QdrantIndex
from memory.text.sparse import encode_document, encode_query

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

CORPUS = {
    "pet": "My dog Rex loves chasing tennis balls in the park every morning.",
    "job": "I work night shifts as a nurse at the city hospital.",
    "travel": "Paris is my favourite city for holidays, especially in spring.",
    "allergy": "I am allergic to peanuts and shellfish, so I avoid satay.",
    "music": "I have played the cello in an amateur orchestra for ten years.",
    "code": "The deploy failed because the Kubernetes pod ran out of memory.",
}
"""Texts by key; episode uid = key, created_at = T0 + i days (in this order)."""


@pytest.fixture(scope="module")
async def vectors(embedder: Embedder) -> dict[str, list[float]]:
    """The corpus embedded once for the module."""
    rows = await embedder.embed_documents(list(CORPUS.values()))
    return {key: rows[i].tolist() for i, key in enumerate(CORPUS)}


@pytest.fixture
async def index(embedder: Embedder) -> AsyncIterator[QdrantIndex]:
    """A fresh in-memory index for the session's embedder, set up."""
    idx = await QdrantIndex.open(":memory:", fingerprint=embedder.fingerprint, dim=embedder.dim)
    await idx.setup()
    yield idx
    await idx.close()


def make_point(
    tenant: str,
    key: str,
    vec: list[float],
    *,
    text: str | None = None,
    kind_tag: str = "d",
    **payload: object,
) -> VectorPoint:
    """A derivative-like point of episode `key` for `tenant`."""
    text = CORPUS[key] if text is None else text
    keys = list(CORPUS)
    created = T0 + timedelta(days=keys.index(key) if key in keys else 0)
    return VectorPoint(
        id=stable_uid(tenant, key, kind_tag),
        dense=vec,
        sparse=encode_document(text),
        payload={
            "tenant": tenant,
            "episode_uid": key,
            "text": text,
            "created_at": created,
            **payload,
        },
    )


async def load_corpus(index: QdrantIndex, tenant: str, vectors: dict[str, list[float]]) -> None:
    """Upsert the whole corpus for one tenant."""
    await index.upsert("derivatives", [make_point(tenant, k, vectors[k]) for k in CORPUS])


def episodes(hits: list[VectorHit]) -> list[object]:
    """The episode uid of each hit, in order."""
    return [h.payload["episode_uid"] for h in hits]


# --------------------------------------------------------------------------- server mode


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections but never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


async def test_a_server_that_does_not_answer_fails_fast(silent_port: int) -> None:
    url = f"http://127.0.0.1:{silent_port}"
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match=rf"QDRANT_URL={url} does not answer") as err:
        await QdrantIndex.open(url, fingerprint="f_384", dim=384, timeout_s=1.0)
    assert time.monotonic() - started < 2.5
    assert "unset QDRANT_URL" in str(err.value)


async def test_a_refused_server_connection_fails_fast() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends: nothing listens
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="QDRANT_URL"):
        await QdrantIndex.open(f"http://127.0.0.1:{port}", fingerprint="f_384", dim=384)
    assert time.monotonic() - started < 2.5


async def test_server_style_plans_give_the_same_results(
    index: QdrantIndex, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    """Server mode repeats the filter on every prefetch; local mode relies on propagation.

    Both plans must be valid requests with identical results in local mode (the server itself
    runs them in the contract suite and `test_qdrant_server.py`).
    """
    await load_corpus(index, "t", vectors)
    await load_corpus(index, "u", vectors)
    qv = (await embedder.embed_query("holiday in a city")).tolist()
    kwargs = {
        "dense": qv,
        "sparse": encode_query("city holidays"),
        "limit": 4,
        "filter": VectorFilter(created_to=T0 + timedelta(days=4)),
    }
    local = await index.search("derivatives", "t", **kwargs)  # type: ignore[arg-type]
    index.server = True  # only the plan changes: filters on every prefetch
    try:
        server = await index.search("derivatives", "t", **kwargs)  # type: ignore[arg-type]
    finally:
        index.server = False
    assert [(h.id, round(h.score, 5)) for h in server] == [(h.id, round(h.score, 5)) for h in local]
    assert {h.payload["tenant"] for h in server} == {"t"}


async def test_describe_reports_local_mode(
    index: QdrantIndex, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    await load_corpus(index, "t", vectors)
    status = await index.describe()
    assert status.backend == "qdrant" and status.location == ":memory:"
    assert "nothing survives" in status.durability
    by_name = {c.name: c.points for c in status.collections}
    assert by_name[collection_name("derivatives", embedder.fingerprint)] == len(CORPUS)
