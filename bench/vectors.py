"""Qdrant Edge at scale: write throughput, search latency, HNSW build, memory, disk and recall.

`bench_vectors()` returns a report (a dict, also written as JSON by `main`); `mneme bench search`
prints it as a table. Two parts:

- synthetic (random unit vectors of 384 floats, sparse vectors of made-up chat text, ten
  tenants): upsert points/s through `EdgeIndex.upsert`, tenant-filtered dense / sparse / hybrid
  (RRF) search p50/p95 before the HNSW build (every segment scanned exactly) and after it,
  `optimize()` time, RSS and disk per 100k points;
- real (all-MiniLM-L6-v2 embeddings of the memeval turn sentences, `bench/real_corpus.py`,
  cached under /tmp): recall@10 of the engine's search against exact numpy search, per
  `hnsw_ef`, with one tenant holding every point (the filter matches all) and with ten tenants;
  and (`--agreement N`) how often qdrant-client local mode and Edge return the same top 10.

Timings depend on the machine's load: the report carries the CPU count and load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.real_corpus import corpus_texts, embed_cached
from bench.write import percentiles, sample_turn
from memory.schema import stable_uid
from memory.stores.base import VectorFilter, VectorPoint
from memory.stores.qdrant import QdrantIndex
from memory.stores.qdrant_edge import EdgeIndex
from memory.stores.qdrant_edge_query import HNSW_EF, HNSW_EF_CONSTRUCT, HNSW_M
from memory.stores.vectors import VectorIndex
from memory.text.sparse import encode_document, encode_query

DIM = 384
BATCH = 1000
T0 = datetime(2026, 1, 1, tzinfo=UTC)
FINGERPRINT = "bench_384"


def machine() -> dict[str, Any]:
    """CPU count and load average, to read every timing against."""
    return {"cpus": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()]}


def _rss_mb() -> float:
    # Current resident set size (Linux /proc; elsewhere the peak from getrusage, in kB on Linux).
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _disk_mb(path: Path) -> float:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.stat(os.path.join(root, name)).st_blocks * 512
    return total / 2**20


def _points(
    dense: npt.NDArray[np.float32], texts: Sequence[str], tenants: int, start: int
) -> list[VectorPoint]:
    return [
        VectorPoint(
            id=stable_uid("bench", str(start + j)),
            dense=dense[j].tolist(),
            sparse=encode_document(text),
            payload={
                "tenant": f"t{(start + j) % tenants}",
                "episode_uid": f"ep{start + j}",
                "text": text,
                "created_at": T0 + timedelta(seconds=start + j),
                "archived": False,
            },
        )
        for j, text in enumerate(texts)
    ]


async def _fill(
    index: VectorIndex, dense: npt.NDArray[np.float32], texts: Sequence[str], tenants: int
) -> float:
    """Upsert every row; returns points per second (validation and conversion included)."""
    elapsed = 0.0
    for start in range(0, len(dense), BATCH):
        points = _points(dense[start : start + BATCH], texts[start : start + BATCH], tenants, start)
        began = time.perf_counter()
        await index.upsert("derivatives", points)
        elapsed += time.perf_counter() - began
    return len(dense) / elapsed


async def _latencies(
    index: EdgeIndex,
    tenant: str,
    dense_q: npt.NDArray[np.float32],
    sparse_texts: Sequence[str],
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    flt = VectorFilter(created_from=T0)  # a realistic extra condition on top of the tenant
    for mode in ("dense", "sparse", "hybrid"):
        samples = []
        for q, text in zip(dense_q, sparse_texts, strict=True):
            kwargs: dict[str, Any] = {}
            if mode != "sparse":
                kwargs["dense"] = q.tolist()
            if mode != "dense":
                kwargs["sparse"] = encode_query(text)
            began = time.perf_counter()
            await index.search("derivatives", tenant, limit=10, filter=flt, **kwargs)
            samples.append((time.perf_counter() - began) * 1000)
        p50, p95 = percentiles(samples)
        out[mode] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "queries": len(samples)}
    return out


def _unit(rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    unit: npt.NDArray[np.float32] = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(
        np.float32
    )
    return unit


async def bench_synthetic(n: int, *, tenants: int = 10, queries: int = 200) -> dict[str, Any]:
    """Write, optimise and search `n` synthetic points of `tenants` tenants in a fresh index."""
    rng = random.Random(5)
    gen = np.random.default_rng(5)
    dense = _unit(gen.standard_normal((n, DIM)).astype(np.float32))
    texts = [sample_turn(rng)[0] for _ in range(n)]
    q_dense = _unit(gen.standard_normal((queries, DIM)).astype(np.float32))
    q_texts = [" ".join(sample_turn(rng)[0].split()[:6]) for _ in range(queries)]
    work = Path(tempfile.mkdtemp(prefix="mneme-bench-edge-"))
    rss0 = _rss_mb()
    index = await EdgeIndex.open(work / "edge", fingerprint=FINGERPRINT, dim=DIM)
    try:
        await index.setup()
        rate = await _fill(index, dense, texts, tenants)
        before = await _latencies(index, "t3", q_dense, q_texts)
        began = time.perf_counter()
        await index.optimize()
        build_s = time.perf_counter() - began
        after = await _latencies(index, "t3", q_dense, q_texts)
        status = await index.describe()
        rss = _rss_mb() - rss0
    finally:
        await index.close()
    disk = _disk_mb(work / "edge")
    shutil.rmtree(work, ignore_errors=True)
    derivatives = next(c for c in status.collections if c.name.startswith("derivatives__"))
    return {
        "points": n,
        "vectors": "synthetic: random unit 384-d + sparse of made-up chat text",
        "tenants": tenants,
        "upsert_points_per_s": round(rate),
        "search_before_optimize": before,
        "optimize_s": round(build_s, 1),
        "search_after_optimize": after,
        "indexed_vectors": derivatives.indexed_vectors,
        "segments": derivatives.segments,
        "rss_mb_per_100k": round(rss * 100_000 / n, 1),
        "disk_mb_per_100k": round(disk * 100_000 / n, 1),
        "machine": machine(),
    }


async def bench_recall(
    n: int = 100_000,
    *,
    tenants: int = 1,
    efs: Sequence[int] = (32, 64, 128, 256),
    queries: int = 300,
) -> dict[str, Any]:
    """Recall@10 of HNSW search against exact search over `n` real MiniLM embeddings."""
    texts, questions = corpus_texts(n)
    docs, _ = await embed_cached(texts, progress=False)
    q_all, _ = await embed_cached(questions, progress=False)
    q = q_all[
        np.random.default_rng(9).choice(len(q_all), size=min(queries, len(q_all)), replace=False)
    ]
    tenant = "t0"
    rows = np.arange(len(docs)) % tenants == 0  # the points of the tenant searched
    mine = docs[rows]
    ids = np.array([stable_uid("bench", str(i)) for i in np.nonzero(rows)[0]])
    exact = np.argsort(-(q @ mine.T), axis=1)[:, :10]
    truth = [set(ids[row]) for row in exact]
    work = Path(tempfile.mkdtemp(prefix="mneme-bench-recall-"))
    index = await EdgeIndex.open(work / "edge", fingerprint=FINGERPRINT, dim=DIM)
    try:
        await index.setup()
        rate = await _fill(index, docs, texts, tenants)
        began = time.perf_counter()
        await index.optimize()
        build_s = time.perf_counter() - began
        results = []
        for ef in efs:
            index.hnsw_ef = ef
            hits_found, samples = 0, []
            for vec, want in zip(q, truth, strict=True):
                began = time.perf_counter()
                hits = await index.search("derivatives", tenant, dense=vec.tolist(), limit=10)
                samples.append((time.perf_counter() - began) * 1000)
                hits_found += len({h.id for h in hits} & want)
            p50, p95 = percentiles(samples)
            results.append(
                {
                    "hnsw_ef": ef,
                    "recall_at_10": round(hits_found / (10 * len(truth)), 4),
                    "p50_ms": round(p50, 2),
                    "p95_ms": round(p95, 2),
                }
            )
        index.hnsw_ef = HNSW_EF
    finally:
        await index.close()
        shutil.rmtree(work, ignore_errors=True)
    return {
        "points": len(docs),
        "vectors": "real: all-MiniLM-L6-v2 embeddings of memeval turn sentences",
        "queries": len(truth),
        "tenants": tenants,
        "points_in_searched_tenant": int(rows.sum()),
        "hnsw": {"m": HNSW_M, "ef_construct": HNSW_EF_CONSTRUCT},
        "upsert_points_per_s": round(rate),
        "optimize_s": round(build_s, 1),
        "by_ef": results,
        "machine": machine(),
    }


async def bench_agreement(n: int = 5_000, *, queries: int = 200) -> dict[str, Any]:
    """How often local mode and Edge return the same top 10 on real data, per search mode."""
    texts, questions = corpus_texts(100_000)
    docs, _ = await embed_cached(texts, progress=False)
    q_all, _ = await embed_cached(questions, progress=False)
    picks = np.random.default_rng(4).choice(
        len(q_all), size=min(queries, len(q_all)), replace=False
    )
    work = Path(tempfile.mkdtemp(prefix="mneme-bench-agree-"))
    local = await QdrantIndex.open(":memory:", fingerprint=FINGERPRINT, dim=DIM)
    edge = await EdgeIndex.open(work / "edge", fingerprint=FINGERPRINT, dim=DIM)
    same: dict[str, int] = {"dense": 0, "sparse": 0, "hybrid": 0}
    worst = 0.0
    try:
        for index in (local, edge):
            await index.setup()
            await _fill(index, docs[:n], texts[:n], 1)
        for i in picks:
            for mode in same:
                kwargs: dict[str, Any] = {}
                if mode != "sparse":
                    kwargs["dense"] = q_all[i].tolist()
                if mode != "dense":
                    kwargs["sparse"] = encode_query(questions[i])
                a = await local.search("derivatives", "t0", limit=10, **kwargs)
                b = await edge.search("derivatives", "t0", limit=10, **kwargs)
                if [h.id for h in a] == [h.id for h in b]:
                    same[mode] += 1
                    worst = max(
                        [worst, *(abs(x.score - y.score) for x, y in zip(a, b, strict=True))]
                    )
    finally:
        await local.close()
        await edge.close()
        shutil.rmtree(work, ignore_errors=True)
    return {
        "points": n,
        "vectors": "real: all-MiniLM-L6-v2 embeddings of memeval turn sentences",
        "queries": len(picks),
        "identical_top10_share": {m: round(c / len(picks), 3) for m, c in same.items()},
        "max_score_diff_when_identical": worst,
        "machine": machine(),
    }


async def bench_vectors(
    sizes: Sequence[int] = (10_000, 100_000),
    *,
    recall_points: int | None = 100_000,
    recall_tenants: Sequence[int] = (1, 10),
    agreement_points: int = 0,
) -> dict[str, Any]:
    """The whole benchmark: synthetic sizes, recall on real embeddings, backend agreement."""
    report: dict[str, Any] = {"backend": "qdrant-edge", "machine": machine(), "synthetic": []}
    for n in sizes:
        report["synthetic"].append(await bench_synthetic(n))
    report["recall"] = []
    if recall_points:
        for tenants in recall_tenants:
            report["recall"].append(await bench_recall(recall_points, tenants=tenants))
    if agreement_points:
        report["agreement"] = await bench_agreement(agreement_points)
    return report


def main(argv: Sequence[str] | None = None) -> None:
    """Run from the command line: `python -m bench.vectors --sizes 10000 100000 --json out.json`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--recall", type=int, default=100_000, help="0 skips the recall part")
    parser.add_argument("--recall-tenants", type=int, nargs="*", default=[1, 10])
    parser.add_argument(
        "--agreement", type=int, default=0, help="points for the local-vs-Edge comparison"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    report = asyncio.run(
        bench_vectors(
            args.sizes,
            recall_points=args.recall,
            recall_tenants=args.recall_tenants,
            agreement_points=args.agreement,
        )
    )
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
