"""One consolidation per tenant at a time across processes: a renewed lease in the graph store.

Every consolidation run (`mneme consolidate`, the server's schedule, a Studio or HTTP run)
holds the tenant's `consolidation` lease for its whole length (`holding`). The lease is taken in
one store transaction (`LeaseStore.take`), lasts `MNEME_SLEEP_LEASE_S` (120 s by default)
and is renewed every third of that while the run goes on, so a run of any length keeps it and
a process killed mid-run leaves a lease that frees itself at most that long after its last
renewal (the next run then finishes the killed one's plan). A run that finds the lease held
raises `Busy` at once, before touching anything. If a renewal finds the lease taken (this
process stalled past its expiry and another took over), the run is cancelled and raises `Busy`:
each level is idempotent and crash-safe, so stopping at any point leaves nothing half done that
the next run does not finish. A store that is down at a renewal is retried at the next one
(the run's own writes fail meanwhile). Within one process, runs of a tenant queue on the
process lock first (`services.locks`), so only runs of other processes see `Busy`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from datetime import timedelta
from typing import TYPE_CHECKING

from memory.schema import utcnow
from memory.stores.base import Lease, StoreError

if TYPE_CHECKING:
    from memory.stores.base import GraphStore

log = logging.getLogger("mneme.leases")

CONSOLIDATION = "consolidation"
"""The lease every consolidation run of a tenant holds."""


class Busy(Exception):
    """Another process holds the lease: the work is running there; try again after it."""

    def __init__(self, tenant: str, lease: Lease, *, lost: bool = False) -> None:
        self.tenant = tenant
        self.lease = lease
        until = lease.expires.strftime("%Y-%m-%d %H:%M:%S UTC")
        what = "was taken over by" if lost else "is running in"
        super().__init__(
            f"consolidation of {tenant!r} {what} another process (its lease runs until "
            f"{until} unless renewed); try again when it has finished"
        )


def new_holder() -> str:
    """A holder id for one run: host, pid and a random part (two runs never share one)."""
    return f"{socket.gethostname()} pid {os.getpid()} run {secrets.token_hex(4)}"


@asynccontextmanager
async def holding(
    graph: GraphStore,
    tenant: str,
    ttl: timedelta,
    *,
    name: str = CONSOLIDATION,
    renew_every: float | None = None,
    holder: str | None = None,
) -> AsyncIterator[Lease]:
    """Hold the tenant's lease `name` for the block (taken now for `ttl`, renewed every
    `renew_every` seconds, by default a third of `ttl`, released after); `Busy` if another
    holder has it, or if it is taken over while the block runs (the block is cancelled)."""
    me = holder or new_holder()
    lease = await graph.leases.take(tenant, name, me, utcnow(), ttl)
    if lease.holder != me:
        log.info("lease %s of %s held by %s; not running", name, tenant, lease.holder)
        raise Busy(tenant, lease)
    task = asyncio.current_task()
    assert task is not None  # inside a coroutine
    lost: list[Lease] = []
    every = renew_every if renew_every is not None else ttl.total_seconds() / 3
    renewer = asyncio.create_task(_renew(graph, tenant, name, me, ttl, every, task, lost))
    try:
        yield lease
    except asyncio.CancelledError:
        if lost and task.uncancel() == 0:  # cancelled by the renewer, not from outside
            raise Busy(tenant, lost[0], lost=True) from None
        raise
    finally:
        renewer.cancel()
        with suppress(asyncio.CancelledError):
            await renewer
        if not lost:
            await _release(graph, tenant, name, me)


async def _renew(
    graph: GraphStore,
    tenant: str,
    name: str,
    holder: str,
    ttl: timedelta,
    every: float,
    run: asyncio.Task[object],
    lost: list[Lease],
) -> None:
    while True:
        await asyncio.sleep(every)
        try:
            lease = await graph.leases.take(tenant, name, holder, utcnow(), ttl)
        except StoreError as exc:  # the store is down: the run's writes fail too; retry
            log.warning("lease %s of %s not renewed (%s); retrying", name, tenant, exc)
            continue
        if lease.holder != holder:
            log.error(
                "lease %s of %s taken over by %s; stopping this run", name, tenant, lease.holder
            )
            lost.append(lease)
            run.cancel()
            return


async def _release(graph: GraphStore, tenant: str, name: str, holder: str) -> None:
    # Shielded: a run cancelled from outside still frees its lease for the next one. A store
    # that is down leaves the lease to expire.
    try:
        await asyncio.shield(graph.leases.release(tenant, name, holder))
    except StoreError as exc:
        log.warning("lease %s of %s not released (%s); it expires by itself", name, tenant, exc)
