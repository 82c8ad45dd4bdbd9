"""Search latency of a small tenant beside a very large one, in each tenancy layout of a server.

One Qdrant node in distributed mode (started from the binary, `bench.qdrant_nodes`), one fresh
`derivatives` collection per layout, filled through `QdrantIndex` (mneme's write path to a
server, over gRPC) with one large tenant of `big` points and `small_tenants` tenants of `small`
points each; dense vectors are pooled real all-MiniLM-L6-v2 embeddings plus noise
(`bench.retrieve.pooled_vectors`), sparse vectors those of made-up chat turns. Layouts:

- `global`: Qdrant's default HNSW graph over the whole collection (`m` 16), the tenant a
  payload filter (`is_tenant` index) -- the layout before this issue;
- `payload`: mneme's server default: no global graph (`m` 0), a graph per tenant
  (`payload_m` 16) from the `is_tenant` index, other payload indexes without HNSW;
- `sharded`: `payload` in a collection with tenant shards, the large tenant promoted to its own
  shard (`mneme shards promote`) after loading.

After loading, the bench waits until Qdrant has built its indexes (collection status green),
then times `QdrantIndex.search` (tenant filter, IDF counts and all) for the large tenant and for
a small one: dense and hybrid (dense + sparse, RRF), p50/p95 over `queries` questions. It
reports load and index times, the server's resident memory and disk, and the machine's load.

    python -m bench.tenancy --big 100000 [--layouts payload,global,sharded] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.qdrant_nodes import Nodes
from bench.retrieve import pooled_vectors, real_pool
from bench.write import machine, percentiles, sample_turn
from memory.schema import collection_name, stable_uid
from memory.stores.base import VectorPoint
from memory.stores.qdrant import QdrantIndex
from memory.stores.qdrant_server import Layout
from memory.text.sparse import encode_document, encode_query

FINGERPRINT = "tenancy_384"
DIM = 384
BATCH = 1024
LAYOUTS = ("payload", "global", "sharded")
INDEX_TIMEOUT_S = 4 * 3600.0
REQUEST_TIMEOUT_S = 300.0


def layout_of(name: str) -> Layout:
    """The collection layout a bench layout name stands for."""
    return {
        "global": Layout(per_tenant_hnsw=False),
        "payload": Layout(),
        "sharded": Layout(tenant_shards=True),
    }[name]


def _rss_mb(pid: int | None) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _disk_mb(path: str) -> float:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return round(total / 2**20, 1)


async def _load(
    index: QdrantIndex, tenants: list[tuple[str, int]], pool: np.ndarray, seed: int
) -> float:
    """Upsert every tenant's points, interleaved batch by batch; points per second."""
    gen = np.random.default_rng(seed)
    rng = random.Random(seed)
    left = dict(tenants)
    done = dict.fromkeys(left, 0)
    total = sum(left.values())
    began = time.perf_counter()
    while any(left.values()):
        for tenant in list(left):
            n = min(BATCH, left[tenant])
            if not n:
                continue
            rows = pooled_vectors(gen, n, DIM, pool)
            points = []
            for j in range(n):
                text = sample_turn(rng)[0]
                i = done[tenant] + j
                points.append(
                    VectorPoint(
                        stable_uid(tenant, str(i)),
                        rows[j].tolist(),
                        encode_document(text),
                        {"tenant": tenant, "episode_uid": f"{tenant}-{i}", "text": text},
                    )
                )
            await index.upsert("derivatives", points)
            left[tenant] -= n
            done[tenant] += n
    return total / (time.perf_counter() - began)


async def _wait_indexed(index: QdrantIndex, timeout_s: float = INDEX_TIMEOUT_S) -> float:
    """Seconds until the collection's optimizers are done (status green)."""
    name = collection_name("derivatives", FINGERPRINT)
    began = time.perf_counter()
    while time.perf_counter() - began < timeout_s:
        info = await index.client.get_collection(name)
        if str(info.status).lower().endswith("green"):
            return time.perf_counter() - began
        await asyncio.sleep(2.0)
    raise TimeoutError(f"{name} not indexed after {timeout_s:g} s")


