"""The vector index contract (`memory.stores.vectors.VectorIndex`) on every vector backend.

qdrant-client local mode, Qdrant Edge and a real Qdrant server (over REST and over gRPC, with an
API key), with real all-MiniLM-L6-v2 embeddings and the real sparse encoder;
`test_backends_agree` runs one workload on every one of them and compares them point by point.
Edge-only at the end: a killed writer loses no acknowledged point.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memory.embeddings.embedders import Embedder
from memory.schema import VECTOR_KINDS, VectorKind, clean_text, collection_name, stable_uid
from memory.stores.base import (
    SchemaMismatch,
    SearchRequest,
    SparseVector,
    StoreUnavailable,
    VectorFilter,
    VectorHit,
    VectorPoint,
)
from memory.stores.qdrant import QdrantIndex
from memory.stores.qdrant_edge import EdgeIndex
from memory.stores.vectors import SCORE_TOLERANCE, VectorIndex
from memory.tenant import InvalidTenant
from memory.text.sparse import encode_document, encode_query
from tests.conftest import QdrantServer, wipe_qdrant
from tests.contract._support import BAD_TENANTS
from tests.contract.conftest import OpenIndex

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

LOCKED_PHRASE = {
    "qdrant-local": "only one process can open a local Qdrant directory",
    "qdrant-edge": "only one process can open a Qdrant Edge directory",
}


@pytest.fixture(scope="module")
async def vectors(embedder: Embedder) -> dict[str, list[float]]:
    """The corpus embedded once for the module."""
    rows = await embedder.embed_documents(list(CORPUS.values()))
    return {key: rows[i].tolist() for i, key in enumerate(CORPUS)}


@pytest.fixture
async def index(open_index: OpenIndex, embedder: Embedder) -> VectorIndex:
    """A fresh index of the backend under test for the session's embedder, set up."""
    idx = await open_index(embedder.fingerprint, embedder.dim)
    await idx.setup()
    return idx


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


async def load_corpus(index: VectorIndex, tenant: str, vectors: dict[str, list[float]]) -> None:
    """Upsert the whole corpus for one tenant."""
    await index.upsert("derivatives", [make_point(tenant, k, vectors[k]) for k in CORPUS])


def episodes(hits: list[VectorHit]) -> list[object]:
    """The episode uid of each hit, in order."""
    return [h.payload["episode_uid"] for h in hits]


# --------------------------------------------------------------------------- schema


async def test_setup_is_idempotent_and_names_collections_by_fingerprint(
    index: VectorIndex, embedder: Embedder
) -> None:
    await index.setup()
    await index.setup()
    expected = sorted(collection_name(k, embedder.fingerprint) for k in VECTOR_KINDS)
    assert await index.collections() == expected
    assert await index.missing_collections() == []
    status = await index.describe()
    assert status.backend == index.backend and status.fingerprint == embedder.fingerprint
    assert [c.name for c in status.collections] == expected
    assert all(c.points == 0 for c in status.collections)


async def test_reads_before_setup_are_empty_and_upsert_sets_up(
    open_index: OpenIndex, embedder: Embedder, vectors: dict[str, list[float]]
) -> None:
    idx = await open_index(embedder.fingerprint, embedder.dim)
    if isinstance(idx, QdrantIndex) and idx.server:
        await idx.drop_collections(None)  # the fixture keeps empty ones between tests
    assert len(await idx.missing_collections()) == len(VECTOR_KINDS)
    assert await idx.search("derivatives", "t", dense=vectors["pet"]) == []
    assert await idx.count("derivatives", "t") == 0
    assert await idx.scroll_episode_uids("derivatives", None) == set()
    await idx.delete_by_episode("t", "pet")  # nothing to delete, no error
    await idx.upsert("derivatives", [make_point("t", "pet", vectors["pet"])])
    assert await idx.count("derivatives", "t") == 1
    assert await idx.missing_collections() == []


async def test_another_embedders_collections_are_a_schema_mismatch(
    open_index: OpenIndex, tmp_path: Path, embedder: Embedder, vectors: dict[str, list[float]]
) -> None:
    path = tmp_path / "vectors"
    old = await open_index(embedder.fingerprint, embedder.dim, path)
    await old.setup()
    await old.upsert("derivatives", [make_point("t", "pet", vectors["pet"])])
    await old.close()

    new = await open_index("text-embedding-3-small_384", 384, path)
    with pytest.raises(SchemaMismatch) as err:
        await new.setup()
    message = str(err.value)
    assert embedder.fingerprint in message and "text-embedding-3-small_384" in message
    assert "mneme reindex" in message and "MNEME_EMBEDDING_MODEL" in message
    with pytest.raises(SchemaMismatch):  # writes never slip past the check
        await new.upsert("derivatives", [make_point("t", "pet", vectors["pet"])])
    # The reindex path: this embedder's collections are built beside the old ones, which stay.
    await new.setup(rebuild=True)
    await new.upsert("derivatives", [make_point("t", "pet", vectors["pet"][:384])])
    assert await new.count("derivatives", "t") == 1
    assert sum(n.endswith(embedder.fingerprint) for n in await new.collections()) == len(
        VECTOR_KINDS
    )
    await new.setup()  # once built, another embedder's collections beside them are no error
    await new.close()
    back = await open_index(embedder.fingerprint, embedder.dim, path)
    await back.setup()  # switching back finds the old vectors untouched
    assert await back.count("derivatives", "t") == 1


