"""Tenant shards (`memory/stores/qdrant_shards.py`) on a real Qdrant in distributed mode: a large
tenant promoted to shards of its own answers exactly as before, writes after the promotion go
there, `shared` keeps only the others, and the command line drives it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest
from typer.testing import CliRunner

from bench.qdrant_nodes import Nodes
from cli.main import app
from memory.schema import collection_name, stable_uid
from memory.stores.base import SchemaMismatch, VectorFilter, VectorPoint
from memory.stores.qdrant import QdrantIndex
from memory.stores.qdrant_server import Layout
from memory.stores.qdrant_shards import SHARED
from memory.text.sparse import encode_document, encode_query
from tests.conftest import require_qdrant_binary

WORDS = "kitten marathon cello porto lisbon ferns garden piano budget sister".split()


def points(tenant: str, n: int, seed: int) -> list[VectorPoint]:
    """Seeded points of one tenant: random unit vectors, 2-4 words each."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    out = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 5))))
        sparse = encode_document(text)
        weights = tuple(float(v) for v in rng.random(len(sparse.indices)) + 0.1)  # no ties
        out.append(
            VectorPoint(
                stable_uid(tenant, str(i)),
                rows[i].tolist(),
                type(sparse)(sparse.indices, weights),
                {"tenant": tenant, "episode_uid": f"e{i % 30}", "text": text},
            )
        )
    return out


@pytest.fixture(scope="module")
def cluster_of_one() -> Iterator[Nodes]:
    """One Qdrant node in distributed mode (custom sharding needs it)."""
    nodes = Nodes.create(size=1, cluster=True, qdrant=require_qdrant_binary()).start()
    yield nodes
    nodes.stop()


@pytest.fixture
async def index(cluster_of_one: Nodes) -> AsyncIterator[QdrantIndex]:
    """An index with tenant shards on the node, its collections fresh."""
    idx = await QdrantIndex.open(
        cluster_of_one.url,
        api_key=cluster_of_one.api_key,
        layout=Layout(tenant_shards=True),
        fingerprint="shards_16",
        dim=16,
    )
    await idx.drop_collections(None)
    await idx.setup()
    yield idx
    await idx.drop_collections(None)  # the next test's embedder finds no other's collections
    await idx.close()


async def searches(index: QdrantIndex, tenant: str) -> list[list[tuple[str, float]]]:
    """Dense, sparse, fused and filtered searches of a tenant: (id, rounded score) lists."""
    rng = np.random.default_rng(5)
    out = []
    for _ in range(4):
        dense = rng.standard_normal(16).tolist()
        sparse = encode_query(" ".join(rng.choice(WORDS, size=2)))
        for kwargs in (
            {"dense": dense},
            {"sparse": sparse},
            {"dense": dense, "sparse": sparse},
            {"dense": dense, "filter": VectorFilter(episode_uids=["e1", "e2", "e3"])},
        ):
            hits = await index.search("derivatives", tenant, limit=8, **kwargs)  # type: ignore[arg-type]
            out.append([(h.id, round(h.score, 4)) for h in hits])
    return out


async def test_a_promoted_tenant_answers_as_before_from_its_own_shards(
    index: QdrantIndex,
) -> None:
    await index.upsert("derivatives", points("big", 400, 1) + points("small", 40, 2))
    before = {t: await searches(index, t) for t in ("big", "small")}
    assert all(before["big"]) and all(before["small"])

    copied = await index.promote_tenant("big")
    name = collection_name("derivatives", "shards_16")
    assert copied[name] == 0  # the cluster copied everything; nothing raced it
    assert (await index.tenant_shards())[name] == [SHARED, "big"]
    assert {t: await searches(index, t) for t in ("big", "small")} == before
    assert await index.count("derivatives", "big") == 400
    assert await index.count("derivatives", "small") == 40

    # New points of the tenant go to its shards; `shared` holds only the others.
    await index.upsert("derivatives", points("big", 420, 1)[400:])
    raw = index.client

    async def in_key(key: str, tenant: str) -> int:
        flt = {"must": [{"key": "tenant", "match": {"value": tenant}}]}
        result = await raw.count(name, count_filter=flt, exact=True, shard_key_selector=key)  # type: ignore[arg-type]
        return result.count

    assert (await in_key("big", "big"), await in_key(SHARED, "big")) == (420, 0)
    assert await in_key(SHARED, "small") == 40
    # Deletes reach the tenant's shards; a second promotion finds nothing to do.
    await index.delete_by_episode("big", "e1")
    assert await index.count("derivatives", "big") == 420 - 14
    assert (await index.promote_tenant("big"))[name] == 0


async def test_tenant_shards_need_distributed_mode(tmp_path: object) -> None:
    nodes = Nodes.create(qdrant=require_qdrant_binary()).start()  # a plain single node
    try:
        idx = await QdrantIndex.open(
            nodes.url,
            api_key=nodes.api_key,
            layout=Layout(tenant_shards=True),
            fingerprint="shards_16",
            dim=16,
        )
        with pytest.raises(SchemaMismatch, match="distributed mode"):
            await idx.setup()
        await idx.close()
    finally:
        nodes.stop()


def test_the_command_line_lists_and_promotes(
    cluster_of_one: Nodes, tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("QDRANT_URL", cluster_of_one.url)
    monkeypatch.setenv("QDRANT_API_KEY", cluster_of_one.api_key)
    monkeypatch.setenv("MNEME_QDRANT_TENANT_SHARDS", "true")
    monkeypatch.delenv("MNEME_LLM_BASE_URL", raising=False)
    runner = CliRunner()
    result = runner.invoke(app, ["shards", "promote", "--user", "ada"])
    assert result.exit_code == 0, result.output
    assert "ada has its own shard" in result.output
    listed = runner.invoke(app, ["shards", "list"])
    assert listed.exit_code == 0, listed.output
    assert "derivatives__" in listed.output and "shared, ada" in listed.output
