"""`mneme bench cluster`: ingest and search on a Qdrant cluster while one node is killed.

A cluster of `nodes` Qdrant processes on loopback ports (`bench.qdrant_nodes`), every node in
`QDRANT_URL`, collections of `nodes` shards with replication factor 2 and write consistency 1
(docs/deployment.md says why). This process writes `turns` turns of `tenants` tenants through
the write path (`remember`, then the bookkeeping graph, as `mneme eval` does), each turn
acknowledged once `remember` returned; meanwhile a reader runs `retrieve` over the tenants
without pause. After a third of the turns one node is SIGKILLed (no flush, no goodbye); after
two thirds it is started again on its storage. Probe questions over a tenant written before the
kill (and not after) are asked while the node is down and again at the end: the same answers
mean searches returned complete results. At the end the bench waits until every replica is
Active again, runs the sweep (bookkeeping that failed meanwhile), and audits: acknowledged
turns lost, duplicates, episodes not processed, episodes without vectors, replicas of a shard
holding different point counts, and `mneme doctor` (which reports the cluster).

`nodes=1` (no kill) is the baseline the ratios in docs/deployment.md are taken against. The
graph store is SQLite in a temp dir, or the Neo4j at NEO4J_URI with `neo4j=True`.
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.qdrant_nodes import Node, Nodes
from bench.write import percentiles

if TYPE_CHECKING:
    from memory.services import Services
    from memory.settings import Settings

PROBE = "probe"
"""The tenant written before the kill and only read afterwards."""
PROBE_TURNS = 12
QUESTIONS = (
    "Which locker number did I get?",
    "Where is my gym?",
    "What did I say about row 3?",
    "Tell me about the Vienna gym",
)


def turn_text(tenant: str, i: int) -> str:
    """The user's message of turn i of a tenant (each one different)."""
    return f"Note {i} for {tenant}: my locker at the Vienna gym is number {1000 + i}, row {i % 7}."


