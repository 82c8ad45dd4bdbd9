"""`mneme bench retrieve`: the whole `retrieve` at scale on the embedded default, short and long turns.

Fills a throw-away embedded memory (SQLite graph + Qdrant Edge) with processed episodes until the
measured tenant holds N derivative points, with a second tenant's points beside them (so the
tenant filter selects), then times `memory.retrieval.retrieve.retrieve` (every search, the fusion, the
graph reads, the rerank) with the questions embedded beforehand (wall time and CPU time per
question, after one untimed question). Dense vectors of the stored points are synthetic:
real all-MiniLM-L6-v2 embeddings of a pool of 2,000 made-up turns, each point one of them plus
noise (embedding 100k texts would take half an hour here), so that questions meet them at real
similarities and the dense list comes back full, as on real memories (random unit vectors, used
before, fell below the 0.15 similarity floor and left it nearly empty); their text, sparse
vectors, chunks and prospective points are real. Two fixtures: short turns (15-40 words a side)
and long turns (300-800 words of user text, split by the deterministic splitter into several
derivatives, as bookkeeping does).
"""

from __future__ import annotations

import random
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.write import machine, percentiles, sample_turn
from memory.embeddings.embedders import Embedder, build_embedder
from memory.embeddings.install import preflight
from memory.retrieval.recipes import SIMPLE, TEMPORAL
from memory.retrieval.retrieve import retrieve
from memory.schema import EntityType, EpisodeStatus, NewEpisode, utcnow
from memory.services import ChatModels, Services
from memory.settings import load_settings
from memory.stores.base import VectorPoint
from memory.text.chunking import split_turn
from memory.text.sparse import encode_document
from memory.write.episodes import derivative_id, question_id

TENANT = "bench"
OTHER = "neighbour"
BATCH = 512
NAMES = ("Lisbon", "Maya", "Pixel", "Brest", "Kelpie", "Porto", "Turing", "Vienna")


def long_turn(rng: random.Random) -> str:
    """A made-up turn of 300-800 words in sentences of 15-40 words."""
    target = rng.randint(300, 800)
    sentences: list[str] = []
    count = 0
    while count < target:
        sentences.append(sample_turn(rng)[0])
        count += len(sentences[-1].split())
    return " ".join(sentences)


POOL = 2000
"""Real turns embedded for the stored points' dense vectors (`real_pool`)."""
POOL_NOISE = 0.5
"""Noise added to a pooled vector, relative to its norm: cosine to its source about 0.9."""


async def real_pool(embedder: Embedder, size: int = POOL, seed: int = 5) -> np.ndarray:
    """Real embeddings of `size` made-up turns (unit rows), for `fill`'s dense vectors: the
    questions then meet stored points at the similarities real memories have (random unit
    vectors score about 0 +- 0.05 against any question, below retrieval's 0.15 floor, so a
    dense list of them comes back nearly empty and costs nothing)."""
    rng = random.Random(seed)
    texts = [sample_turn(rng)[0] for _ in range(size)]
    rows = np.asarray(await embedder.embed_documents(texts), dtype=np.float32)
    unit: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return unit


def pooled_vectors(
    gen: np.random.Generator, n: int, dim: int, pool: np.ndarray | None
) -> np.ndarray:
    """`n` unit vectors: random, or pooled real embeddings with noise."""
    if pool is None:
        vecs = gen.standard_normal((n, dim)).astype(np.float32)
    else:
        noise = gen.standard_normal((n, dim)).astype(np.float32) * (POOL_NOISE / np.sqrt(dim))
        vecs = pool[gen.integers(0, len(pool), size=n)] + noise
    unit: np.ndarray = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    return unit


