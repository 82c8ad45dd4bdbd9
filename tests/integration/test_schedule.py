"""One real cycle of the server's sleep schedule on every graph backend (real stores and
embedder, offline): each tenant gets the level it is due for, through the consolidation graph."""

from __future__ import annotations

from datetime import timedelta

from graph.schedule import run_due
from memory.consolidation import last_runs
from memory.schedule import Intervals
from memory.services import Services
from tests.integration.test_consolidation import T0, tell

EVERY = Intervals(micro=timedelta(hours=1), daily=timedelta(days=1), deep=timedelta(days=7))


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