async def test_same_name_with_another_dimension_is_a_schema_mismatch(
    open_index: OpenIndex, tmp_path: Path
) -> None:
    path = tmp_path / "vectors"
    first = await open_index("custom_384", 384, path)
    await first.setup()
    await first.close()
    second = await open_index("custom_384", 512, path)
    with pytest.raises(SchemaMismatch, match=r"384-dimensional.*produces 512"):
        await second.setup()
    assert await second.drop_collections(None)
    await second.setup()
    assert await second.missing_collections() == []


async def test_on_disk_index_persists_across_reopen(
    open_index: OpenIndex, tmp_path: Path, embedder: Embedder, vectors: dict[str, list[float]]
) -> None:
    path = tmp_path / "vectors"
    idx = await open_index(embedder.fingerprint, embedder.dim, path)
    await idx.setup()
    await load_corpus(idx, "t", vectors)
    await idx.close()
    again = await open_index(embedder.fingerprint, embedder.dim, path)
    assert await again.count("derivatives", "t") == len(CORPUS)  # readable before setup
    await again.setup()
    hits = await again.search("derivatives", "t", dense=vectors["job"], limit=1)
    assert episodes(hits) == ["job"]


SHARED_READER = """
import asyncio, json, sys
from memory.stores.qdrant import QdrantIndex

async def main(url, key, grpc, fingerprint):
    index = await QdrantIndex.open(
        url, api_key=key, prefer_grpc=grpc == "grpc", grpc_port=int(sys.argv[5]),
        fingerprint=fingerprint, dim=384,
    )
    await index.setup()
    print(json.dumps(sorted(await index.scroll_episode_uids("derivatives", "t"))))
    await index.close()

asyncio.run(main(*sys.argv[1:5]))
"""


async def test_a_directory_held_by_another_process_is_a_clear_error(
    vector_backend: str,
    open_index: OpenIndex,
    tmp_path: Path,
    embedder: Embedder,
    vectors: dict[str, list[float]],
    request: pytest.FixtureRequest,
) -> None:
    path = tmp_path / "vectors"
    holder = await open_index(embedder.fingerprint, embedder.dim, path)
    await holder.setup()
    if vector_backend.startswith("qdrant-server"):
        # A server is what several processes share: another one opens it and reads our points.
        await load_corpus(holder, "t", vectors)
        server = request.getfixturevalue("qdrant_server")
        transport = "grpc" if vector_backend.endswith("grpc") else "http"
        args = [server.url, server.api_key or "", transport, embedder.fingerprint]
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            SHARED_READER,
            *args,
            str(server.grpc_port),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        assert json.loads(out) == sorted(CORPUS)
        return
    cls = {"qdrant-local": "qdrant:QdrantIndex", "qdrant-edge": "qdrant_edge:EdgeIndex"}
    module, name = cls[vector_backend].split(":")
    code = (
        "import asyncio, sys\n"
        f"from memory.stores.{module} import {name} as Index\n"
        "from memory.stores.base import StoreUnavailable\n"
        "try:\n"
        "    asyncio.run(Index.open(sys.argv[1], fingerprint='f_384', dim=384))\n"
        "except StoreUnavailable as exc:\n"
        "    print(exc)\n"
        "    sys.exit(3)\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        str(path),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 3, err.decode()
    message = out.decode()
    assert str(path) in message and LOCKED_PHRASE[vector_backend] in message
    assert "QDRANT_URL" in message and "Stop the other process" in message
    await holder.close()
    # Once released, the directory opens again, data intact.
    reopened = await open_index(embedder.fingerprint, embedder.dim, path)
    assert await reopened.missing_collections() == []


# --------------------------------------------------------------------------- writes


async def test_upsert_is_idempotent_by_id(
    index: VectorIndex, vectors: dict[str, list[float]]
) -> None:
    await load_corpus(index, "t", vectors)
    await load_corpus(index, "t", vectors)
    assert await index.count("derivatives", "t") == len(CORPUS)
    # Same id again with a new payload replaces the point.
    await index.upsert(
        "derivatives", [make_point("t", "pet", vectors["pet"], text="Rex is a beagle.")]
    )
    assert await index.count("derivatives", "t") == len(CORPUS)
    hits = await index.search("derivatives", "t", sparse=encode_query("beagle"), limit=3)
    assert [h.payload["text"] for h in hits] == ["Rex is a beagle."]


async def test_wrong_dimension_is_rejected_before_anything_is_written(
    index: VectorIndex, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    good = make_point("t", "pet", vectors["pet"])
    bad = make_point("t", "job", vectors["job"][:383])
    with pytest.raises(SchemaMismatch) as err:
        await index.upsert("derivatives", [good, bad])
    message = str(err.value)
    assert "383" in message and "384" in message and embedder.fingerprint in message
    assert await index.count("derivatives", "t") == 0
    with pytest.raises(SchemaMismatch, match="383 dimensions"):
        await index.search("derivatives", "t", dense=vectors["job"][:383])


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        ({"episode_uid": "e", "text": "x"}, "tenant"),
        ({"tenant": "", "episode_uid": "e", "text": "x"}, "tenant"),
        ({"tenant": "t", "text": "x"}, "episode_uid"),
        ({"tenant": "t", "episode_uid": "e"}, "text"),
    ],
)
async def test_points_need_tenant_episode_and_text(
    index: VectorIndex, vectors: dict[str, list[float]], payload: dict[str, object], match: str
) -> None:
    good = make_point("t", "pet", vectors["pet"])
    point = VectorPoint(id=stable_uid("x"), dense=vectors["pet"], sparse=None, payload=payload)
    with pytest.raises(ValueError, match=match):
        await index.upsert("derivatives", [good, point])
    assert await index.count("derivatives", "t") == 0


