"""One mneme replica of `mneme bench replicas`: real agent turns on shared stores, until stopped.

`python -m bench.replica_worker NAME WORK` runs as a server replica would, on the stores of its
environment (NEO4J_URI, QDRANT_URL, MNEME_DATA_DIR: shared by every replica, so its outbox
directory is too), with its bookkeeping queue and a sweep every few seconds. It takes turns from
the work directory's queue (`WORK/todo/<tenant> <i>`, claimed by renaming the file into
`WORK/taken/NAME/`, as a load balancer hands a request to one replica), runs each through the
agent graph (offline, the message carrying its own id, so a turn retried on another replica is
the same episode) and appends `tenant i uid outcome ms` to `WORK/acks-NAME` once the reply came
back (an acknowledged turn). Every few turns it consolidates a tenant (micro sleep).

While `WORK/faults/graph-NAME` exists its graph writes fail (its turns then go to its outbox).
Instrumentation for the audit, written from inside the leases: `WORK/bookkeeping-NAME` (uid, the
episode's status when the run began, start, end, its content hash then) and `WORK/consolidation-NAME` (tenant, start,
end, or `busy`).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bench.fault_child import install_faults

SWEEP_S = 3.0
CONSOLIDATE_EVERY = 5


def message(tenant: str, i: int) -> str:
    """The user's message of turn i of a tenant (each one different)."""
    return f"Note {i} for {tenant}: my locker at the Vienna gym is number {1000 + i}, row {i % 7}."


def _log(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(line + "\n")
        out.flush()
        os.fsync(out.fileno())


def _claim(work: Path, name: str) -> tuple[str, int] | None:
    mine = work / "taken" / name
    mine.mkdir(parents=True, exist_ok=True)
    for path in sorted((work / "todo").glob("*")):
        try:
            path.rename(mine / path.name)
        except OSError:
            continue  # another replica took it
        tenant, i = path.name.rsplit(" ", 1)
        return tenant, int(i)
    return None


async def main(name: str, work: Path) -> None:
    """Serve turns until `WORK/stop` exists."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    import graph.bookkeeping as bookkeeping
    import nodes.sleep as sleep_node
    from graph.agent import builder
    from graph.consolidation import run_consolidation
    from memory.services import Services, set_services
    from memory.settings import load_settings
    from memory.sleep.leases import Busy, holding

    real = bookkeeping.run_episode

    async def logged(services: Any, tenant: str, uid: str) -> Any:
        episode = await services.graph.episodes.get(tenant, uid)
        before = episode.status.value if episode is not None else "missing"
        content = episode.content_hash[:16] if episode is not None else "-"
        began = time.time()
        result = await real(services, tenant, uid)
        _log(
            work / f"bookkeeping-{name}",
            f"{uid} {before} {began:.6f} {time.time():.6f} {content}",
        )
        return result

    @asynccontextmanager
    async def held(graph: Any, tenant: str, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with holding(graph, tenant, *args, **kwargs) as lease:
            began = time.time()
            yield lease
            _log(work / f"consolidation-{name}", f"{tenant} {began:.6f} {time.time():.6f}")

    sleep_node.holding = held  # type: ignore[attr-defined]

    services = await Services.open(load_settings(), sweep_interval_s=SWEEP_S, pipeline=logged)
    set_services(services)
    install_faults(services, work / "faults", suffix=f"-{name}")
    services.bookkeeping.start()  # drains the outbox (every replica's dead files) and sweeps
    app: Any = builder.compile(checkpointer=InMemorySaver())
    rng = random.Random(name)
    done = 0
    while not (work / "stop").exists():
        job = _claim(work, name)
        if job is None:
            await asyncio.sleep(0.2)
            continue
        tenant, i = job
        began = time.perf_counter()
        state = await app.ainvoke(
            {"messages": [HumanMessage(content=message(tenant, i), id=f"{tenant}-m{i}")]},
            {"configurable": {"thread_id": f"{tenant}-thread"}},
            context={"user_id": tenant},
        )
        ms = (time.perf_counter() - began) * 1000.0
        episode = state.get("episode") or {}
        _log(
            work / f"acks-{name}",
            f"{tenant} {i} {episode.get('uid')} {episode.get('outcome')} {ms:.1f}",
        )
        done += 1
        if done % CONSOLIDATE_EVERY == 0:
            who = f"c{rng.randrange(int(os.environ.get('MNEME_BENCH_TENANTS', '4')))}"
            try:
                await run_consolidation(services, who, "micro")
            except Busy:
                _log(work / f"consolidation-{name}", f"{who} busy")
            except Exception as exc:  # reported, never fatal to the replica
                _log(work / f"consolidation-{name}", f"{who} error {type(exc).__name__}")
    await services.bookkeeping.drain()
    await services.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2])))