async def _latency(
    index: QdrantIndex, tenant: str, questions: list[tuple[list[float], str]]
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for mode in ("dense", "hybrid"):
        samples = []
        for dense, text in questions:
            sparse = encode_query(text) if mode == "hybrid" else None
            began = time.perf_counter()
            await index.search("derivatives", tenant, dense=dense, sparse=sparse, limit=10)
            samples.append((time.perf_counter() - began) * 1000.0)
        p50, p95 = percentiles(samples)
        out[mode] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "n": len(samples)}
    return out


async def bench_layout(
    nodes: Nodes,
    layout: str,
    *,
    big: int,
    small_tenants: int,
    small: int,
    queries: int,
    pool: np.ndarray,
    questions: list[tuple[list[float], str]],
) -> dict[str, Any]:
    """Load, index and time one layout in a fresh collection."""
    node = nodes.nodes[0]
    index = await QdrantIndex.open(
        nodes.url,
        api_key=nodes.api_key,
        prefer_grpc=True,
        grpc_port=node.grpc_port,
        layout=layout_of(layout),
        fingerprint=FINGERPRINT,
        dim=DIM,
        timeout_s=REQUEST_TIMEOUT_S,  # each request's too: a busy indexing node answers slowly
    )
    try:
        await index.drop_collections(None)
        await index.setup()
        tenants = [("big", big)] + [(f"small{i}", small) for i in range(small_tenants)]
        rate = await _load(index, tenants, pool, seed=7)
        promote_s = copied = None
        if layout == "sharded":
            began = time.perf_counter()
            copied = sum((await index.promote_tenant("big")).values())
            promote_s = round(time.perf_counter() - began, 1)
        index_s = await _wait_indexed(index)
        info = await index.client.get_collection(collection_name("derivatives", FINGERPRINT))
        result = {
            "layout": layout,
            "points": big + small_tenants * small,
            "upsert_points_per_s": round(rate),
            "promote_s": promote_s,
            "promote_points_copied_after_transfer": copied,
            "index_wait_s": round(index_s, 1),
            "indexed_vectors": info.indexed_vectors_count,
            "segments": info.segments_count,
            "search": {
                "small": await _latency(index, "small0", questions),
                "big": await _latency(index, "big", questions),
            },
            "server_rss_mb": _rss_mb(node.pid),
            "server_disk_mb": _disk_mb(node.storage),
            "machine": machine(),
        }
        await index.drop_collections(None)
        return result
    finally:
        await index.close()


async def bench_tenancy(
    big: int,
    *,
    small_tenants: int = 10,
    small: int = 1000,
    queries: int = 200,
    layouts: tuple[str, ...] = LAYOUTS,
    out: Path | None = None,
) -> dict[str, Any]:
    """Every layout in turn on one node in distributed mode; the report (written to `out`
    after each layout, so that a failure later keeps what was measured)."""
    from memory.embeddings.embedders import build_embedder
    from memory.settings import Settings

    embedder = build_embedder(Settings(_env_file=None))  # type: ignore[call-arg]
    try:
        pool = await real_pool(embedder)
        rng = random.Random(11)
        texts = [" ".join(sample_turn(rng)[0].split()[:8]) for _ in range(queries)]
        rows = await embedder.embed_documents(texts)
        questions = [(rows[i].tolist(), texts[i]) for i in range(queries)]
    finally:
        await embedder.close()
    report: dict[str, Any] = {
        "big": big,
        "small_tenants": small_tenants,
        "small": small,
        "queries": queries,
        "vectors": "pooled real all-MiniLM-L6-v2 embeddings (2,000) + noise; sparse of made-up turns",
        "layouts": [],
    }
    nodes = Nodes.create(size=1, cluster=True).start()
    try:
        for name in layouts:
            report["layouts"].append(
                await bench_layout(
                    nodes,
                    name,
                    big=big,
                    small_tenants=small_tenants,
                    small=small,
                    queries=queries,
                    pool=pool,
                    questions=questions,
                )
            )
            if out is not None:
                await asyncio.to_thread(out.write_text, json.dumps(report, indent=2))
    finally:
        nodes.stop()
    return report


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    parser = argparse.ArgumentParser(prog="tenancy", description=__doc__.split("\n")[0])
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--small-tenants", type=int, default=10)
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    layouts = tuple(x.strip() for x in args.layouts.split(",") if x.strip())
    report = asyncio.run(
        bench_tenancy(
            args.big,
            small_tenants=args.small_tenants,
            small=args.small,
            queries=args.queries,
            layouts=layouts,
            out=args.json,
        )
    )
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