@pytest.mark.parametrize(
    ("dense", "sparse", "match"),
    [
        ([float("nan")] * 384, None, "NaN or infinite"),
        (None, SparseVector((1, 1), (0.5, 0.5)), "malformed sparse vector"),
        (None, SparseVector((1, 2), (0.5,)), "malformed sparse vector"),
        (None, SparseVector((1,), (float("inf"),)), "malformed sparse vector"),
    ],
)
async def test_malformed_vectors_are_rejected(
    index: VectorIndex,
    vectors: dict[str, list[float]],
    dense: list[float] | None,
    sparse: SparseVector | None,
    match: str,
) -> None:
    point = VectorPoint(
        id=stable_uid("x"),
        dense=dense or vectors["pet"],
        sparse=sparse,
        payload={"tenant": "t", "episode_uid": "e", "text": "x"},
    )
    with pytest.raises(ValueError, match=match):
        await index.upsert("derivatives", [point])
    assert await index.count("derivatives", "t") == 0


async def test_point_ids_must_be_uuids(index: VectorIndex, vectors: dict[str, list[float]]) -> None:
    point = VectorPoint(
        id="derivative-1",
        dense=vectors["pet"],
        sparse=None,
        payload={"tenant": "t", "episode_uid": "e", "text": "x"},
    )
    with pytest.raises(ValueError, match="stable_uid"):
        await index.upsert("derivatives", [point])


async def test_search_rejects_bad_arguments(
    index: VectorIndex, vectors: dict[str, list[float]]
) -> None:
    await load_corpus(index, "t", vectors)
    with pytest.raises(ValueError, match="limit must be at least 1"):
        await index.search("derivatives", "t", dense=vectors["pet"], limit=0)
    assert await index.search("derivatives", "t") == []  # no query vector: nothing
    assert await index.search("derivatives", "t", sparse=SparseVector((), ())) == []


async def test_delete_by_episode_covers_all_kinds_or_the_given_ones(
    index: VectorIndex, vectors: dict[str, list[float]]
) -> None:
    kinds: tuple[VectorKind, ...] = ("derivatives", "prospective", "knowledge")
    for kind in kinds:
        await index.upsert(kind, [make_point("t", k, vectors[k]) for k in ("pet", "job")])
    await index.delete_by_episode("t", "pet", kinds=["knowledge"])
    assert await index.count("knowledge", "t") == 1
    assert await index.count("derivatives", "t") == 2
    await index.delete_by_episode("t", "pet")
    for kind in kinds:
        assert await index.scroll_episode_uids(kind, "t") == {"job"}


async def test_every_write_bumps_the_generation(
    index: VectorIndex, vectors: dict[str, list[float]]
) -> None:
    start = index.generation
    await index.upsert("derivatives", [make_point("t", "pet", vectors["pet"])])
    assert index.generation > start
    after_upsert = index.generation
    await index.search("derivatives", "t", dense=vectors["pet"])
    await index.count("derivatives", "t")
    assert index.generation == after_upsert  # reads do not
    await index.delete_by_episode("t", "pet", kinds=["derivatives"])
    assert index.generation > after_upsert


async def test_delete_stale_keeps_the_listed_points(
    index: VectorIndex, vectors: dict[str, list[float]]
) -> None:
    a = make_point("t", "pet", vectors["pet"], kind_tag="0")
    b = make_point("t", "pet", vectors["pet"], kind_tag="1")
    other = make_point("t", "job", vectors["job"])
    await index.upsert("derivatives", [a, b, other])
    await index.delete_stale("derivatives", "t", "pet", keep_ids=[a.id])
    assert await index.count("derivatives", "t") == 2
    await index.delete_stale("derivatives", "t", "pet", keep_ids=[])
    assert await index.scroll_episode_uids("derivatives", "t") == {"job"}


# --------------------------------------------------------------------------- tenancy


