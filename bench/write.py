"""`mneme bench write`: durable write latency and indexing throughput.

On the embedded default it works in a throw-away data directory; on Neo4j it writes under a
fresh tenant and deletes what it wrote. Reports p50/p95 of `remember` and episodes/s of
`index_episode` with the configured embedder.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from rich.console import Console

from memory.services import Services
from memory.settings import Settings, load_settings
from memory.write.episodes import index_episode, remember

_WORDS = (
    "garden trip sister bought paint concert moved city Boston job interview dog vet "
    "marathon training recipe pasta birthday guitar lessons book club novel hiking trail "
    "weekend meeting project deadline coffee museum photos camera beach vacation"
).split()


def sample_turn(rng: random.Random) -> tuple[str, str]:
    """A made-up, plausible chat turn of 15-40 words a side."""
    user = " ".join(rng.choices(_WORDS, k=rng.randint(15, 40))).capitalize() + "."
    agent = " ".join(rng.choices(_WORDS, k=rng.randint(15, 40))).capitalize() + "."
    return user, agent


def machine() -> str:
    """The CPU count and load averages, printed with every timing (these machines are shared)."""
    one, five, fifteen = os.getloadavg()
    return f"{os.cpu_count()} CPUs, load average {one:.2f} / {five:.2f} / {fifteen:.2f}"


def percentiles(samples_ms: list[float]) -> tuple[float, float]:
    """p50 and p95 of a list of milliseconds."""
    arr = np.asarray(samples_ms)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def bench_settings(base: Settings, tmp: Path) -> Settings:
    """The settings to benchmark with: a throw-away embedded store unless Neo4j is configured."""
    if base.resolved_graph_backend == "neo4j":
        return base.model_copy(update={"qdrant_path": tmp / "vectors", "qdrant_url": None})
    return base.model_copy(
        update={"data_dir": tmp, "sqlite_path": None, "qdrant_path": None, "qdrant_url": None}
    )


async def bench_write(*, n: int, index_n: int, console: Console) -> dict[str, float]:
    """Run the write benchmark and print its figures; return them too."""
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="mneme-bench-") as tmp:
        settings = bench_settings(load_settings(), Path(tmp))
        services = await Services.open(settings)
        tenant = f"bench-{uuid.uuid4().hex[:8]}"
        uids: list[str] = []
        try:
            await services.embedder.embed_documents(["warm up"])
            latencies: list[float] = []
            for i in range(n):
                user, agent = sample_turn(rng)
                start = time.perf_counter()
                result = await remember(
                    services,
                    tenant=tenant,
                    thread_id=f"t{i // 20}",
                    user_text=f"{i} {user}",
                    agent_text=agent,
                )
                latencies.append((time.perf_counter() - start) * 1000)
                uids.append(result.uid)
            p50, p95 = percentiles(latencies)
            start = time.perf_counter()
            for uid in uids[:index_n]:
                await index_episode(services, tenant, uid)
            elapsed = time.perf_counter() - start
            rate = min(index_n, len(uids)) / elapsed if elapsed else 0.0
        finally:
            if settings.resolved_graph_backend == "neo4j":
                for uid in uids:
                    await services.graph.episodes.delete(tenant, uid)
            await services.close()
    figures = {"remember_p50_ms": p50, "remember_p95_ms": p95, "index_episodes_per_s": rate}
    console.print(
        f"graph={settings.resolved_graph_backend} embedder={settings.embedding_model}\n"
        f"remember: n={n} p50={p50:.2f} ms p95={p95:.2f} ms\n"
        f"index_episode: n={min(index_n, len(uids))} {rate:.1f} episodes/s\n{machine()}"
    )
    return figures
