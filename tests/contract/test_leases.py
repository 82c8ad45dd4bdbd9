"""Leases (`LeaseStore`): one holder at a time, renewals, releases, expiry; two real processes
racing to consolidate one tenant (`memory.sleep.leases.holding`): exactly one runs; a killed
holder's lease is taken over once it expires."""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest

from memory.sleep.leases import Busy, holding
from memory.stores.base import GraphStore
from memory.stores.graph.leases import KEY_PREFIX, Lease
from memory.stores.sqlite import SqliteGraphStore

from ._support import CHILD_OPEN_STORE, T0, spawn_child

TTL = timedelta(minutes=2)

# Each child: wait for a shared start time, then run a block under the consolidation lease as a
# consolidation run does (`memory.sleep.leases.holding`): print that it runs and hold on (renewing)
# until its stdin closes or it is killed; or print whose lease stopped it.
CHILD = CHILD_OPEN_STORE + textwrap.dedent(
    """
    import asyncio, json, sys, time
    from datetime import timedelta
    from memory.sleep.leases import Busy, holding

    backend, target, name, start = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])

    async def main():
        store = open_store(backend, target)
        await store.setup()
        time.sleep(max(0.0, start - time.time()))
        try:
            async with holding(store, "race", timedelta(minutes=2), holder=name) as lease:
                print(json.dumps({"ran": name, "expires": lease.expires.isoformat()}), flush=True)
                await asyncio.to_thread(sys.stdin.read)
        except Busy as exc:
            print(json.dumps({"busy": exc.lease.holder}), flush=True)
        await store.close()

    asyncio.run(main())
    """
)


async def lease_of(graph: GraphStore, tenant: str) -> Lease | None:
    """The tenant's consolidation lease as stored (its tenant-state record), or None."""
    return Lease.decode(await graph.state.get(tenant, KEY_PREFIX + "consolidation"))


def target_of(graph: GraphStore, tmp_path: Path) -> tuple[str, GraphStore]:
    """What a child opens (a file or the Neo4j URI) and a handle of the parent on the same."""
    if graph.backend == "sqlite":
        path = tmp_path / "leases.sqlite3"
        return str(path), SqliteGraphStore(path)
    return os.environ["NEO4J_URI"], graph


async def child(
    graph: GraphStore, target: str, name: str, start: float
) -> asyncio.subprocess.Process:
    return await spawn_child(CHILD, graph.backend, target, name, f"{start:.3f}")


async def reported(proc: asyncio.subprocess.Process) -> dict[str, str]:
    assert proc.stdout is not None
    line = await proc.stdout.readline()
    if not line:
        _, err = await proc.communicate()
        pytest.fail(err.decode(errors="replace")[-3000:])
    answer: dict[str, str] = json.loads(line)
    return answer


async def test_a_lease_has_one_holder_until_released_or_expired(graph: GraphStore) -> None:
    assert await lease_of(graph, "t1") is None
    first = await graph.leases.take("t1", "consolidation", "a", T0, TTL)
    assert (first.holder, first.expires) == ("a", T0 + TTL)
    held = await graph.leases.take("t1", "consolidation", "b", T0 + timedelta(minutes=1), TTL)
    assert held == first  # b finds a's lease, unchanged
    renewed = await graph.leases.take("t1", "consolidation", "a", T0 + timedelta(minutes=1), TTL)
    assert renewed.expires == T0 + timedelta(minutes=3)
    assert await lease_of(graph, "t1") == renewed
    # Other tenants and other names are other leases.
    assert (await graph.leases.take("t2", "consolidation", "b", T0, TTL)).holder == "b"
    assert (await graph.leases.take("t1", "other", "b", T0, TTL)).holder == "b"

    assert await graph.leases.release("t1", "consolidation", "b") is False  # not b's to give up
    assert (await lease_of(graph, "t1")) == renewed
    assert await graph.leases.release("t1", "consolidation", "a") is True
    assert await lease_of(graph, "t1") is None
    assert await graph.leases.release("t1", "consolidation", "a") is False  # idempotent
    assert (await graph.leases.take("t1", "consolidation", "b", T0, TTL)).holder == "b"