async def test_identical_content_in_two_tenants_never_leaks(
    index: VectorIndex, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    await load_corpus(index, "alice", vectors)
    await load_corpus(index, "bob", vectors)
    query = "what is my job?"
    qv = (await embedder.embed_query(query)).tolist()
    for kwargs in (
        {"dense": qv},
        {"sparse": encode_query("nurse hospital")},
        {"dense": qv, "sparse": encode_query(query)},
        {"dense": qv, "sparse": encode_query(query), "filter": VectorFilter(created_from=T0)},
    ):
        hits = await index.search("derivatives", "alice", limit=20, **kwargs)  # type: ignore[arg-type]
        assert hits and {h.payload["tenant"] for h in hits} == {"alice"}
    assert await index.count("derivatives", "alice") == len(CORPUS)
    # Same episode uids in both tenants: deletes and scrolls stay inside one tenant.
    await index.delete_by_episode("alice", "job")
    await index.delete_points("derivatives", "alice", [stable_uid("bob", "pet", "d")])
    await index.delete_stale("derivatives", "alice", "travel", keep_ids=[])
    assert await index.count("derivatives", "bob") == len(CORPUS)
    assert await index.scroll_episode_uids("derivatives", "alice") == set(CORPUS) - {
        "job",
        "travel",
    }
    assert await index.scroll_episode_uids("derivatives", "bob") == set(CORPUS)
    assert await index.scroll_episode_uids("derivatives", None) == set(CORPUS)
    bob = await index.scroll_points("derivatives", "bob")
    assert len(bob) == len(CORPUS) and {h.payload["tenant"] for h in bob} == {"bob"}
    assert [h.id for h in bob] == sorted(h.id for h in bob)
    assert await index.search("derivatives", "carol", dense=qv) == []
    assert await index.count("derivatives", "carol") == 0


async def test_sparse_scores_depend_on_the_tenants_own_points_only(
    index: VectorIndex, vectors: dict[str, list[float]]
) -> None:
    """IDF is computed over the tenant's points: another tenant's writes never move them."""
    await load_corpus(index, "alice", vectors)
    query = encode_query("city hospital nurse")
    before = await index.search("derivatives", "alice", sparse=query, limit=5)
    noise = [
        make_point("bob", "job", vectors["job"], kind_tag=str(i), text="city city hospital")
        for i in range(40)
    ]
    await index.upsert("derivatives", noise)
    after = await index.search("derivatives", "alice", sparse=query, limit=5)
    assert [h.id for h in after] == [h.id for h in before]
    for a, b in zip(after, before, strict=True):
        assert a.score == pytest.approx(b.score, abs=SCORE_TOLERANCE)
    # And the tenant's own deletes do count at once (live statistics, not a stale index).
    await index.delete_by_episode("alice", "travel")
    fewer = await index.search("derivatives", "alice", sparse=query, limit=5)
    assert episodes(fewer) == ["job"]
    assert abs(fewer[0].score - before[0].score) > 0.01  # N and df("city") changed


# --------------------------------------------------------------------------- search


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What kind of pet do I have?", "pet"),
        ("Which foods should I not eat?", "allergy"),
        ("Why did the release break in production?", "code"),
        ("What instrument do I play?", "music"),
    ],
)
async def test_dense_and_fused_search_rank_the_right_text_first(
    index: VectorIndex,
    vectors: dict[str, list[float]],
    embedder: Embedder,
    query: str,
    expected: str,
) -> None:
    await load_corpus(index, "t", vectors)
    qv = (await embedder.embed_query(query)).tolist()
    dense = await index.search("derivatives", "t", dense=qv, limit=3)
    assert episodes(dense)[0] == expected
    fused = await index.search("derivatives", "t", dense=qv, sparse=encode_query(query), limit=3)
    assert episodes(fused)[0] == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [("peanuts", "allergy"), ("Kubernetes pod", "code"), ("orchestra cellos", "music")],
)
async def test_sparse_search_finds_exact_terms(
    index: VectorIndex, vectors: dict[str, list[float]], query: str, expected: str
) -> None:
    await load_corpus(index, "t", vectors)
    hits = await index.search("derivatives", "t", sparse=encode_query(query), limit=3)
    assert episodes(hits) == [expected]  # only documents sharing a term match


