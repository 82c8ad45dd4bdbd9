"""The levels of sleep, the input a run is checked against, and when each level last ran.

Three levels, each idempotent and safe to kill half way (the next run finishes it): **micro**
(co-retrieval links, scores, session summaries), **daily** (micro, then expiry, concepts and the
diary), **deep** (daily with the forgetting cycle, beliefs, goals, apperception and reflection).
The stages live beside this module, one module each; which run at which level is drawn in
`graph/consolidation.py`, the one place sleep is run from.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from memory.schema import as_utc, utcnow
from memory.write.limits import FUTURE_SKEW, InvalidInput

if TYPE_CHECKING:
    from memory.services import Services

log = logging.getLogger(__name__)

LAST_KEY = "consolidation:last"
"""Tenant-state key of the simulated or real time of the last run of each level (JSON)."""

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total)."""


class Level(StrEnum):
    """How deep a consolidation run goes."""

    MICRO = "micro"
    DAILY = "daily"
    DEEP = "deep"


def parse_level(value: object) -> Level:
    """The level named by a caller; `InvalidInput` naming the choices otherwise."""
    try:
        return Level(str(value).strip().lower())
    except ValueError:
        choices = ", ".join(level.value for level in Level)
        raise InvalidInput(
            f"unknown consolidation level {value!r}; choose one of {choices}"
        ) from None


@dataclass(frozen=True, slots=True)
class RunTime:
    """A run's checked time, and what the check left out of the run (report notes)."""

    now: datetime
    notes: list[str]


async def parse_now(services: Services, tenant: str, value: object) -> RunTime:
    """The run's time: an ISO 8601 instant (naive means UTC) or None for now.

    A time before the tenant's newest memory is refused: consolidation cannot run in the past
    of the data (that would age memories backwards). A memory dated later than this machine's
    clock plus `FUTURE_SKEW` cannot be real (the write path refuses such dates; one could be
    stored before it did): it never refuses the run, and the run's notes say how many there
    are. The stages that work at the run's time (rescoring, forgetting, the diary) take what is
    older than it, so they leave such a memory as it is.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        now = utcnow()
    elif isinstance(value, datetime):
        now = as_utc(value)
    else:
        try:
            now = as_utc(datetime.fromisoformat(str(value).strip().replace("Z", "+00:00")))
        except ValueError:
            raise InvalidInput(
                f"--now {value!r} is not an ISO 8601 time; e.g. 2024-06-01 or 2024-06-01T09:00:00Z"
            ) from None
    newest, future = await _newest(services, tenant, utcnow() + FUTURE_SKEW)
    if newest is not None and newest > now:
        raise InvalidInput(
            f"--now {now.isoformat()} is before {tenant!r}'s newest memory "
            f"({newest.isoformat()}); consolidation cannot run in the past of the data"
        )
    notes = []
    if future:
        many = f"{len(future)} memories" if len(future) > 1 else "1 memory"
        notes.append(
            f"{many} dated in the future (the latest {future[-1].isoformat()}) left as they are: "
            "no memory can be dated after now; delete them, or export, fix the dates and import"
        )
        log.warning("sleep of %r: %s", tenant, notes[-1])
    return RunTime(now, notes)


async def _newest(
    services: Services, tenant: str, bound: datetime
) -> tuple[datetime | None, list[datetime]]:
    """The tenant's newest memory time no later than `bound` (None when it has none), and the
    times of its memories after `bound`, oldest first."""
    n = 8
    while True:
        times = [as_utc(t) for t in await services.graph.episodes.recent_activity(tenant, n)]
        future = [t for t in times if t > bound]
        if len(future) < len(times) or len(times) < n:
            present = [t for t in times if t <= bound]
            return (present[-1] if present else None), future
        n *= 8


async def last_runs(services: Services, tenant: str) -> dict[str, str]:
    """The time (ISO) of the last run of each level for the tenant."""
    raw = await services.graph.state.get(tenant, LAST_KEY)
    value = json.loads(raw) if raw else {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


async def remember_run(services: Services, tenant: str, level: Level, now: datetime) -> None:
    """Record `now` as the time of the tenant's last run of `level`."""
    runs = await last_runs(services, tenant)
    runs[level.value] = now.isoformat()
    await services.graph.state.put(tenant, LAST_KEY, json.dumps(runs, sort_keys=True))
