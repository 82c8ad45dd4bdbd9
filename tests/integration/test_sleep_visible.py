"""Sleep on by default where a process lives long enough, and visible, on every graph backend:
the server's start-up starts the schedule unless MNEME_SLEEP_SCHEDULE=false, and `mneme doctor`
says whether it runs, when each level last ran and what deep sleep's last fidelity check
found."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from memory.schema import Fact
from memory.services import Services
from memory.services.doctor import DoctorReport, check_fidelity_kept, check_sleep
from memory.sleep.fidelity import last_check
from memory.sleep.levels import Level
from serve.webapp import start
from tests.integration.test_consolidation import T0, sleep, tell


async def sleep_line(services: Services) -> str:
    report = DoctorReport()
    await check_sleep(services, report)
    [check] = report.checks
    assert check.name == "sleep" and check.ok
    return check.detail


async def test_doctor_shows_the_schedule_and_the_last_run_of_each_level(
    services: Services,
) -> None:
    assert services.settings.sleep_schedule  # the default
    line = await sleep_line(services)
    assert "schedule runs it (micro every 1 h, daily every 1 d, deep every 7 d)" in line
    assert line.endswith("last run: micro never, daily never, deep never")

    await tell(services, "vi", [(0, "I started learning the cello.")])
    await tell(services, "wu", [(0, "My dog is called Pixel.")])
    await sleep(services, "vi", Level.DAILY, T0 + timedelta(days=2))
    await sleep(services, "wu", Level.DAILY, T0 + timedelta(days=3))
    await sleep(services, "vi", Level.DEEP, T0 + timedelta(days=9))
    line = await sleep_line(services)
    assert line.endswith(
        "last run: micro never (2 of 2 users never), daily 2025-03-06T09:00+00:00, "
        "deep 2025-03-12T09:00+00:00 (1 of 2 users never)"
    ), line

    with schedule_off(services):
        assert "schedule is off (MNEME_SLEEP_SCHEDULE=false)" in await sleep_line(services)


async def fidelity_line(services: Services) -> str:
    report = DoctorReport()
    await check_fidelity_kept(services, report)
    [check] = report.checks
    assert check.name == "fidelity" and check.ok  # a drift is no failure of the store
    return check.detail


async def test_doctor_shows_the_last_fidelity_check_of_deep_sleep(services: Services) -> None:
    assert await fidelity_line(services) == "never checked (deep sleep checks it)"
    await tell(services, "vi", [(0, "I started learning the cello.")])
    await tell(services, "wu", [(0, "My dog is called Pixel.")])
    await sleep(services, "vi", Level.DAILY, T0 + timedelta(days=2))
    assert await last_check(services, "vi") is None, "only deep sleep checks"

    await sleep(services, "vi", Level.DEEP, T0 + timedelta(days=9))
    kept = await last_check(services, "vi")
    assert kept is not None and kept.drifts == 0
    assert await fidelity_line(services) == (
        f"last check 2025-03-12T09:00+00:00 (deep sleep): no drift ({kept.checked} records of "
        "1 users) (1 of 2 users never checked)"
    )

    # A fact about the person that rests on no turn of theirs: drift, kept by the next deep run
    # (the doctor reads what was kept; it runs no check).
    await services.graph.facts.add(Fact(uid="cat", tenant="wu", text="has a cat", valid_from=T0))
    assert await last_check(services, "wu") is None
    await sleep(services, "wu", Level.DEEP, T0 + timedelta(days=16))
    kept_wu = await last_check(services, "wu")
    assert kept_wu is not None and kept_wu.drifted == {"no_evidence": 1}
    assert await fidelity_line(services) == (
        "last check 2025-03-19T09:00+00:00 (deep sleep): drift in 1 of 2 users' accounts: "
        f"wu 1 of {kept_wu.checked} records (1 no_evidence, checked 2025-03-19T09:00+00:00); "
        "`mneme fidelity --user ID` lists the records"
    )


@contextmanager
def schedule_off(services: Services) -> Iterator[None]:
    """The same services with MNEME_SLEEP_SCHEDULE=false (nothing reopened)."""
    settings = services.settings
    services.settings = settings.model_copy(update={"sleep_schedule": False})
    try:
        yield
    finally:
        services.settings = settings


async def test_the_server_starts_the_schedule_by_default_and_not_when_told(
    services: Services,
) -> None:
    task = await start(services)
    try:
        assert task is not None and task.get_name() == "mneme-sleep" and not task.done()
    finally:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    with schedule_off(services):
        assert await start(services) is None