async def test_score_contract(
    index: VectorIndex, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    await load_corpus(index, "t", vectors)
    qv = await embedder.embed_query("nurse at a hospital")
    dense = await index.search("derivatives", "t", dense=qv.tolist(), limit=len(CORPUS))
    cosines = {k: float(np.dot(qv, vectors[k])) for k in CORPUS}
    for hit in dense:
        assert hit.score == pytest.approx(cosines[str(hit.payload["episode_uid"])], abs=1e-4)
    assert [h.score for h in dense] == sorted((h.score for h in dense), reverse=True)
    # Fused: first in both lists scores 1.0, and scores only go down.
    fused = await index.search(
        "derivatives", "t", dense=qv.tolist(), sparse=encode_query("nurse hospital"), limit=4
    )
    assert episodes(fused)[0] == "job"
    assert fused[0].score == pytest.approx(1.0, abs=SCORE_TOLERANCE)
    assert all(a.score >= b.score for a, b in zip(fused, fused[1:], strict=False))
    # Sparse: BM25 with IDF over the tenant's six points; "nurse" is in one of them.
    (hit,) = await index.search("derivatives", "t", sparse=encode_query("nurse"), limit=3)
    doc = encode_document(CORPUS["job"])
    term = encode_query("nurse").indices[0]
    idf = np.log(1 + (6 - 1 + 0.5) / (1 + 0.5))
    assert hit.score == pytest.approx(idf * doc.values[doc.indices.index(term)], rel=1e-5)
    # A dense similarity floor drops weak candidates.
    floored = await index.search("derivatives", "t", dense=qv.tolist(), score_threshold=0.3)
    assert floored and all(h.score >= 0.3 for h in floored)
    assert len(floored) < len(CORPUS)


async def test_search_many_answers_each_request_as_search_does(
    index: VectorIndex, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    await load_corpus(index, "t", vectors)
    await load_corpus(index, "u", vectors)  # another tenant with the same texts
    await index.upsert(
        "prospective",
        [
            make_point("t", k, vectors[k], kind_tag="q", derivative_text=CORPUS[k])
            for k in ("pet", "job", "music")
        ],
    )
    qv = (await embedder.embed_query("which instrument do I play?")).tolist()
    words = encode_query("orchestra cello hospital")
    window = VectorFilter(created_from=T0 + timedelta(days=1), created_to=T0 + timedelta(days=5))
    requests = [
        SearchRequest("derivatives", dense=qv, limit=4),
        SearchRequest("derivatives", sparse=words, limit=4),
        SearchRequest("prospective", dense=qv, sparse=words, limit=3),
        SearchRequest("derivatives", dense=qv, limit=6, score_threshold=0.1, fields=("text",)),
        SearchRequest("derivatives", dense=qv, sparse=words, filter=window),
        SearchRequest("knowledge", dense=qv, limit=5),  # an empty collection
        SearchRequest("derivatives", dense=qv, filter=VectorFilter(episode_uids=[])),
        SearchRequest("derivatives", sparse=SparseVector((), ())),  # an empty query
        SearchRequest(
            "prospective", sparse=words, limit=2, fields=("episode_uid", "derivative_text")
        ),
    ]
    batch = await index.search_many("t", requests)
    assert len(batch) == len(requests)
    assert batch[5] == batch[6] == batch[7] == []
    assert batch[0] and batch[1] and batch[2] and batch[8]
    for r, got in zip(requests, batch, strict=True):
        want = await index.search(
            r.kind,
            "t",
            dense=r.dense,
            sparse=r.sparse,
            limit=r.limit,
            filter=r.filter,
            score_threshold=r.score_threshold,
        )
        assert [h.id for h in got] == [h.id for h in want], r
        for g, w in zip(got, want, strict=True):
            assert g.score == pytest.approx(w.score, abs=SCORE_TOLERANCE), r
            for name in r.fields or tuple(w.payload):
                assert g.payload[name] == w.payload[name], (r, name)
    assert {h.payload["text"] for h in batch[3]} <= set(CORPUS.values())
    # Requests are checked before anything runs; nothing asked, nothing returned.
    with pytest.raises(ValueError, match="limit"):
        await index.search_many("t", [requests[0], SearchRequest("derivatives", dense=qv, limit=0)])
    with pytest.raises(SchemaMismatch):
        await index.search_many("t", [SearchRequest("derivatives", dense=[0.1, 0.2])])
    assert await index.search_many("t", []) == []


async def test_ties_come_in_id_order(index: VectorIndex, vectors: dict[str, list[float]]) -> None:
    copies = [make_point("t", "pet", vectors["pet"], kind_tag=str(i)) for i in range(12)]
    await index.upsert("derivatives", copies)
    ids = sorted(p.id for p in copies)
    for kwargs in ({"dense": vectors["pet"]}, {"sparse": encode_query("tennis balls")}):
        hits = await index.search("derivatives", "t", limit=5, **kwargs)  # type: ignore[arg-type]
        assert [h.id for h in hits] == ids[:5]


async def test_filters_by_episode_time_and_archived(
    index: VectorIndex, vectors: dict[str, list[float]]
) -> None:
    await load_corpus(index, "t", vectors)
    await index.upsert(
        "derivatives",
        [make_point("t", "job", vectors["job"], kind_tag="old", archived=True)],
    )
    qv = vectors["job"]

    def flt(**kw: object) -> VectorFilter:
        return VectorFilter(**kw)  # type: ignore[arg-type]

    hits = await index.search("derivatives", "t", dense=qv, limit=20)
    assert len(hits) == len(CORPUS)  # the archived copy is excluded by default
    hits = await index.search(
        "derivatives", "t", dense=qv, limit=20, filter=flt(include_archived=True)
    )
    assert len(hits) == len(CORPUS) + 1
    assert await index.count("derivatives", "t") == len(CORPUS) + 1  # count includes it
    hits = await index.search(
        "derivatives", "t", dense=qv, limit=20, filter=flt(episode_uids=["pet", "music"])
    )
    assert set(episodes(hits)) == {"pet", "music"}
    assert await index.search("derivatives", "t", dense=qv, filter=flt(episode_uids=[])) == []
    # created_at: T0 + i days in corpus order; the window is [from, to).
    window = flt(created_from=T0 + timedelta(days=1), created_to=T0 + timedelta(days=3))
    hits = await index.search("derivatives", "t", dense=qv, limit=20, filter=window)
    assert set(episodes(hits)) == {"job", "travel"}
    hits = await index.search(
        "derivatives",
        "t",
        dense=qv,
        sparse=encode_query("city"),
        limit=20,
        filter=window,
    )
    assert set(episodes(hits)) == {"job", "travel"}  # filters apply to every prefetch
    naive = flt(created_from=(T0 + timedelta(days=5)).replace(tzinfo=None))  # naive = UTC
    assert episodes(await index.search("derivatives", "t", dense=qv, filter=naive)) == ["code"]


async def test_read_vectors_returns_the_stored_vectors_of_the_tenants_points_by_id(
    index: VectorIndex, embedder: Embedder, vectors: dict[str, list[float]]
) -> None:
    """What was upserted comes back by id, unit length, with the fields asked for; another
    tenant's point, an unknown id and an absent collection are left out."""
    await load_corpus(index, "alice", vectors)
    old = make_point("alice", "code", vectors["code"], kind_tag="old", archived=True)
    await index.upsert("derivatives", [old])
    bob = make_point("bob", "pet", vectors["pet"])
    await index.upsert("derivatives", [bob])
    ids = {key: stable_uid("alice", key, "d") for key in CORPUS}
    unknown = stable_uid("alice", "nobody", "d")
    found = await index.read_vectors(
        "derivatives", "alice", [ids["job"], ids["pet"], bob.id, unknown, ids["job"]], ("text",)
    )
    assert set(found) == {ids["job"], ids["pet"]}
    assert set(await index.read_vectors("derivatives", "alice", [old.id])) == {old.id}
    for key in ("job", "pet"):
        point = found[ids[key]]
        assert point.id == ids[key]
        assert point.payload == {"text": CORPUS[key]}
        assert len(point.dense) == embedder.dim
        stored = np.asarray(point.dense)
        assert float(np.linalg.norm(stored)) == pytest.approx(1.0, abs=1e-5)
        want = np.asarray(vectors[key]) / np.linalg.norm(vectors[key])
        assert np.allclose(stored, want, atol=1e-5)
    # Bob reads his own point under the id Alice could not.
    (mine,) = (await index.read_vectors("derivatives", "bob", [bob.id])).values()
    assert mine.payload == {} and np.allclose(mine.dense, found[ids["pet"]].dense, atol=1e-5)
    assert await index.read_vectors("derivatives", "alice", []) == {}
    assert await index.read_vectors("reveries", "alice", [ids["job"]]) == {}


# --------------------------------------------------------------------------- payloads


HOSTILE = [
    'it\'s "quoted" and `ticked`',
    "}) DETACH DELETE n // '; DROP TABLE episodes; --",
    "control \x01\x02\x1b[31m red\ttab\nnewline\r",
    "nul\x00byte and lone \ud800 surrogate \udfff",
    "emoji 🧠 and RTL \u202eevil",
]


async def test_hostile_payloads_and_tenant_ids_round_trip(
    index: VectorIndex, embedder: Embedder
) -> None:
    tenant = "t'\"`}) DETACH DELETE n //"
    rows = await embedder.embed_documents(HOSTILE)
    points = [
        VectorPoint(
            id=stable_uid(tenant, str(i)),
            dense=rows[i].tolist(),
            sparse=encode_document(text),
            payload={
                "tenant": tenant,
                "episode_uid": f"ep-{i}\"'`",
                "text": text,
                "nested": {"k\ud800": [text]},
            },
        )
        for i, text in enumerate(HOSTILE)
    ]
    await index.upsert("derivatives", points)
    hits = await index.search("derivatives", tenant, dense=rows[0].tolist(), limit=10)
    assert {str(h.payload["text"]) for h in hits} == {clean_text(t) for t in HOSTILE}
    for hit in hits:
        text = str(hit.payload["text"])
        assert hit.payload["nested"] == {clean_text("k\ud800"): [text]}
        assert "\x00" not in text
    assert await index.scroll_episode_uids("derivatives", tenant) == {
        f"ep-{i}\"'`" for i in range(len(HOSTILE))
    }
    assert await index.count("derivatives", "t") == 0  # a prefix of the tenant id is not it


async def test_a_megabyte_payload_round_trips(
    index: VectorIndex, vectors: dict[str, list[float]]
) -> None:
    big = "x" * 1_000_000
    await index.upsert("derivatives", [make_point("t", "pet", vectors["pet"], text=big)])
    (hit,) = await index.search("derivatives", "t", dense=vectors["pet"], limit=1)
    assert hit.payload["text"] == big
    assert hit.payload["created_at"] == T0  # datetimes come back as aware datetimes


async def test_concurrent_calls_on_one_index(
    index: VectorIndex, vectors: dict[str, list[float]]
) -> None:
    await load_corpus(index, "t", vectors)
    results = await asyncio.gather(
        *(index.search("derivatives", "t", dense=vectors[k], limit=1) for k in CORPUS),
        index.upsert("derivatives", [make_point("u", "pet", vectors["pet"])]),
        index.count("derivatives", "t"),
    )
    assert [episodes(r)[0] for r in results[: len(CORPUS)]] == list(CORPUS)  # type: ignore[arg-type]
    assert results[-1] == len(CORPUS)


@pytest.mark.parametrize("bad", BAD_TENANTS.values(), ids=list(BAD_TENANTS))
async def test_a_tenant_id_that_breaks_the_rule_is_refused_never_cleaned(
    index: VectorIndex, vectors: dict[str, list[float]], bad: str
) -> None:
    # The ids a cleaning or trimming would turn into these: their points must stay untouched.
    for tenant in ("alice", "a" * 128, "Zo\u00e9"):
        await index.upsert("derivatives", [make_point(tenant, "pet", vectors["pet"])])
    point = make_point("alice", "job", vectors["job"])
    foreign = VectorPoint(point.id, point.dense, point.sparse, {**point.payload, "tenant": bad})
    with pytest.raises(InvalidTenant):
        await index.upsert("derivatives", [foreign])
    request = SearchRequest(kind="derivatives", dense=vectors["pet"])
    refused: list[Awaitable[object]] = [
        index.search("derivatives", bad, dense=vectors["pet"]),
        index.search_many(bad, [request]),
        index.count("derivatives", bad),
        index.scroll_points("derivatives", bad),
        index.scroll_episode_uids("derivatives", bad),
        index.delete_by_episode(bad, "pet"),
        index.delete_stale("derivatives", bad, "pet", []),
        index.delete_points("derivatives", bad, [point.id]),
        index.read_vectors("derivatives", bad, [point.id]),
    ]
    for call in refused:
        with pytest.raises(InvalidTenant):
            await call
    for tenant in ("alice", "a" * 128, "Zo\u00e9"):
        assert await index.count("derivatives", tenant) == 1
        (hit,) = await index.search("derivatives", tenant, dense=vectors["pet"])
        assert hit.payload["tenant"] == tenant


# --------------------------------------------------------------------------- across backends

SYLLABLES = "ka lo mi zu te ra po ni su ve da ho ki mu sa fe ro bi".split()
WORDS = [a + b for a in SYLLABLES for b in SYLLABLES]
"""324 made-up words, so that a query matches some documents of a tenant, not all."""


def _workload(n: int, dim: int) -> list[VectorPoint]:
    """Seeded points of three tenants: random unit vectors, sparse vectors of 2-6 words from
    `WORDS`, archived flags, dates."""
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    points = []
    for i in range(n):
        tenant = ("a", "b", "c")[i % 3]
        text = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 7))))
        payload: dict[str, object] = {
            "tenant": tenant,
            "episode_uid": f"e{i % 40}",
            "text": text,
            "created_at": T0 + timedelta(hours=i),
            "archived": bool(i % 11 == 0),
        }
        terms = encode_document(text).indices
        # Random term weights: no two documents tie inside a leg, where engines rank ties in
        # their own order before fusing (documented in `VectorIndex.search`).
        sparse = SparseVector(terms, tuple(float(v) for v in rng.random(len(terms)) + 0.1))
        points.append(VectorPoint(stable_uid(tenant, str(i)), rows[i].tolist(), sparse, payload))
    return points


