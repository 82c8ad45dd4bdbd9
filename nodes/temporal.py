"""Temporal context for the reply: local time, part of day, and the gaps between conversations.

"It's Tuesday evening; we last talked 4 days ago, and before that 2 weeks earlier." Conversations
are runs of episodes with less than `SESSION_GAP` between them. The pure helpers take datetimes;
`temporal_context` reads the tenant's recent activity from the graph.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from memory.schema import EpisodeStatus, as_utc
from memory.services import Services

SESSION_GAP = timedelta(minutes=30)
"""Silence longer than this separates two conversations."""

RECENT_KEPT = 512
SEED_TTL_S = 300.0

PARTS_OF_DAY: tuple[tuple[int, str], ...] = (
    (3, "late night"),
    (6, "early morning"),
    (9, "morning"),
    (12, "late morning"),
    (15, "early afternoon"),
    (18, "late afternoon"),
    (21, "evening"),
    (24, "night"),
)
"""Eight periods of three hours each, by the hour they end."""


def part_of_day(local: datetime) -> str:
    """Name the period of the day of a local time (one of eight)."""
    for end, name in PARTS_OF_DAY:
        if local.hour < end:
            return name
    return "night"


def humanize_gap(gap: timedelta) -> str:
    """A rounded, human reading of a duration ('3 minutes', '4 days', '2 weeks')."""
    seconds = max(0.0, gap.total_seconds())
    units = (
        (365 * 86400, "year"),
        (30 * 86400, "month"),
        (7 * 86400, "week"),
        (86400, "day"),
        (3600, "hour"),
        (60, "minute"),
    )
    for size, name in units:
        if seconds >= size:
            n = int(round(seconds / size))
            return f"{n} {name}{'s' if n != 1 else ''}"
    return "less than a minute"


def sessions(
    times: Sequence[datetime], gap: timedelta = SESSION_GAP
) -> list[tuple[datetime, datetime]]:
    """Group sorted timestamps into conversations: (start, end) pairs, oldest first."""
    out: list[tuple[datetime, datetime]] = []
    for t in sorted(times):
        if out and t - out[-1][1] <= gap:
            out[-1] = (out[-1][0], t)
        else:
            out.append((t, t))
    return out


def describe(now: datetime, tz: ZoneInfo, past: Sequence[datetime]) -> dict[str, Any]:
    """The temporal context of a turn at `now`, given earlier activity timestamps."""
    local = as_utc(now).astimezone(tz)
    convos = sessions([as_utc(t) for t in past if as_utc(t) <= as_utc(now)])
    current = bool(convos) and as_utc(now) - convos[-1][1] <= SESSION_GAP
    previous = convos[:-1] if current else convos
    info: dict[str, Any] = {
        "now": local.isoformat(timespec="minutes"),
        "weekday": local.strftime("%A"),
        "part_of_day": part_of_day(local),
        "timezone": str(tz),
        "in_conversation": current,
        "since_last": None,
        "before_that": None,
    }
    if previous:
        info["since_last"] = humanize_gap(as_utc(now) - previous[-1][1])
    if len(previous) >= 2:
        info["before_that"] = humanize_gap(previous[-1][0] - previous[-2][1])
    info["text"] = temporal_sentence(info)
    return info


def temporal_sentence(info: dict[str, Any]) -> str:
    """One or two sentences for the prompt, e.g. "It is Tuesday evening. It's been 4 days..."."""
    when = f"It is {info['weekday']} {info['part_of_day']} ({info['now']}, {info['timezone']})."
    if info["since_last"] is None:
        if info["in_conversation"]:
            return f"{when} This is our first conversation; it is under way."
        return f"{when} This is our first conversation."
    gap = f"It's been {info['since_last']} since our previous conversation"
    if info["before_that"]:
        gap += f"; before that, {info['before_that']}"
    lead = " We are in the middle of a conversation." if info["in_conversation"] else ""
    return f"{when}{lead} {gap}."


# --------------------------------------------------------------------------- recent activity


@dataclass
class _Recent:
    times: list[datetime] = field(default_factory=list)
    seeded_at: float = 0.0


class ActivityLog:
    """Recent episode timestamps per tenant, read once from the graph and kept up to date.

    The graph interface has no "newest episodes" query, so the first turn of a tenant in a
    process reads its episodes once; later turns use this log, refreshed every `SEED_TTL_S`.
    """

    def __init__(self) -> None:
        self._by_tenant: dict[str, _Recent] = {}

    async def recent(self, services: Services, tenant: str) -> list[datetime]:
        """Timestamps of the tenant's latest episodes, oldest first."""
        entry = self._by_tenant.get(tenant)
        if entry is None or time.monotonic() - entry.seeded_at > SEED_TTL_S:
            episodes = await services.graph.list_by_status(
                tenant, list(EpisodeStatus), limit=1_000_000
            )
            entry = _Recent(
                times=sorted(as_utc(e.created_at) for e in episodes)[-RECENT_KEPT:],
                seeded_at=time.monotonic(),
            )
            self._by_tenant[tenant] = entry
        return list(entry.times)

    def note(self, tenant: str, at: datetime) -> None:
        """Record a new episode of the tenant (after the remember node writes it)."""
        entry = self._by_tenant.get(tenant)
        if entry is None:
            return  # seeded from the graph on next use
        bisect.insort(entry.times, as_utc(at))
        del entry.times[:-RECENT_KEPT]

    def forget(self, tenant: str | None = None) -> None:
        """Drop the cached log (one tenant or all)."""
        if tenant is None:
            self._by_tenant.clear()
        else:
            self._by_tenant.pop(tenant, None)


ACTIVITY = ActivityLog()


async def temporal_context(
    services: Services, tenant: str, now: datetime, tz: ZoneInfo
) -> dict[str, Any]:
    """The temporal context of a turn of `tenant` at `now` in timezone `tz`."""
    return describe(now, tz, await ACTIVITY.recent(services, tenant))


def utc_from_iso(value: str) -> datetime:
    """Parse an ISO timestamp (from a payload or state) as aware UTC."""
    return as_utc(datetime.fromisoformat(value))


def days_ago(now: datetime, then: datetime) -> str:
    """'today', 'yesterday' or 'N days ago' between two instants."""
    days = (as_utc(now).date() - as_utc(then).date()).days
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    return f"{humanize_gap(timedelta(days=days))} ago"
