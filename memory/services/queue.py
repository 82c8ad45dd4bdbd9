"""The bounded in-process bookkeeping queue and the periodic sweep.

`remember` writes an episode as `pending` and submits it here; the reply never waits. When the
queue is full the episode stays `pending`, and so does one in the queue when the process dies:
the sweep (once when the queue starts, then every `SWEEP_INTERVAL_S`) first drains the outbox
(turns the graph store could not take), then finishes every episode not yet `processed`.

The queue runs the *pipeline* its services were opened with (`Services.open(pipeline=...)`): each
composition root (the server's lifespan, the CLI, `serve.api.Memory.open`, the harnesses, the
tests' fixtures) gives it the bookkeeping graph's runner, `graph.bookkeeping.run_episode`; the
memory layer never imports the graphs. Without a pipeline, submitted episodes stay `pending`
for the sweep of a process that has one.

Several processes (replicas of the server) may share one memory. Bookkeeping reads and rewrites
a tenant's beliefs, thread layers and session summaries, so a tenant's episodes are bookkept by
one process at a time: each run holds the tenant's `bookkeeping` lease in the graph store
(`memory.sleep.leases`, `MNEME_BOOKKEEPING_LEASE_S`) besides the process's own lock. A run that finds
the lease held waits for it (`LEASE_WAIT_S`), then leaves the episode to a later sweep without
counting a failure; a killed holder's lease frees itself within its length.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from memory.schema import Episode
from memory.sleep.leases import Busy, holding
from memory.write import quarantine
from memory.write.episodes import SweepReport, sweep
from memory.write.filing import drain_outbox

if TYPE_CHECKING:
    from memory.services.core import Services

log = logging.getLogger("mneme.queue")

QUEUE_SIZE = 256
SWEEP_INTERVAL_S = 300.0
BOOKKEEPING = "bookkeeping"
"""The lease a bookkeeping run holds on its tenant (one process at a time)."""
LEASE_WAIT_S = 60.0
"""How long a run waits for another process's hold on the tenant before leaving the episode to
a later sweep."""
LEASE_POLL_S = 0.25

Pipeline = Callable[["Services", str, str], Awaitable[object]]
"""Bookkeeping of one episode: `(services, tenant, episode uid)`."""


@dataclass(slots=True)
class QueueStats:
    """Counters of the queue since it started."""

    submitted: int = 0
    rejected: int = 0
    processed: int = 0
    failed: int = 0
    swept: int = 0
    deferred: int = 0
    """Runs left to a later sweep because another process held the tenant's lease throughout."""
    errors: list[str] = field(default_factory=list)