def _same_payload(a: dict[str, object], b: dict[str, object]) -> bool:
    """Equal payloads, floats to one ulp: Edge parses payload JSON with a float parser that
    may round the last bit (0.9236575337124051 comes back as ...052)."""
    if a.keys() != b.keys():
        return False
    return all(
        a[k] == pytest.approx(b[k], rel=1e-15) if isinstance(b[k], float) else a[k] == b[k]
        for k in a
    )


async def test_backends_agree(tmp_path: Path, qdrant_server: QdrantServer) -> None:
    """One workload on every backend: same ids in the same order, scores within tolerance.

    Local mode is the reference; Edge and the server (REST and gRPC clients of one server,
    written once through REST) must return what it returns."""
    dim = 32
    await wipe_qdrant(qdrant_server)
    local = await QdrantIndex.open(":memory:", fingerprint="agree_32", dim=dim)
    edge = await EdgeIndex.open(tmp_path / "edge", fingerprint="agree_32", dim=dim)
    server = await QdrantIndex.open(
        qdrant_server.url, fingerprint="agree_32", dim=dim, **qdrant_server.index_args()
    )
    grpc = await QdrantIndex.open(
        qdrant_server.url, fingerprint="agree_32", dim=dim, **qdrant_server.index_args(grpc=True)
    )
    others: list[VectorIndex] = [edge, server, grpc]
    try:
        points = _workload(600, dim)
        for idx in (local, edge, server):
            await idx.setup()
            await idx.upsert("derivatives", points)
            await idx.delete_by_episode("a", "e3")
            await idx.delete_stale("derivatives", "b", "e4", keep_ids=[])
        rng = np.random.default_rng(3)
        window = VectorFilter(
            created_from=T0 + timedelta(hours=100), created_to=T0 + timedelta(hours=400)
        )
        compared = 0
        for q in range(12):
            dense = rng.standard_normal(dim).tolist()
            sparse = encode_query(" ".join(rng.choice(WORDS, size=3)))
            for kwargs in (
                {"dense": dense},
                {"sparse": sparse},
                {"dense": dense, "sparse": sparse},
                {"dense": dense, "score_threshold": 0.2},
                {"dense": dense, "sparse": sparse, "filter": window},
                {"sparse": sparse, "filter": VectorFilter(include_archived=True)},
                {"dense": dense, "filter": VectorFilter(episode_uids=["e1", "e2", "e5"])},
            ):
                tenant = ("a", "b", "c")[q % 3]
                want = await local.search("derivatives", tenant, limit=10, **kwargs)  # type: ignore[arg-type]
                for other in others:
                    got = await other.search("derivatives", tenant, limit=10, **kwargs)  # type: ignore[arg-type]
                    assert [h.id for h in got] == [h.id for h in want], (other.backend, kwargs)
                    for g, w in zip(got, want, strict=True):
                        assert g.score == pytest.approx(w.score, abs=SCORE_TOLERANCE), kwargs
                        assert _same_payload(g.payload, w.payload), kwargs
                    compared += len(want)
        assert compared > 1500
        for tenant in ("a", "b", "c"):
            theirs = await local.scroll_points("derivatives", tenant)
            for other in others:
                assert await other.count("derivatives", tenant) == await local.count(
                    "derivatives", tenant
                )
                mine = await other.scroll_points("derivatives", tenant)
                assert [h.id for h in mine] == [h.id for h in theirs]
                assert all(
                    _same_payload(a.payload, b.payload) for a, b in zip(mine, theirs, strict=True)
                )
    finally:
        for idx in (local, *others):
            await idx.close()


