"""Temporal context for the reply: local time, part of day, and the gaps between conversations.

"It's Tuesday evening; we last talked 4 days ago, and before that 2 weeks earlier." Conversations
are runs of episodes with less than `SESSION_GAP` between them. The pure helpers take datetimes;
`temporal_context` reads the tenant's recent episode times from the graph (an indexed query).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from memory.schema import as_utc
from memory.services import Services

SESSION_GAP = timedelta(minutes=30)
"""Silence longer than this separates two conversations."""

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


RECENT_KEPT = 512
"""Episodes whose times `temporal_context` reads to find the last conversations."""


async def temporal_context(
    services: Services, tenant: str, now: datetime, tz: ZoneInfo
) -> dict[str, Any]:
    """The temporal context of a turn of `tenant` at `now` in timezone `tz`."""
    return describe(now, tz, await services.graph.episodes.recent_activity(tenant, RECENT_KEPT))


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