async def test_a_take_racing_a_release_is_stored_when_it_is_reported(graph: GraphStore) -> None:
    """A lease released while another holder takes it: whoever `take` reports as the holder is
    the holder stored, so a third finds it held. (On Neo4j a release used to delete the lease's
    node: a take that had matched that node before the delete committed reported the lease as
    its own and stored nothing, and the next taker got it too: two bookkeeping runs of one
    tenant at once in `mneme bench replicas`.) Both backends hold to it."""
    for i in range(40):
        tenant = f"race{i}"
        await graph.leases.take(tenant, "consolidation", "a", T0, TTL)
        _, taken = await asyncio.gather(
            graph.leases.release(tenant, "consolidation", "a"),
            graph.leases.take(tenant, "consolidation", "b", T0, TTL),
        )
        if taken.holder == "b":
            assert await lease_of(graph, tenant) == taken, i
            third = await graph.leases.take(tenant, "consolidation", "c", T0, TTL)
            assert third.holder == "b", i
        else:  # b came first and found a's lease
            assert taken.holder == "a" and await lease_of(graph, tenant) is None, i


async def test_an_expired_lease_is_taken_over(graph: GraphStore) -> None:
    await graph.leases.take("t1", "consolidation", "dead", T0, TTL)
    at_expiry = T0 + TTL
    taken = await graph.leases.take("t1", "consolidation", "next", at_expiry, TTL)
    assert (taken.holder, taken.expires) == ("next", at_expiry + TTL)
    assert await graph.leases.release("t1", "consolidation", "dead") is False  # late: not its own


async def test_a_lease_refuses_bad_input(graph: GraphStore) -> None:
    with pytest.raises(ValueError, match="ttl must be positive"):
        await graph.leases.take("t1", "consolidation", "a", T0, timedelta(0))
    with pytest.raises(ValueError, match="needs a holder"):
        await graph.leases.take("t1", "consolidation", " ", T0, TTL)
    with pytest.raises(ValueError, match="needs a name"):
        await graph.leases.take("t1", "", "a", T0, TTL)
    await graph.state.put("t1", "lease:consolidation", "not json")
    taken = await graph.leases.take("t1", "consolidation", "a", T0, TTL)
    assert taken.holder == "a"  # an unreadable lease counts as free


async def test_two_processes_racing_for_a_lease_run_once(graph: GraphStore, tmp_path: Path) -> None:
    target, parent = target_of(graph, tmp_path)
    start = time.time() + 2.0  # after both interpreters have imported everything
    procs = [await child(graph, target, name, start) for name in ("one", "two")]
    try:
        answers = {name: await reported(p) for name, p in zip(("one", "two"), procs, strict=True)}
        ran = [a["ran"] for a in answers.values() if "ran" in a]
        assert len(ran) == 1  # exactly one runs ...
        (loser,) = set(answers) - set(ran)
        assert answers[loser] == {"busy": ran[0]}  # ... and the other was told who holds it
        stored = await lease_of(parent, "race")
        assert stored is not None and stored.holder == ran[0]
        for p in procs:  # the runner finishes and releases its lease
            assert p.stdin is not None
            p.stdin.close()
            await p.communicate()
            assert p.returncode == 0
        assert await lease_of(parent, "race") is None
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                await p.communicate()
        if parent is not graph:
            await parent.close()


async def test_a_killed_holders_lease_is_taken_over_after_it_expires(
    graph: GraphStore, tmp_path: Path
) -> None:
    target, parent = target_of(graph, tmp_path)
    proc = await child(graph, target, "killed", time.time())
    try:
        held = await reported(proc)
        proc.kill()  # SIGKILL mid-run: no release, no cleanup
        await proc.communicate()
        with pytest.raises(Busy):  # not yet expired: still the dead run's
            async with holding(parent, "race", TTL, holder="next"):
                pass
        lease = await lease_of(parent, "race")
        assert lease is not None and lease.holder == "killed"
        assert lease.expires.isoformat() == held["expires"]
        taken = await parent.leases.take("race", "consolidation", "next", lease.expires, TTL)
        assert taken.holder == "next"  # at its expiry it is free
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.communicate()
        if parent is not graph:
            await parent.close()
