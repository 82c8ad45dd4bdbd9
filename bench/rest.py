"""`mneme bench rest`: search latency through the REST route at N memories, on the embedded
default, through a real `langgraph dev` server.

The memory is filled as `mneme bench retrieve` fills it (`bench.retrieve.fill`: real chat texts
and sparse vectors, dense vectors pooled from 2,000 real embeddings plus noise, so 10k memories
take seconds rather than an embedding run), then a keyed server is started on it and
`GET /memories?q=...` is timed one request at a time, from the client: HTTP, auth, the route,
the query embedding and retrieval.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.qdrant_nodes import free_port
from bench.retrieve import TENANT, fill, real_pool
from bench.write import bench_settings, machine, percentiles, sample_turn
from memory.services import Services
from memory.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-rest-key-0123456789abcdef"


async def _fill(data: Path, memories: int) -> int:
    settings = bench_settings(load_settings(), data)
    services = await Services.open(settings)
    try:
        pool = await real_pool(services.embedder)
        return await fill(services, memories, long=False, pool=pool)
    finally:
        await services.close()


def _serve(data: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MNEME_", "NEO4J_", "QDRANT_", "LANGSMITH_"))
    }
    env.update(
        MNEME_DATA_DIR=str(data),
        MNEME_GRAPH_BACKEND="sqlite",
        MNEME_API_KEYS=f"{TENANT}:{KEY}",
        LANGSMITH_TRACING="false",
        PYTHONPATH=str(ROOT),
    )
    langgraph = str(Path(sys.executable).parent / "langgraph")
    args = [langgraph, "dev", "--config", str(ROOT / "langgraph.json"), "--host", "127.0.0.1"]
    args += ["--port", str(port), "--no-browser", "--no-reload", "--allow-blocking"]
    with log.open("wb") as handle:
        proc = subprocess.Popen(
            args,
            cwd=data,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc, f"http://127.0.0.1:{port}"


def _wait(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the server did not start:\n{log.read_text()[-2000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=30)


def bench_rest(fragments: int, queries: int, seed: int = 7) -> dict[str, Any]:
    """Fill a throw-away memory until the benched user has `fragments` derivative points (about
    0.55 turns each, plus a tenth as many for a neighbour), serve it, time `queries` searches."""
    work = Path(tempfile.mkdtemp(prefix="mneme-bench-rest-"))
    started = time.perf_counter()
    episodes = asyncio.run(_fill(work, fragments))
    fill_s = time.perf_counter() - started
    proc, url = _serve(work, work / "server.log")
    try:
        _wait(url, proc, work / "server.log")
        rng = random.Random(seed)
        asked = [f"What did I say about {sample_turn(rng)[0]}" for _ in range(queries + 5)]
        samples: list[float] = []
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as http:
            for i, q in enumerate(asked):
                t0 = time.perf_counter()
                response = http.get("/memories", params={"q": q, "k": 10}, timeout=60)
                elapsed = (time.perf_counter() - t0) * 1000
                response.raise_for_status()
                if i >= 5:  # the first few warm the server up
                    samples.append(elapsed)
    finally:
        _stop(proc)
        shutil.rmtree(work, ignore_errors=True)
    p50, p95 = percentiles(samples)
    return {
        "episodes": episodes,
        "fragments": fragments,
        "queries": len(samples),
        "fill_s": round(fill_s, 1),
        "p50_ms": round(p50, 1),
        "p95_ms": round(p95, 1),
        "max_ms": round(max(samples), 1),
        "machine": machine(),
    }
