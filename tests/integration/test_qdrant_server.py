"""What is particular to a real Qdrant server (the contract suite covers the rest): a refused key,
a node that is down, the collection layout, and retrieval ranking the same as on the embedded
default (`mneme eval retrieval` with QDRANT_URL)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import pytest

from bench.eval_retrieval import run_eval
from bench.server_agreement import compare, recording
from memory.embeddings.embedders import Embedder
from memory.schema import collection_name, stable_uid
from memory.stores.base import StoreUnavailable, VectorPoint
from memory.stores.qdrant import QdrantIndex
from memory.stores.qdrant_idf import TERMS_FIELD
from memory.stores.qdrant_server import Connection, Endpoints
from memory.text.sparse import encode_document, encode_query
from tests.conftest import QdrantServer, make_settings, wipe_qdrant

ROOT = Path(__file__).resolve().parents[2]
MANY_TURNS = ROOT / "tests" / "data" / "many_turns.memeval.jsonl"


@pytest.mark.parametrize("grpc", [False, True], ids=["rest", "grpc"])
async def test_a_wrong_api_key_is_refused_with_the_fix(
    qdrant_server: QdrantServer, grpc: bool
) -> None:
    with pytest.raises(StoreUnavailable, match="refused the API key.*set QDRANT_API_KEY"):
        await QdrantIndex.open(
            qdrant_server.url,
            api_key="not-the-key",
            prefer_grpc=grpc,
            grpc_port=qdrant_server.grpc_port,
            fingerprint="f_8",
            dim=8,
        )


@pytest.mark.parametrize("grpc", [False, True], ids=["rest", "grpc"])
async def test_a_node_that_is_down_is_skipped_for_the_next(
    qdrant_server: QdrantServer, grpc: bool
) -> None:
    await wipe_qdrant(qdrant_server)
    # Another loopback address, where nothing listens on either port (the gRPC port is one
    # setting for every node, as on a cluster of machines).
    down = qdrant_server.url.replace("127.0.0.1", "127.0.0.2")
    index = await QdrantIndex.open(
        f"{down},{qdrant_server.url}",
        fingerprint="f_8",
        dim=8,
        **qdrant_server.index_args(grpc=grpc),
    )
    try:
        assert index.endpoints.url == qdrant_server.url and index.endpoints.failovers == 1
        await index.setup()
        point = VectorPoint(
            stable_uid("t", "e"),
            [1.0] * 8,
            encode_document("tennis balls"),
            {"tenant": "t", "episode_uid": "e", "text": "tennis balls"},
        )
        await index.upsert("derivatives", [point])
        hits = await index.search("derivatives", "t", sparse=encode_query("tennis"))
        assert [h.id for h in hits] == [point.id]
    finally:
        await index.close()
    with pytest.raises(StoreUnavailable, match=r"does not answer.*unset QDRANT_URL"):
        await QdrantIndex.open(f"{down},{down}", fingerprint="f_8", dim=8, timeout_s=1.0)


async def test_calls_failing_on_a_dead_node_at_once_each_reach_a_live_one(
    qdrant_server: QdrantServer,
) -> None:
    """Many calls in flight when the node in use dies (a cluster node killed under load): each
    tries every node once, so each reaches the live one. Each failure used to advance the node
    in use, so it went round to a dead node again and some calls met dead nodes on every try:
    one search in ten failed while a node was down in `tests/e2e/test_cluster.py`."""
    await wipe_qdrant(qdrant_server)
    conn = Connection.parse(
        ",".join(
            [
                qdrant_server.url.replace("127.0.0.1", "127.0.0.2"),
                qdrant_server.url.replace("127.0.0.1", "127.0.0.3"),
                qdrant_server.url,
            ]
        ),
        api_key=qdrant_server.api_key,
    )
    endpoints = Endpoints([(url, conn.client(url, 5)) for url in conn.urls])
    try:
        answers = await asyncio.gather(
            *(endpoints.call(lambda client: client.get_collections()) for _ in range(30)),
            return_exceptions=True,
        )
        assert [a for a in answers if isinstance(a, BaseException)] == []
        assert endpoints.url == qdrant_server.url
        assert endpoints.failovers == 2  # past each dead node once, however many calls failed
    finally:
        await endpoints.close()


async def test_collections_on_a_server_have_the_tenancy_layout(
    qdrant_server: QdrantServer, embedder: Embedder
) -> None:
    await wipe_qdrant(qdrant_server)
    index = await QdrantIndex.open(
        qdrant_server.url,
        fingerprint=embedder.fingerprint,
        dim=embedder.dim,
        **qdrant_server.index_args(),
    )
    try:
        await index.setup()
        info = await index.client.get_collection(
            collection_name("derivatives", embedder.fingerprint)
        )
        hnsw = info.config.hnsw_config
        assert (hnsw.m, hnsw.payload_m) == (0, 16)  # a graph per tenant, none across tenants
        schema = info.payload_schema
        assert schema["tenant"].params is not None and schema["tenant"].params.is_tenant  # type: ignore[union-attr]
        assert str(schema[TERMS_FIELD].data_type) in ("integer", "PayloadSchemaType.INTEGER")
        sparse = (info.config.params.sparse_vectors or {})["sparse"]
        assert sparse.modifier in (None, "none")  # IDF is counted per tenant (qdrant_idf)
        status = await index.describe()
        assert status.backend == "qdrant" and "WAL" in status.durability
    finally:
        await index.close()


@pytest.mark.slow
async def test_eval_ranks_the_same_on_a_server_as_embedded(
    qdrant_server: QdrantServer, tmp_path: Path, embedder: Embedder
) -> None:
    """`mneme eval retrieval` with QDRANT_URL ranks as on the embedded default (Qdrant Edge),
    the conversation a tenant of the shared server: every search returns the same hits, scores
    within `SCORE_TOLERANCE`, except the contract's stated exception (`VectorIndex.search`):
    inside a fused search each engine ranks a leg's exact ties (a turn said twice, a chunk and
    its context derivative alike) in its own order. Every such difference is checked to be
    that (`bench.server_agreement`: both legs the same on both backends, one holding an exact
    tie). The second server run goes over gRPC, on a server holding the tenant's points of the
    first (deleted first)."""
    conversation = json.loads(MANY_TURNS.read_text().splitlines()[0])
    conversation["sessions"] = conversation["sessions"][:10]  # ~60 turns, every question
    data = tmp_path / "many.memeval.jsonl"
    data.write_text(json.dumps(conversation) + "\n")
    await wipe_qdrant(qdrant_server)
    with recording() as rec:
        embedded = await run_eval(
            data, settings=make_settings(tmp_path / "edge", qdrant_path=None), embedder=embedder
        )
        runs = [
            await run_eval(
                data,
                settings=make_settings(tmp_path / name, **qdrant_server.settings(grpc=grpc)),
                embedder=embedder,
            )
            for name, grpc in (("rest", False), ("grpc", True))
        ]
    assert embedded.summary["vectors"].startswith("qdrant-edge")
    assert runs[0].summary["vectors"] == f"qdrant server {qdrant_server.url}"
    edge, server = rec.by_backend["qdrant-edge"], rec.by_backend["qdrant"]
    n = len(embedded.questions)
    assert n == len(conversation["questions"]) and len(server) == 2 * len(edge) > 100
    for k, result in enumerate(runs):
        assert result.summary["ingest"]["failed_episodes"] == 0
        theirs = {q["id"]: q["ranked"] for q in result.questions}
        mine = [
            replace(s, question=s.question - (k + 1) * n)
            for s in server[k * len(edge) :][: len(edge)]
        ]
        report = compare(
            edge, mine, [(q["id"], q["ranked"], theirs[q["id"]]) for q in embedded.questions]
        )
        assert report["searches_differing_otherwise"] == 0, report
        assert report["different_otherwise"] == [], report
        assert report["fused_reordered_by_ties"] < report["fused_searches"] / 4, report
        assert report["identical_top10"] + len(report["different_by_ties_only"]) == n