@dataclass(slots=True)
class ClusterReport:
    """The audit of one cluster run (every figure of `mneme bench cluster`)."""

    nodes: int = 0
    shards: int = 0
    replication: int = 0
    write_consistency: int = 1
    turns: int = 0
    tenants: int = 0
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: int = 0
    bookkeeping_failures: int = 0
    """Episodes whose bookkeeping failed during the run (finished by the sweep afterwards)."""
    unprocessed: int = 0
    without_vectors: int = 0
    killed: str | None = None
    down_s: float = 0.0
    recovery_s: float = 0.0
    """From the restart until every replica was Active again."""
    ingest_turns_per_s: float = 0.0
    searches: int = 0
    search_failures: int = 0
    searches_while_down: int = 0
    search_failures_while_down: int = 0
    search_p50_ms: float = 0.0
    search_p95_ms: float = 0.0
    search_p95_while_down_ms: float = 0.0
    probes_while_down: int = 0
    probes_complete: int = 0
    """Probe questions asked while the node was down that returned what they return at the end."""
    vector_upsert_points_per_s: float = 0.0
    """The vector path alone (no embedding, no graph): 2,000 points upserted in batches of 250."""
    vector_search_p50_ms: float = 0.0
    vector_search_p95_ms: float = 0.0
    """The vector path alone: 200 fused (dense + sparse) searches of one tenant, one at a time."""
    failovers: int = 0
    replicas_consistent: bool = True
    doctor_ok: bool = False
    doctor: list[str] = field(default_factory=list)
    machine: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The report as plain data."""
        return {k: getattr(self, k) for k in self.__slots__}

    @property
    def ok(self) -> bool:
        """Nothing lost, doubled or left behind; every probe complete; the cluster healthy."""
        return (
            not self.lost
            and not self.duplicates
            and not self.unprocessed
            and not self.without_vectors
            and self.probes_complete == self.probes_while_down
            and self.replicas_consistent
            and self.doctor_ok
        )


async def bench_cluster(
    *,
    nodes: int = 3,
    turns: int = 60,
    tenants: int = 4,
    kill: bool = True,
    kill_node: int | None = 0,
    seed: int = 1,
    neo4j: bool = False,
    embedder: Any = None,
    work: Path | None = None,
) -> ClusterReport:
    """The whole run (module docstring); `kill_node` None picks one at random."""
    from graph.bookkeeping import run_episode
    from memory.embeddings.embedders import build_embedder
    from memory.retrieval.recipes import SIMPLE
    from memory.retrieval.retrieve import retrieve
    from memory.schema import Episode, episode_uid
    from memory.services import Services
    from memory.services.doctor import run_doctor
    from memory.write.episodes import remember, sweep
    from memory.write.filing import drain_outbox

    rng = random.Random(seed)
    report = ClusterReport(nodes=nodes, turns=turns, tenants=tenants)
    started = time.perf_counter()
    cluster = Nodes.create(size=nodes, cluster=nodes > 1).start()
    where = work or Path(tempfile.mkdtemp(prefix="mneme-cluster-"))
    report.shards = nodes
    report.replication = min(2, nodes)
    settings = _settings(cluster, where, report, neo4j)
    own_embedder = embedder is None
    embedder = embedder or build_embedder(settings)
    services = await Services.open(settings, embedder=embedder, sweep_interval_s=None)
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    acked: dict[str, tuple[str, str]] = {}  # uid -> (tenant, text)
    down = asyncio.Event()
    finished = asyncio.Event()
    latencies: list[tuple[float, bool]] = []
    probes: list[tuple[str, list[str]]] = []
    try:
        if neo4j:
            await services.graph._wipe_for_tests()  # type: ignore[attr-defined]

        async def write(tenant: str, i: int) -> None:
            text = turn_text(tenant, i)
            uid = episode_uid(tenant, "t", f"turn:{i}")
            done = await remember(
                services,
                tenant=tenant,
                thread_id="t",
                user_text=text,
                agent_text="Noted.",
                at=t0 + timedelta(minutes=i),
                uid=uid,
            )
            acked[done.uid] = (tenant, text)
            try:
                await run_episode(services, tenant, done.uid)
            except Exception:  # left for the sweep, counted
                report.bookkeeping_failures += 1

        async def ask(tenant: str, question: str) -> list[str]:
            found = await retrieve(services, tenant, question, SIMPLE, t0 + timedelta(days=30))
            return [c.episode_uid for c in found[:5]]

        for i in range(PROBE_TURNS):
            await write(PROBE, i)

        async def reader() -> None:
            while not finished.is_set():
                tenant = f"c{rng.randrange(tenants)}"
                question = rng.choice(QUESTIONS)
                was_down = down.is_set()
                began = time.perf_counter()
                try:
                    await ask(tenant, question)
                    ok = True
                except Exception:
                    ok = False
                latencies.append(((time.perf_counter() - began) * 1000.0, was_down))
                report.searches += 1
                report.search_failures += not ok
                if was_down:
                    await _probe_while_down(ask, report, probes, ok)
                await asyncio.sleep(0.05)

        victim = None
        if kill and nodes > 1:
            victim = cluster.nodes[kill_node if kill_node is not None else rng.randrange(nodes)]
            report.killed = victim.name
        reading = asyncio.create_task(reader())
        await _write_turns(cluster, victim, write, down, report)
        finished.set()
        await reading
        if victim is not None:
            restarted = time.perf_counter()
            await _wait_active(services)
            report.recovery_s = round(time.perf_counter() - restarted, 1)

        async def process(episode: Episode) -> None:
            await run_episode(services, episode.tenant, episode.uid)

        await drain_outbox(services, submit=False)
        await sweep(services, process=process, retry_quarantined=True)
        report.probes_complete = sum([answer == await ask(PROBE, q) for q, answer in probes])
        await _tally(services, report, acked, latencies, seed)
    finally:
        await services.close()
        if own_embedder:
            await embedder.close()
    try:
        doctor = await run_doctor(settings)
        report.doctor_ok = doctor.ok
        report.doctor = [f"{'ok' if c.ok else 'FAIL'} {c.name}: {c.detail}" for c in doctor.checks]
    finally:
        cluster.stop()
    one, five, _ = os.getloadavg()
    report.machine = f"{os.cpu_count()} CPUs, load average {one:.2f} / {five:.2f}"
    report.seconds = round(time.perf_counter() - started, 1)
    return report


async def _probe_while_down(
    ask: Callable[[str, str], Awaitable[list[str]]],
    report: ClusterReport,
    probes: list[tuple[str, list[str]]],
    ok: bool,
) -> None:
    """Count a search made while a node is down, and ask the probe tenant one question whose
    answer is compared with the one after recovery."""
    report.searches_while_down += 1
    report.search_failures_while_down += not ok
    question = QUESTIONS[report.probes_while_down % len(QUESTIONS)]
    try:
        probes.append((question, await ask(PROBE, question)))
    except Exception:
        probes.append((question, ["(failed)"]))
    report.probes_while_down += 1


async def _write_turns(
    cluster: Nodes,
    victim: Node | None,
    write: Callable[[str, int], Awaitable[None]],
    down: asyncio.Event,
    report: ClusterReport,
) -> None:
    """Write the run's turns round the tenants, `victim` (if any) killed for the middle third."""
    turns, tenants = report.turns, report.tenants
    began = time.perf_counter()
    killed_at = 0.0
    for i in range(turns):
        if victim is not None and i == turns // 3:
            await asyncio.to_thread(cluster.kill, victim)
            killed_at = time.perf_counter()
            down.set()
        if victim is not None and i == 2 * turns // 3:
            down.clear()
            report.down_s = round(time.perf_counter() - killed_at, 1)
            await asyncio.to_thread(cluster.start_node, victim)
        await write(f"c{i % tenants}", i)
    report.ingest_turns_per_s = round(turns / (time.perf_counter() - began), 2)