async def fill(
    services: Services,
    derivatives: int,
    *,
    long: bool,
    seed: int = 3,
    pool: np.ndarray | None = None,
) -> int:
    """Episodes of `TENANT` until it holds `derivatives` derivative points (and a tenth as many
    for `OTHER`); returns the episodes written. Dense vectors are random unit vectors, or with
    `pool` (`real_pool`) a pooled real embedding plus noise."""
    rng = random.Random(seed)
    gen = np.random.default_rng(seed)
    start = utcnow() - timedelta(days=365)
    for name in NAMES:
        await services.graph.entities.upsert(TENANT, name, EntityType.PLACE)
    episodes = 0
    for tenant, target in ((TENANT, derivatives), (OTHER, max(1, derivatives // 10))):
        written = 0
        derivs: list[VectorPoint] = []
        questions: list[VectorPoint] = []
        while written < target:
            user = long_turn(rng) if long else sample_turn(rng)[0]
            if rng.random() < 0.3:
                user = f"{user} {rng.choice(NAMES)}."
            agent = sample_turn(rng)[1]
            at = start + timedelta(minutes=10 * episodes)
            result = await services.graph.episodes.create(
                NewEpisode(
                    tenant=tenant,
                    thread_id=f"t{episodes // 20}",
                    user_text=f"{episodes} {user}",
                    agent_text=agent,
                    created_at=at,
                    status=EpisodeStatus.PROCESSED,
                )
            )
            episodes += 1
            chunks = split_turn(user, agent)[: max(1, target - written)]
            base = {
                "tenant": tenant,
                "episode_uid": result.uid,
                "thread_id": f"t{episodes // 20}",
                "created_at": at.isoformat(),
                "archived": False,
                "salience": 0.5,
            }
            vecs = pooled_vectors(gen, len(chunks) + 1, services.embedder.dim, pool)
            for i, chunk in enumerate(chunks):
                derivs.append(
                    VectorPoint(
                        derivative_id(tenant, result.uid, i),
                        vecs[i].tolist(),
                        encode_document(chunk.text),
                        {**base, "text": chunk.text, "chunk": i, "role": chunk.role},
                    )
                )
            question = f"What did I say about {' '.join(user.split()[:4])}?"
            questions.append(
                VectorPoint(
                    question_id(tenant, result.uid, 0, 0),
                    vecs[-1].tolist(),
                    encode_document(question),
                    {
                        **base,
                        "text": question,
                        "chunk": 0,
                        "derivative_id": derivative_id(tenant, result.uid, 0),
                        "derivative_text": chunks[0].text,
                    },
                )
            )
            written += len(chunks)
            if len(derivs) >= BATCH:
                await services.vectors.upsert("derivatives", derivs)
                await services.vectors.upsert("prospective", questions)
                derivs, questions = [], []
        await services.vectors.upsert("derivatives", derivs)
        await services.vectors.upsert("prospective", questions)
    return episodes


class Precomputed:
    """An embedder that serves the questions' vectors computed beforehand (and delegates the
    rest), so the timed region holds no embedding: neither its wall time nor its CPU."""

    def __init__(self, inner: Embedder, vectors: dict[str, Any]) -> None:
        self._inner = inner
        self._vectors = vectors

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def embed_query(self, text: str) -> Any:
        """The query's vector, from the cache when it was embedded before."""
        if text in self._vectors:
            return self._vectors[text]
        return await self._inner.embed_query(text)


async def measure(services: Services, queries: int, rng: random.Random) -> dict[str, Any]:
    """`retrieve` p50/p95 wall time and mean CPU time (all threads) per question, query
    embedding excluded, for SIMPLE and TEMPORAL questions."""
    asked: list[str] = []
    for _ in range(queries * 2):
        words = sample_turn(rng)[0].rstrip(".").split()[:8]
        asked.append(" ".join(words) + (f" in {rng.choice(NAMES)}?" if rng.random() < 0.5 else "?"))
    vectors = {q: await services.embedder.embed_query(q) for q in asked}
    embedder: Any = Precomputed(services.embedder, vectors)
    timed = Services(
        settings=services.settings,
        graph=services.graph,
        vectors=services.vectors,
        embedder=embedder,
        chat=services.chat,
        owns_embedder=False,
    )
    now = utcnow()
    await retrieve(timed, TENANT, asked[0], SIMPLE, now)  # first-call costs (caches, plans)
    out: dict[str, Any] = {}
    for i, recipe in enumerate((SIMPLE, TEMPORAL)):
        samples = []
        cpu = 0.0
        for question in asked[i * queries : (i + 1) * queries]:
            began, began_cpu = time.perf_counter(), time.process_time()
            await retrieve(timed, TENANT, question, recipe, now)
            samples.append((time.perf_counter() - began) * 1000)
            cpu += time.process_time() - began_cpu
        p50, p95 = percentiles(samples)
        out[recipe.name] = {
            "p50_ms": round(p50, 1),
            "p95_ms": round(p95, 1),
            "cpu_ms": round(cpu * 1000 / queries, 1),
        }
    return out


async def bench_retrieve(
    *, sizes: list[int], queries: int, long: bool, console: Console, optimize: bool = True
) -> list[dict[str, Any]]:
    """Fill, optimise and time `retrieve` at each size; print a table and return its rows."""
    rng = random.Random(11)
    embedder: Embedder = build_embedder(load_settings())
    preflight(embedder)  # a missing model: one line with the fix, before any work
    await embedder.embed_query("warm up")
    rows: list[dict[str, Any]] = []
    try:
        console.print(f"embedding {POOL:,} made-up turns for the stored vectors ...")
        pool = await real_pool(embedder)
        for n in sizes:
            for kind in (("short", False), ("long", True)) if long else (("short", False),):
                with tempfile.TemporaryDirectory(prefix="mneme-bench-retrieve-") as tmp:
                    settings = load_settings(
                        data_dir=Path(tmp),
                        graph_backend="sqlite",
                        qdrant_path=None,
                        qdrant_url=None,
                        neo4j_uri=None,
                    )
                    services = await Services.open(
                        settings, embedder=embedder, chat=ChatModels.offline_for(settings)
                    )
                    try:
                        console.print(f"filling {n:,} derivatives of {kind[0]} turns ...")
                        began = time.perf_counter()
                        episodes = await fill(services, n, long=kind[1], pool=pool)
                        fill_s = time.perf_counter() - began
                        began = time.perf_counter()
                        if optimize:
                            await services.vectors.optimize()
                        build_s = time.perf_counter() - began
                        result = await measure(services, queries, rng)
                    finally:
                        await services.close()
                rows.append(
                    {
                        "derivatives": n,
                        "turns": kind[0],
                        "episodes": episodes,
                        "fill_s": round(fill_s, 1),
                        "optimize_s": round(build_s, 1),
                        **result,
                    }
                )
    finally:
        await embedder.close()
    table = Table(
        title=f"retrieve on the embedded default, {queries} questions a recipe (ms, "
        "query embedding excluded)"
    )
    for col in (
        "derivatives",
        "turns",
        "episodes",
        "SIMPLE p50",
        "SIMPLE p95",
        "TEMPORAL p50",
        "TEMPORAL p95",
        "CPU/question",
        "HNSW build s",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            f"{r['derivatives']:,}",
            r["turns"],
            f"{r['episodes']:,}",
            f"{r['SIMPLE']['p50_ms']}",
            f"{r['SIMPLE']['p95_ms']}",
            f"{r['TEMPORAL']['p50_ms']}",
            f"{r['TEMPORAL']['p95_ms']}",
            f"{r['SIMPLE']['cpu_ms']} / {r['TEMPORAL']['cpu_ms']}",
            f"{r['optimize_s']}",
        )
    console.print(table)
    console.print(
        f"{machine()}; stored dense vectors are synthetic (pooled real embeddings + noise), "
        "texts real; CPU is the "
        "process's CPU time per question (SIMPLE / TEMPORAL, all threads), steadier than wall "
        "time on a shared machine"
    )
    return rows
