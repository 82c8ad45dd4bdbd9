"""One real cycle of the server's sleep schedule on every graph backend (real stores and
embedder, offline): each tenant gets the level it is due for, through the consolidation graph;
a tenant another process is consolidating (its lease held) is left for the next cycle."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from graph.consolidation import run_consolidation
from memory.schema import utcnow
from memory.services import Services
from memory.sleep.leases import CONSOLIDATION, Busy, holding
from memory.sleep.levels import last_runs
from memory.sleep.schedule import Intervals
from memory.stores.graph.leases import KEY_PREFIX, Lease
from serve.schedule import run_due
from tests.integration.test_consolidation import T0, tell

EVERY = Intervals(micro=timedelta(hours=1), daily=timedelta(days=1), deep=timedelta(days=7))


async def lease_of(services: Services, tenant: str) -> Lease | None:
    """The tenant's consolidation lease as stored (its tenant-state record), or None."""
    return Lease.decode(await services.graph.state.get(tenant, KEY_PREFIX + CONSOLIDATION))


def levels(reports: list[dict[str, object]]) -> dict[object, object]:
    return {r["tenant"]: r["level"] for r in reports}


async def test_each_tenant_gets_the_level_it_is_due_for(services: Services) -> None:
    await tell(services, "s1", [(0, "I like tea.")])
    await tell(services, "s2", [(0, "I like jazz.")])
    start = T0 + timedelta(days=1)

    assert levels(await run_due(services, EVERY, start)) == {"s1": "deep", "s2": "deep"}
    assert await run_due(services, EVERY, start + timedelta(minutes=30)) == []
    assert levels(await run_due(services, EVERY, start + timedelta(hours=2))) == {
        "s1": "micro",
        "s2": "micro",
    }
    runs = await last_runs(services, "s1")
    assert runs["micro"] == (start + timedelta(hours=2)).isoformat()

    await tell(services, "s3", [(30, "Dated in the future of this cycle.")])
    busy = services.locks.get("consolidation", "s1")
    async with busy:  # s1 is consolidating (a Studio run): left for the next cycle
        later = await run_due(services, EVERY, start + timedelta(days=2))
    assert levels(later) == {"s2": "daily"}  # s3's memory is after now: not aged backwards
    assert levels(await run_due(services, EVERY, start + timedelta(days=2))) == {"s1": "daily"}


async def test_a_tenant_consolidating_in_another_process_is_left_alone(
    services: Services,
) -> None:
    await tell(services, "s1", [(0, "I like tea.")])
    await tell(services, "s2", [(0, "I like jazz.")])
    start = T0 + timedelta(days=1)
    ttl = timedelta(seconds=services.settings.sleep_lease_s)
    # Another process (its holder id) is consolidating s1 now.
    other = await services.graph.leases.take("s1", CONSOLIDATION, "elsewhere pid 1", utcnow(), ttl)

    with pytest.raises(Busy, match="'s1' is running in another process"):
        await run_consolidation(services, "s1", "micro", start.isoformat())
    assert await last_runs(services, "s1") == {}  # nothing ran
    assert levels(await run_due(services, EVERY, start)) == {"s2": "deep"}
    assert await lease_of(services, "s1") == other  # untouched

    assert await services.graph.leases.release("s1", CONSOLIDATION, "elsewhere pid 1")
    assert levels(await run_due(services, EVERY, start)) == {"s1": "deep"}
    assert await lease_of(services, "s1") is None  # released after


async def test_a_run_whose_lease_is_taken_over_stops_with_busy(services: Services) -> None:
    ttl = timedelta(minutes=2)
    entered = asyncio.Event()

    async def run() -> None:
        async with holding(services.graph, "s1", ttl, renew_every=0.05, holder="me"):
            entered.set()
            await asyncio.Event().wait()  # a long run; only the renewer ends it

    task = asyncio.create_task(run())
    await entered.wait()
    # This process stalled past its expiry, and another took the lease over.
    lease = await lease_of(services, "s1")
    assert lease is not None and lease.holder == "me"
    await services.graph.leases.take("s1", CONSOLIDATION, "other", lease.expires, ttl)
    with pytest.raises(Busy, match="was taken over by another process"):
        await task
    lease = await lease_of(services, "s1")
    assert lease is not None and lease.holder == "other"  # the loser did not release it