def _settings(cluster: Nodes, where: Path, report: ClusterReport, neo4j: bool) -> Settings:
    """The settings of the run: the cluster's nodes for vectors, SQLite (or Neo4j) for the graph."""
    from pydantic import SecretStr

    from memory.settings import Settings

    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=where / "data",
        graph_backend="neo4j" if neo4j else "sqlite",
        neo4j_uri=os.environ.get("NEO4J_URI") if neo4j else None,
        qdrant_path=None,
        qdrant_url=",".join(cluster.urls),
        qdrant_api_key=SecretStr(cluster.api_key),
        qdrant_shards=report.shards,
        qdrant_replication=report.replication,
        qdrant_write_consistency=1,
        llm_base_url=None,
        embedding_base_url=None,
    )


async def _tally(
    services: Services,
    report: ClusterReport,
    acked: dict[str, tuple[str, str]],
    latencies: list[tuple[float, bool]],
    seed: int,
) -> None:
    """Count into `report` what the stores hold after the run, the search latencies and the
    vector index's own speed."""
    from memory.schema import EpisodeStatus

    report.acknowledged = len(acked)
    episodes = await services.graph.episodes.list_by_status(None, list(EpisodeStatus), 10_000_000)
    by_uid = {e.uid: e for e in episodes}
    report.lost = sorted(
        uid
        for uid, (_, text) in acked.items()
        if by_uid.get(uid, None) is None or by_uid[uid].user_text != text
    )
    texts = [(e.tenant, e.user_text) for e in episodes]
    report.duplicates = len(texts) - len(set(texts))
    report.unprocessed = sum(e.status != EpisodeStatus.PROCESSED for e in episodes)
    with_vectors = await services.vectors.scroll_episode_uids("derivatives", None)
    report.without_vectors = len({e.uid for e in episodes if not e.archived} - with_vectors)
    report.failovers = services.vectors.endpoints.failovers  # type: ignore[attr-defined]
    ms = [m for m, _ in latencies]
    while_down = [m for m, d in latencies if d]
    report.search_p50_ms, report.search_p95_ms = (round(x, 1) for x in percentiles(ms))
    if while_down:
        report.search_p95_while_down_ms = round(percentiles(while_down)[1], 1)
    status = await services.vectors.describe()
    report.replicas_consistent = status.cluster_ok
    rate, p50, p95 = await vector_path(services.vectors, services.embedder.dim, seed)
    report.vector_upsert_points_per_s = round(rate)
    report.vector_search_p50_ms, report.vector_search_p95_ms = round(p50, 2), round(p95, 2)


async def vector_path(index: Any, dim: int, seed: int) -> tuple[float, float, float]:
    """Upsert rate and fused-search p50/p95 of the vector index alone, for a tenant of its own
    (random unit vectors, sparse vectors of made-up words), deleted again after."""
    import numpy as np

    from memory.schema import stable_uid
    from memory.stores.base import VectorPoint
    from memory.text.sparse import encode_document, encode_query

    gen = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    rows = gen.standard_normal((2000, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    points = [
        VectorPoint(
            stable_uid("vectors", str(i)),
            rows[i].tolist(),
            encode_document(" ".join(gen.choice(words, size=6))),
            {"tenant": "vectors", "episode_uid": f"v{i}", "text": "x"},
        )
        for i in range(len(rows))
    ]
    began = time.perf_counter()
    for start in range(0, len(points), 250):
        await index.upsert("derivatives", points[start : start + 250])
    rate = len(points) / (time.perf_counter() - began)
    samples = []
    for _ in range(200):
        dense = gen.standard_normal(dim).tolist()
        sparse = encode_query(" ".join(gen.choice(words, size=3)))
        t = time.perf_counter()
        await index.search("derivatives", "vectors", dense=dense, sparse=sparse, limit=10)
        samples.append((time.perf_counter() - t) * 1000.0)
    await index.delete_points("derivatives", "vectors", [p.id for p in points])  # no orphans
    p50, p95 = percentiles(samples)
    return rate, p50, p95


async def _wait_active(services: Any, timeout_s: float = 300.0) -> None:
    """Until the cluster reports every replica Active and replica counts agreeing."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = await services.vectors.describe()
        if status.cluster_ok:
            return
        await asyncio.sleep(1.0)
    raise TimeoutError(f"the cluster did not recover within {timeout_s:g} s")
