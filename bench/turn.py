"""`mneme bench turn`: per-turn time in the memory layer, excluding LLM and embedding time.

Fills an embedded memory (SQLite + Qdrant local files) with N processed episodes, then runs agent
turns offline (no LLM: the heuristics answer). Embedding time is measured and subtracted; store
time (graph + vector calls) is measured on its own. Bulk episodes get random unit vectors (search
cost does not depend on what vectors mean); the query side is embedded for real.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.write import machine, percentiles, sample_turn
from memory.schema import EpisodeStatus, NewEpisode, stable_uid, utcnow
from memory.services import Services
from memory.settings import Settings, load_settings
from memory.stores.base import VectorPoint
from memory.text.sparse import encode_document

BATCH = 500


class Timed:
    """Delegate every async method of `inner`, adding the time spent to `self.seconds`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.seconds = 0.0
        self.by_method: dict[str, float] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not asyncio.iscoroutinefunction(attr):
            return attr

        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await attr(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                self.seconds += spent
                self.by_method[name] = self.by_method.get(name, 0.0) + spent

        return timed


def embedded_settings(tmp: Path, **overrides: object) -> Settings:
    """The process settings on a throw-away embedded memory in `tmp` (SQLite, Qdrant Edge)."""
    return load_settings(
        data_dir=tmp,
        graph_backend="sqlite",
        qdrant_path=tmp / "vectors",
        neo4j_uri=None,
        qdrant_url=None,
        **overrides,
    )


async def _fill(services: Services, tenant: str, n: int, rng: random.Random) -> None:
    gen = np.random.default_rng(3)
    start = utcnow() - timedelta(days=365)
    for first in range(0, n, BATCH):
        points = []
        count = min(BATCH, n - first)
        vecs = gen.standard_normal((count, services.embedder.dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        for j in range(count):
            i = first + j
            user, agent = sample_turn(rng)
            at = start + timedelta(minutes=30 * i)
            result = await services.graph.episodes.create(
                NewEpisode(
                    tenant=tenant,
                    thread_id=f"t{i // 20}",
                    user_text=user,
                    agent_text=agent,
                    created_at=at,
                    status=EpisodeStatus.PROCESSED,
                )
            )
            points.append(
                VectorPoint(
                    id=stable_uid(tenant, result.uid, "derivative", "0"),
                    dense=vecs[j].tolist(),
                    sparse=encode_document(user),
                    payload={
                        "tenant": tenant,
                        "episode_uid": result.uid,
                        "thread_id": f"t{i // 20}",
                        "text": user,
                        "created_at": at.isoformat(),
                        "archived": False,
                        "salience": 0.5,
                    },
                )
            )
        await services.vectors.upsert("derivatives", points)


async def _measure(
    services: Services, tenant: str, turns: int, rng: random.Random
) -> dict[str, Any]:
    from langgraph.checkpoint.memory import InMemorySaver

    from graph.agent import builder
    from memory.services import ChatModels, use_services
    from memory.services.queue import BookkeepingQueue

    graph: Any = Timed(services.graph)
    vectors: Any = Timed(services.vectors)
    embedder: Any = Timed(services.embedder)
    timed = Services(
        settings=services.settings,
        graph=graph,
        vectors=vectors,
        embedder=embedder,
        chat=ChatModels.offline_for(services.settings),
        owns_embedder=False,
    )

    async def no_bookkeeping(*_: Any) -> None:  # bookkeeping is not part of the turn
        return None

    timed.queue = BookkeepingQueue(timed, no_bookkeeping, sweep_interval_s=None)
    app: Any = builder.compile(checkpointer=InMemorySaver())
    memory_ms, store_ms, total_ms, calls = [], [], [], []
    try:
        with use_services(timed):
            for i in range(turns):
                question = sample_turn(rng)[0].rstrip(".") + "?"
                before = (graph.seconds + vectors.seconds, embedder.seconds)
                start = time.perf_counter()
                replied = None
                async for mode, chunk in app.astream(
                    {"messages": [{"role": "user", "content": question}]},
                    {"configurable": {"thread_id": f"bench-{i}"}},
                    context={"user_id": tenant},
                    stream_mode=["updates", "values"],
                ):
                    if mode == "updates" and "respond" in chunk and replied is None:
                        # Offline the reply is whole when `respond` returns: with an LLM, this
                        # is when its first token would be asked for.
                        replied = time.perf_counter()
                        store = graph.seconds + vectors.seconds - before[0]
                        embed = embedder.seconds - before[1]
                    elif mode == "values":
                        state = chunk
                total = time.perf_counter() - start
                assert replied is not None, "the respond node did not run"
                total_ms.append(total * 1000)
                memory_ms.append((replied - start - embed) * 1000)
                store_ms.append(store * 1000)
                calls.append(state["usage"]["llm_calls"])
    finally:
        await timed.bookkeeping.close()
    slowest = sorted(
        [(f"graph.{k}", v) for k, v in graph.by_method.items()]
        + [(f"vectors.{k}", v) for k, v in vectors.by_method.items()],
        key=lambda kv: -kv[1],
    )
    return {
        "slowest": [(k, round(v * 1000 / turns, 1)) for k, v in slowest[:5]],
        "memory": percentiles(memory_ms),
        "store": percentiles(store_ms),
        "total": percentiles(total_ms),
        "llm_calls": float(np.mean(calls)),
    }


async def bench_turn(
    *,
    sizes: list[int],
    turns: int,
    console: Console,
    progress: Callable[[str], Awaitable[None]] | None = None,
) -> list[dict[str, Any]]:
    """Run the turn benchmark at each size and print a table; return its rows."""
    from memory.embeddings.embedders import build_embedder
    from memory.embeddings.install import preflight

    rng = random.Random(7)
    base = load_settings()
    embedder = build_embedder(base)
    preflight(embedder)  # a missing model: one line with the fix, before any work
    await embedder.embed_documents(["warm up"])
    rows: list[dict[str, Any]] = []
    try:
        for n in sizes:
            with tempfile.TemporaryDirectory(prefix="mneme-bench-turn-") as tmp:
                settings = embedded_settings(Path(tmp))
                services = await Services.open(settings, embedder=embedder)
                try:
                    console.print(f"filling {n:,} episodes ...")
                    await _fill(services, "bench", n, rng)
                    result = await _measure(services, "bench", turns, rng)
                finally:
                    await services.close()
            rows.append({"episodes": n, **result})
    finally:
        await embedder.close()
    table = Table(title=f"agent turn, offline, {turns} turns per size (ms)")
    for col in (
        "episodes",
        "before reply p50",
        "before reply p95",
        "stores p50",
        "stores p95",
        "whole turn p50",
        "LLM calls/turn",
    ):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            f"{r['episodes']:,}",
            f"{r['memory'][0]:.1f}",
            f"{r['memory'][1]:.1f}",
            f"{r['store'][0]:.1f}",
            f"{r['store'][1]:.1f}",
            f"{r['total'][0]:.1f}",
            f"{r['llm_calls']:.1f}",
        )
    console.print(table)
    console.print(machine())
    for r in rows:
        console.print(f"{r['episodes']:,} episodes, ms per turn by store call: {r['slowest']}")
    console.print(
        "before reply = memory-layer time from the start of the turn until the reply is "
        "asked for (no LLM: offline heuristics; the query embedding subtracted); stores = time "
        "inside graph and vector calls before the reply; whole turn = everything, embedding and "
        "`remember` included. With an LLM a turn makes 2-3 foreground calls (route, which also "
        "scores the evidence; rerank when the route is not SIMPLE-without-rerank and there is "
        "more than one candidate; respond) and bookkeeping 1-2 per episode."
    )
    return rows
