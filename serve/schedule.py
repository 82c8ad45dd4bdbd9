"""Sleep on a schedule: the server consolidates every tenant that is due (`MNEME_SLEEP_*`).

`serve/webapp.py` starts `run_schedule` as a background task when `MNEME_SLEEP_SCHEDULE` is
true. Every `MNEME_SLEEP_CHECK_S` it runs one cycle (`run_due`): for each tenant with
memories, the deepest level due (`memory.sleep.schedule.due_level`) through the consolidation graph,
as Studio and `mneme consolidate` run it (with the LLM classifier when one is configured).
Tenants go one after another and cycles never overlap (the loop awaits each); a tenant whose
consolidation is already running, in this process (a Studio run holds its lock) or in another
(its lease is held, `memory.sleep.leases`: another worker's schedule, `mneme consolidate`), is left
for the next cycle. So several server processes may run the schedule: each tenant's run happens
in one of them at a time, and a run done by one counts as the last run for all (the times are
in the store).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Any

from graph.consolidation import run_consolidation
from memory.schema import as_utc, utcnow
from memory.services import Services
from memory.sleep.leases import Busy
from memory.sleep.levels import last_runs
from memory.sleep.schedule import Intervals, due_level
from memory.tenant import valid_ids
from memory.write.episodes import InvalidInput

log = logging.getLogger("mneme.schedule")


async def run_due(
    services: Services, intervals: Intervals, now: datetime | None = None
) -> list[dict[str, Any]]:
    """One cycle: consolidate each tenant that is due at `now` (default now); their reports."""
    at = as_utc(now) if now else utcnow()
    reports = []
    for tenant in valid_ids(await services.graph.episodes.list_tenants()):
        level = due_level(await last_runs(services, tenant), at, intervals)
        if level is None:
            continue
        if services.locks.get("consolidation", tenant).locked():
            log.info("schedule: %s is consolidating already; next cycle", tenant)
            continue
        try:
            state = await run_consolidation(services, tenant, level.value, at.isoformat())
        except Busy:  # another process is consolidating this tenant now
            log.info("schedule: %s is consolidating in another process; next cycle", tenant)
            continue
        except InvalidInput as exc:  # e.g. memories dated after now: nothing to age yet
            log.warning("schedule: %s not consolidated: %s", tenant, exc)
            continue
        except Exception:  # a store down: the run's plan is finished by the next cycle
            log.exception("schedule: %s %s consolidation failed", tenant, level.value)
            continue
        reports.append(state["report"])
        log.info("schedule: %s %s done", tenant, level.value)
    return reports


async def run_schedule(services: Services) -> None:
    """The server's background task: a cycle every `sleep_check_s` seconds, until cancelled."""
    settings = services.settings
    intervals = Intervals.from_settings(settings)
    log.info(
        "mneme: sleep schedule on (micro every %gs, daily %gs, deep %gs; checked every %gs)",
        settings.sleep_micro_s,
        settings.sleep_daily_s,
        settings.sleep_deep_s,
        settings.sleep_check_s,
    )
    while True:
        try:
            await run_due(services, intervals)
        except Exception:  # listing tenants failed: the store is down; try again next cycle
            log.exception("schedule: cycle failed")
        await asyncio.sleep(settings.sleep_check_s)