# --------------------------------------------------------------------------- Edge only

CRASH_WRITER = """
import asyncio, sys
import numpy as np
from memory.schema import stable_uid
from memory.stores.base import VectorPoint
from memory.stores.qdrant_edge import EdgeIndex

async def main(path):
    index = await EdgeIndex.open(path, fingerprint="crash_8", dim=8)
    await index.setup()
    rng = np.random.default_rng(0)
    for batch in range(10_000):
        ids = [stable_uid("t", str(batch), str(j)) for j in range(50)]
        points = [
            VectorPoint(i, rng.standard_normal(8).tolist(), None,
                        {"tenant": "t", "episode_uid": f"e{batch}", "text": "x"})
            for i in ids
        ]
        await index.upsert("derivatives", points)
        print(" ".join(ids), flush=True)  # acknowledged

asyncio.run(main(sys.argv[1]))
"""


async def test_edge_keeps_every_acknowledged_point_when_killed(tmp_path: Path) -> None:
    path = tmp_path / "edge"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRASH_WRITER,
        str(path),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    acknowledged: list[str] = []
    try:
        async with asyncio.timeout(60):
            while len(acknowledged) < 30 * 50:  # well before the first flush (FLUSH_EVERY)
                line = await proc.stdout.readline()
                assert line, (await proc.stderr.read()).decode() if proc.stderr else "no output"
                acknowledged += line.decode().split()
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # mid-write: no flush, no close
        await proc.wait()
    assert proc.returncode == -signal.SIGKILL

    index = await EdgeIndex.open(path, fingerprint="crash_8", dim=8)
    try:
        await index.setup()
        stored = {h.id for h in await index.scroll_points("derivatives", "t")}
        assert set(acknowledged) <= stored
        assert await index.count("derivatives", "t") >= len(acknowledged)
        hits = await index.search("derivatives", "t", dense=[1.0] * 8, limit=3)
        assert len(hits) == 3
    finally:
        await index.close()


