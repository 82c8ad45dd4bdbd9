"""The Qdrant vector index against real qdrant-client local mode (in memory and on disk) with
real all-MiniLM-L6-v2 embeddings and the real sparse encoder."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memory.embeddings import Embedder
from memory.schema import VECTOR_KINDS, VectorKind, clean_text, collection_name, stable_uid
from memory.sparse import encode_document, encode_query
from memory.stores.base import (
    SchemaMismatch,
    StoreUnavailable,
    VectorFilter,
    VectorHit,
    VectorPoint,
)
from memory.stores.qdrant import QdrantIndex

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


# --------------------------------------------------------------------------- schema


async def test_setup_is_idempotent_and_names_collections_by_fingerprint(
    index: QdrantIndex, embedder: Embedder
) -> None:
    await index.setup()
    await index.setup()
    expected = sorted(collection_name(k, embedder.fingerprint) for k in VECTOR_KINDS)
    assert await index.collections() == expected
    assert await index.missing_collections() == []


async def test_reads_before_setup_are_empty_and_upsert_sets_up(
    embedder: Embedder, vectors: dict[str, list[float]]
) -> None:
    idx = await QdrantIndex.open(":memory:", fingerprint=embedder.fingerprint, dim=embedder.dim)
    try:
        assert len(await idx.missing_collections()) == len(VECTOR_KINDS)
        assert await idx.search("derivatives", "t", dense=vectors["pet"]) == []
        assert await idx.count("derivatives", "t") == 0
        assert await idx.scroll_episode_uids("derivatives", None) == set()
        await idx.delete_by_episode("t", "pet")  # nothing to delete, no error
        await idx.upsert("derivatives", [make_point("t", "pet", vectors["pet"])])
        assert await idx.count("derivatives", "t") == 1
        assert await idx.missing_collections() == []
    finally:
        await idx.close()


async def test_another_embedders_collections_are_a_schema_mismatch(
    tmp_path: Path, embedder: Embedder, vectors: dict[str, list[float]]
) -> None:
    path = str(tmp_path / "qdrant")
    old = await QdrantIndex.open(path, fingerprint=embedder.fingerprint, dim=embedder.dim)
    await old.setup()
    await old.upsert("derivatives", [make_point("t", "pet", vectors["pet"])])
    await old.close()

    new = await QdrantIndex.open(path, fingerprint="text-embedding-3-small_384", dim=384)
    try:
        with pytest.raises(SchemaMismatch) as err:
            await new.setup()
        message = str(err.value)
        assert embedder.fingerprint in message and "text-embedding-3-small_384" in message
        assert "mneme reindex" in message and "MNEME_EMBEDDING_MODEL" in message
        with pytest.raises(SchemaMismatch):  # writes never slip past the check
            await new.upsert("derivatives", [make_point("t", "pet", vectors["pet"])])
        # The reindex path: drop the old collections, then set up afresh.
        dropped = await new.drop_collections(embedder.fingerprint)
        assert len(dropped) == len(VECTOR_KINDS)
        await new.setup()
        assert await new.count("derivatives", "t") == 0
    finally:
        await new.close()


async def test_same_name_with_another_dimension_is_a_schema_mismatch(tmp_path: Path) -> None:
    path = str(tmp_path / "qdrant")
    first = await QdrantIndex.open(path, fingerprint="custom_384", dim=384)
    await first.setup()
    await first.close()
    second = await QdrantIndex.open(path, fingerprint="custom_384", dim=512)
    try:
        with pytest.raises(SchemaMismatch, match=r"384-dimensional.*produces 512"):
            await second.setup()
        assert await second.drop_collections(None)
        await second.setup()
    finally:
        await second.close()


async def test_on_disk_index_persists_across_reopen(
    tmp_path: Path, embedder: Embedder, vectors: dict[str, list[float]]
) -> None:
    path = str(tmp_path / "qdrant")
    idx = await QdrantIndex.open(path, fingerprint=embedder.fingerprint, dim=embedder.dim)
    await idx.setup()
    await load_corpus(idx, "t", vectors)
    await idx.close()
    again = await QdrantIndex.open(path, fingerprint=embedder.fingerprint, dim=embedder.dim)
    try:
        await again.setup()
        assert await again.count("derivatives", "t") == len(CORPUS)
        hits = await again.search("derivatives", "t", dense=vectors["job"], limit=1)
        assert episodes(hits) == ["job"]
    finally:
        await again.close()


# --------------------------------------------------------------------------- failures


async def test_a_local_directory_locked_by_another_process_is_a_clear_error(
    tmp_path: Path, embedder: Embedder
) -> None:
    path = str(tmp_path / "qdrant")
    holder = await QdrantIndex.open(path, fingerprint=embedder.fingerprint, dim=embedder.dim)
    try:
        code = (
            "import asyncio, sys\n"
            "from memory.stores.qdrant import QdrantIndex\n"
            "from memory.stores.base import StoreUnavailable\n"
            "try:\n"
            "    asyncio.run(QdrantIndex.open(sys.argv[1], fingerprint='f_384', dim=384))\n"
            "except StoreUnavailable as exc:\n"
            "    print(exc)\n"
            "    sys.exit(3)\n"
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            code,
            path,
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert proc.returncode == 3, err.decode()
        message = out.decode()
        assert path in message
        assert "only one process can open a local Qdrant directory" in message
        assert "QDRANT_URL" in message and "Stop the other process" in message
    finally:
        await holder.close()
    # Once released, the directory opens again.
    reopened = await QdrantIndex.open(path, fingerprint=embedder.fingerprint, dim=embedder.dim)
    await reopened.close()


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


# --------------------------------------------------------------------------- writes


async def test_upsert_is_idempotent_by_id(
    index: QdrantIndex, vectors: dict[str, list[float]]
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
    index: QdrantIndex, vectors: dict[str, list[float]], embedder: Embedder
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
    index: QdrantIndex, vectors: dict[str, list[float]], payload: dict[str, object], match: str
) -> None:
    point = VectorPoint(id=stable_uid("x"), dense=vectors["pet"], sparse=None, payload=payload)
    with pytest.raises(ValueError, match=match):
        await index.upsert("derivatives", [point])


async def test_point_ids_must_be_uuids(index: QdrantIndex, vectors: dict[str, list[float]]) -> None:
    point = VectorPoint(
        id="derivative-1",
        dense=vectors["pet"],
        sparse=None,
        payload={"tenant": "t", "episode_uid": "e", "text": "x"},
    )
    with pytest.raises(ValueError, match="stable_uid"):
        await index.upsert("derivatives", [point])


async def test_delete_by_episode_covers_all_kinds_or_the_given_ones(
    index: QdrantIndex, vectors: dict[str, list[float]]
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
    index: QdrantIndex, vectors: dict[str, list[float]]
) -> None:
    start = index.generation
    await index.upsert("derivatives", [make_point("t", "pet", vectors["pet"])])
    assert index.generation > start
    after_upsert = index.generation
    await index.search("derivatives", "t", dense=vectors["pet"])
    assert index.generation == after_upsert  # reads do not
    await index.delete_by_episode("t", "pet", kinds=["derivatives"])
    assert index.generation > after_upsert


async def test_delete_stale_keeps_the_listed_points(
    index: QdrantIndex, vectors: dict[str, list[float]]
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
    index: QdrantIndex, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    await load_corpus(index, "alice", vectors)
    await load_corpus(index, "bob", vectors)
    query = "what is my job?"
    qv = (await embedder.embed_query(query)).tolist()
    for kwargs in (
        {"dense": qv},
        {"sparse": encode_query("nurse hospital")},
        {"dense": qv, "sparse": encode_query(query)},
        {"dense": qv, "sparse": encode_query(query), "signal_weights": {"rigor": 0.3}},
    ):
        hits = await index.search("derivatives", "alice", limit=20, **kwargs)  # type: ignore[arg-type]
        assert hits and {h.payload["tenant"] for h in hits} == {"alice"}
    assert await index.count("derivatives", "alice") == len(CORPUS)
    # Same episode uids in both tenants: deletes and scrolls stay inside one tenant.
    await index.delete_by_episode("alice", "job")
    await index.delete_points("derivatives", "alice", [stable_uid("bob", "pet", "d")])
    assert await index.count("derivatives", "bob") == len(CORPUS)
    assert "job" not in await index.scroll_episode_uids("derivatives", "alice")
    assert await index.scroll_episode_uids("derivatives", "bob") == set(CORPUS)
    assert await index.scroll_episode_uids("derivatives", None) == set(CORPUS)
    bob = await index.scroll_points("derivatives", "bob")
    assert len(bob) == len(CORPUS) and {h.payload["tenant"] for h in bob} == {"bob"}
    assert [h.id for h in bob] == sorted(h.id for h in bob)
    alice = await index.scroll_points("derivatives", "alice")
    assert {h.payload["episode_uid"] for h in alice} == set(CORPUS) - {"job"}
    assert await index.search("derivatives", "carol", dense=qv) == []


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
    index: QdrantIndex,
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
    index: QdrantIndex, vectors: dict[str, list[float]], query: str, expected: str
) -> None:
    await load_corpus(index, "t", vectors)
    hits = await index.search("derivatives", "t", sparse=encode_query(query), limit=3)
    assert episodes(hits) == [expected]  # only documents sharing a term match


async def test_score_contract(
    index: QdrantIndex, vectors: dict[str, list[float]], embedder: Embedder
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
    assert fused[0].score == pytest.approx(1.0)
    assert all(a.score >= b.score for a, b in zip(fused, fused[1:], strict=False))
    # A dense similarity floor drops weak candidates.
    floored = await index.search("derivatives", "t", dense=qv.tolist(), score_threshold=0.3)
    assert floored and all(h.score >= 0.3 for h in floored)
    assert len(floored) < len(CORPUS)


async def test_formula_rescoring_promotes_credible_points(
    index: QdrantIndex, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    # Two points with the same text and vector: only their signals differ.
    text = CORPUS["travel"]
    weak = make_point("t", "travel", vectors["travel"], kind_tag="weak", signal_rigor=0.0)
    strong = make_point(
        "t", "travel", vectors["travel"], kind_tag="strong", signal_rigor=1.0, signal_grounding=0.5
    )
    unsignalled = make_point("t", "travel", vectors["travel"], kind_tag="none")  # no signals
    await index.upsert("derivatives", [weak, strong, unsignalled])
    await load_corpus(index, "t", vectors)
    qv = (await embedder.embed_query("favourite holiday city")).tolist()
    sparse = encode_query(text)

    for kwargs in ({"dense": qv}, {"dense": qv, "sparse": sparse}, {"sparse": sparse}):
        plain = await index.search("derivatives", "t", limit=4, **kwargs)  # type: ignore[arg-type]
        plain_scores = {h.id: h.score for h in plain}
        rescored = await index.search(
            "derivatives",
            "t",
            limit=4,
            signal_weights={"rigor": 0.2, "grounding": 0.1},
            **kwargs,  # type: ignore[arg-type]
        )
        by_id = {h.id: h.score for h in rescored}
        assert rescored[0].id == strong.id
        # score = base + Σ w·signal; a missing signal counts as 0.
        assert by_id[strong.id] == pytest.approx(plain_scores[strong.id] + 0.2 + 0.05, abs=1e-3)
        assert by_id[weak.id] == pytest.approx(plain_scores[weak.id], abs=1e-3)
        assert by_id[unsignalled.id] == pytest.approx(plain_scores[unsignalled.id], abs=1e-3)

    # Weights are clamped to [0, 0.3]; negative weights count as 0.
    clamped = await index.search(
        "derivatives", "t", dense=qv, limit=4, signal_weights={"rigor": 5.0, "objectivity": -1}
    )
    base = await index.search("derivatives", "t", dense=qv, limit=4)
    base_scores = {h.id: h.score for h in base}
    assert {h.id: h.score for h in clamped}[strong.id] == pytest.approx(
        base_scores[strong.id] + 0.3, abs=1e-3
    )
    with pytest.raises(ValueError, match="unknown credibility signal"):
        await index.search("derivatives", "t", dense=qv, signal_weights={"charisma": 0.1})


async def test_filters_by_episode_time_and_archived(
    index: QdrantIndex, vectors: dict[str, list[float]]
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
        signal_weights={"rigor": 0.1},
    )
    assert set(episodes(hits)) == {"job", "travel"}  # filters apply to every prefetch
    naive = flt(created_from=(T0 + timedelta(days=5)).replace(tzinfo=None))  # naive = UTC
    assert episodes(await index.search("derivatives", "t", dense=qv, filter=naive)) == ["code"]


# --------------------------------------------------------------------------- payloads


HOSTILE = [
    'it\'s "quoted" and `ticked`',
    "}) DETACH DELETE n // '; DROP TABLE episodes; --",
    "control \x01\x02\x1b[31m red\ttab\nnewline\r",
    "nul\x00byte and lone \ud800 surrogate \udfff",
    "emoji 🧠 and RTL \u202eevil",
]


async def test_hostile_payloads_and_tenant_ids_round_trip(
    index: QdrantIndex, embedder: Embedder
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
    index: QdrantIndex, vectors: dict[str, list[float]]
) -> None:
    big = "x" * 1_000_000
    await index.upsert("derivatives", [make_point("t", "pet", vectors["pet"], text=big)])
    (hit,) = await index.search("derivatives", "t", dense=vectors["pet"], limit=1)
    assert hit.payload["text"] == big
    assert hit.payload["created_at"] == T0  # datetimes come back as aware datetimes


async def test_concurrent_searches_share_one_client(
    index: QdrantIndex, vectors: dict[str, list[float]]
) -> None:
    await load_corpus(index, "t", vectors)
    results = await asyncio.gather(
        *(index.search("derivatives", "t", dense=vectors[k], limit=1) for k in CORPUS)
    )
    assert [episodes(r)[0] for r in results] == list(CORPUS)


async def test_server_style_plans_give_the_same_results(
    index: QdrantIndex, vectors: dict[str, list[float]], embedder: Embedder
) -> None:
    """Server mode repeats the filter on every prefetch; local mode relies on propagation.

    Both plans must be valid requests with identical results (server mode itself cannot run here).
    """
    await load_corpus(index, "t", vectors)
    await load_corpus(index, "u", vectors)
    qv = (await embedder.embed_query("holiday in a city")).tolist()
    kwargs = {
        "dense": qv,
        "sparse": encode_query("city holidays"),
        "limit": 4,
        "signal_weights": {"rigor": 0.1},
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


async def test_a_tenant_id_with_a_lone_surrogate_matches_as_stored(
    index: QdrantIndex, vectors: dict[str, list[float]]
) -> None:
    tenant = "user\ud800"
    point = make_point(clean_text(tenant), "pet", vectors["pet"])  # stable_uid needs clean text
    raw = VectorPoint(point.id, point.dense, point.sparse, {**point.payload, "tenant": tenant})
    await index.upsert("derivatives", [raw])
    assert await index.count("derivatives", tenant) == 1
    hits = await index.search("derivatives", tenant, dense=vectors["pet"])
    assert [h.payload["tenant"] for h in hits] == [clean_text(tenant)]
    await index.delete_by_episode(tenant, "pet")
    assert await index.count("derivatives", tenant) == 0