class BookkeepingQueue:
    """Runs bookkeeping in the background, bounded; the sweep catches whatever it misses."""

    def __init__(
        self,
        services: Services,
        pipeline: Pipeline | None,
        *,
        maxsize: int = QUEUE_SIZE,
        workers: int = 1,
        sweep_interval_s: float | None = SWEEP_INTERVAL_S,
    ) -> None:
        """A queue of `services` running `pipeline`; nothing starts until the first use."""
        self.services = services
        self.pipeline = pipeline
        self.maxsize = maxsize
        self.workers = workers
        self.sweep_interval_s = sweep_interval_s
        self.stats = QueueStats()
        self._queue: asyncio.Queue[tuple[str, str]] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._busy: set[str] = set()
        self._swept = asyncio.Event()
        self._draining: asyncio.Task[None] | None = None

    def _ensure_started(self) -> asyncio.Queue[tuple[str, str]]:
        loop = asyncio.get_running_loop()
        if self._queue is None or self._loop is not loop or self._loop.is_closed():
            self._loop = loop
            self._queue = asyncio.Queue(maxsize=self.maxsize)
            self._busy = set()
            self._swept = asyncio.Event()
            self._tasks = [
                loop.create_task(self._worker(), name=f"mneme-bookkeeping-{i}")
                for i in range(self.workers)
            ]
            self._tasks.append(loop.create_task(self._sweeper(), name="mneme-sweep"))
        return self._queue

    def start(self) -> None:
        """Start the workers and the start-up sweep in the running loop (idempotent)."""
        self._ensure_started()

    def submit(self, tenant: str, uid: str) -> bool:
        """Queue an episode for bookkeeping; False when it must wait for the sweep (queue full,
        or no pipeline)."""
        if self.pipeline is None:
            log.warning(
                "these services were opened without a bookkeeping pipeline (give them one: "
                "Services.open(pipeline=graph.bookkeeping.run_episode)); episode %s stays "
                "pending for the sweep of a process that has one",
                uid,
            )
            return False
        queue = self._ensure_started()
        try:
            queue.put_nowait((tenant, uid))
        except asyncio.QueueFull:
            self.stats.rejected += 1
            log.info("bookkeeping queue full; episode %s waits for the sweep", uid)
            return False
        self._busy.add(uid)
        self.stats.submitted += 1
        return True

    async def bookkeep(self, pipeline: Pipeline, tenant: str, uid: str) -> None:
        """Run `pipeline` on one episode holding the tenant's bookkeeping lease (and this
        process's lock of it); `Busy` when another process held it for `LEASE_WAIT_S`."""
        ttl = timedelta(seconds=self.services.settings.bookkeeping_lease_s)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LEASE_WAIT_S
        async with self.services.locks.get("bookkeeping", tenant):
            while True:
                try:
                    async with holding(self.services.graph, tenant, ttl, name=BOOKKEEPING):
                        await pipeline(self.services, tenant, uid)
                    return
                except Busy:
                    if loop.time() >= deadline:
                        raise
                    await asyncio.sleep(LEASE_POLL_S)

    async def _run(self, tenant: str, uid: str) -> None:
        assert self.pipeline is not None
        graph = self.services.graph
        try:
            await self.bookkeep(self.pipeline, tenant, uid)
            self.stats.processed += 1
        except Busy as exc:
            self.stats.deferred += 1
            log.info("bookkeeping of %s deferred to the sweep: %s", uid, exc)
            return
        except Exception as exc:
            self.stats.failed += 1
            error = f"{type(exc).__name__}: {exc}"
            self.stats.errors = [*self.stats.errors[-9:], f"{uid}: {error}"]
            log.warning("bookkeeping of %s failed (%s); the sweep will retry it", uid, error)
            with contextlib.suppress(Exception):  # the store may be what failed
                await quarantine.record_failure(
                    graph, tenant, uid, error, self.services.settings.max_attempts
                )
            return
        with contextlib.suppress(Exception):
            if uid in await quarantine.failures(graph, tenant):
                await quarantine.clear(graph, tenant, uid)

    async def _worker(self) -> None:
        assert self._queue is not None
        queue = self._queue
        while True:
            tenant, uid = await queue.get()
            try:
                await self._run(tenant, uid)
            finally:
                self._busy.discard(uid)
                queue.task_done()

    async def sweep_once(self, tenant: str | None = None) -> SweepReport:
        """Finish every episode not yet processed (skipping those the queue holds)."""
        pipeline = self.pipeline
        if pipeline is None:
            return SweepReport()

        async def run(episode: Episode) -> None:
            if episode.uid in self._busy:
                return
            self._busy.add(episode.uid)
            try:
                await self.bookkeep(pipeline, episode.tenant, episode.uid)
            except Busy:  # another process bookkeeps this tenant: the next sweep comes back
                self.stats.deferred += 1
            finally:
                self._busy.discard(episode.uid)

        report = await sweep(self.services, process=run, tenant=tenant)
        self.stats.swept += len(report.done)
        if report.done or report.failed:
            log.info("sweep: %d episodes finished, %d failed", len(report.done), len(report.failed))
        return report

    def drain_outbox_soon(self) -> None:
        """File the outbox's waiting turns in the background (the store just took a write)."""
        if self._draining is not None and not self._draining.done():
            return
        self._ensure_started()
        loop = asyncio.get_running_loop()
        self._draining = loop.create_task(self._drain_outbox(), name="mneme-outbox")

    async def _drain_outbox(self) -> None:
        try:
            await drain_outbox(self.services)
        except Exception as exc:
            log.warning("outbox drain failed (%s); the next sweep retries it", exc)

    async def _sweeper(self) -> None:
        while True:
            await self._drain_outbox()  # turns the store could not take, first and in order
            try:
                await self.sweep_once()
            except Exception as exc:
                log.warning("sweep failed (%s); retrying in %ss", exc, self.sweep_interval_s)
            self._swept.set()
            if not self.sweep_interval_s:
                return
            await asyncio.sleep(self.sweep_interval_s)

    async def drain(self) -> None:
        """Wait until the start-up sweep ran and every queued episode is done.

        Bound the wait with `asyncio.timeout(...)` around the call.
        """
        if self._queue is None or self._loop is not asyncio.get_running_loop():
            return
        await self._swept.wait()
        if self._draining is not None:
            await self._draining
        await self._queue.join()

    async def close(self) -> None:
        """Stop the workers; queued episodes stay pending for the next sweep."""
        tasks, self._tasks = self._tasks, []
        if self._draining is not None:
            tasks.append(self._draining)
            self._draining = None
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await task
        self._queue = None
        self._loop = None