async def test_edge_directory_cannot_be_opened_twice_in_one_process(
    tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "edge"
    first = await EdgeIndex.open(path, fingerprint=embedder.fingerprint, dim=embedder.dim)
    try:
        with pytest.raises(StoreUnavailable, match=rf"{path}.*pid {os.getpid()}"):
            await EdgeIndex.open(path, fingerprint=embedder.fingerprint, dim=embedder.dim)
    finally:
        await first.close()
    second = await EdgeIndex.open(path, fingerprint=embedder.fingerprint, dim=embedder.dim)
    await second.close()


async def test_edge_reports_its_shards_and_flush_state(
    tmp_path: Path, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    index = await EdgeIndex.open(
        tmp_path / "edge", fingerprint=embedder.fingerprint, dim=embedder.dim
    )
    try:
        await index.setup()
        await load_corpus(index, "t", vectors)
        status = await index.describe()
        by_name = {c.name: c for c in status.collections}
        assert by_name[collection_name("derivatives", embedder.fingerprint)].points == len(CORPUS)
        assert status.unflushed_writes == len(CORPUS)
        assert "WAL" in status.durability
        assert await index.optimize() in (True, False)
        again = await index.search("derivatives", "t", dense=vectors["music"], limit=1)
        assert episodes(again) == ["music"]
    finally:
        await index.close()
