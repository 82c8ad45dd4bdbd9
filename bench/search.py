"""`mneme bench search`: vector search latency in Qdrant local mode at 10k and 100k derivatives.

Points are random unit vectors with sparse vectors of made-up chat text: search cost does not
depend on what the vectors mean, and this keeps the set-up to seconds instead of embedding 100k
texts. Two layouts: one tenant owning every point (the tenant filter matches all) and ten
tenants sharing the collection (the filter selects a tenth).
"""

from __future__ import annotations

import random
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.write import percentiles, sample_turn
from memory.schema import stable_uid
from memory.sparse import encode_document, encode_query
from memory.stores.base import VectorPoint
from memory.stores.qdrant import QdrantIndex

DIM = 384
BATCH = 1000
BUDGET_S = 60.0
"""Per configuration: stop asking after this long (at 100k, local mode takes seconds a query)."""
MIN_QUERIES = 5


async def _fill(index: QdrantIndex, n: int, tenants: int, rng: random.Random) -> None:
    gen = np.random.default_rng(11)
    for start in range(0, n, BATCH):
        count = min(BATCH, n - start)
        vecs = gen.standard_normal((count, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        points = []
        for j in range(count):
            i = start + j
            user, _ = sample_turn(rng)
            tenant = f"t{i % tenants}"
            points.append(
                VectorPoint(
                    id=stable_uid("bench", str(i)),
                    dense=vecs[j].tolist(),
                    sparse=encode_document(user),
                    payload={
                        "tenant": tenant,
                        "episode_uid": f"e{i}",
                        "text": user,
                        "created_at": "2026-01-01T00:00:00+00:00",
                        "archived": False,
                        "signal_specificity": rng.random(),
                    },
                )
            )
        await index.upsert("derivatives", points)


async def _time(index: QdrantIndex, mode: str, queries: int, rng: random.Random) -> list[float]:
    gen = np.random.default_rng(5)
    out: list[float] = []
    deadline = time.perf_counter() + BUDGET_S
    for _ in range(queries):
        if len(out) >= MIN_QUERIES and time.perf_counter() > deadline:
            break
        q = gen.standard_normal(DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        text, _ = sample_turn(rng)
        start = time.perf_counter()
        await index.search(
            "derivatives",
            "t0",
            dense=q.tolist(),
            sparse=encode_query(text) if mode != "dense" else None,
            limit=10,
            signal_weights={"specificity": 0.2} if mode == "fused+formula" else None,
        )
        out.append((time.perf_counter() - start) * 1000)
    return out


async def bench_search(
    *, sizes: list[int], queries: int, console: Console
) -> list[dict[str, object]]:
    """Run the search benchmark and print a table; return its rows."""
    rows: list[dict[str, object]] = []
    for n in sizes:
        for tenants in (1, 10):
            rng = random.Random(3)
            # In memory: on disk, local mode commits each point to SQLite (~18 ms a point), which
            # would make the fill, not the search, the benchmark. Search cost is the same.
            index = await QdrantIndex.open(
                ":memory:", api_key=None, fingerprint=f"bench_{DIM}", dim=DIM, timeout_s=5
            )
            try:
                await index.setup()
                started = time.perf_counter()
                await _fill(index, n, tenants, rng)
                fill_s = time.perf_counter() - started
                for mode in ("dense", "fused", "fused+formula"):
                    samples = await _time(index, mode, queries, rng)
                    p50, p95 = percentiles(samples)
                    rows.append(
                        {
                            "n": n,
                            "tenants": tenants,
                            "mode": mode,
                            "p50_ms": p50,
                            "p95_ms": p95,
                            "fill_s": fill_s,
                            "queries": len(samples),
                        }
                    )
            finally:
                await index.close()
    table = Table(title="Qdrant local mode, top-10, tenant filter on t0")
    for col in ("derivatives", "tenants sharing", "mode", "queries", "p50 ms", "p95 ms"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            f"{r['n']:,}",
            str(r["tenants"]),
            str(r["mode"]),
            str(r["queries"]),
            f"{r['p50_ms']:.1f}",
            f"{r['p95_ms']:.1f}",
        )
    console.print(table)
    return rows
