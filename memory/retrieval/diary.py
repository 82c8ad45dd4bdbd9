"""The diary read back: the entries of the days a message asks about, as extra context.

A message whose time words resolve to a period (`memory.text.timeparse`: "on Monday", "yesterday",
"last week", "in May 2024", "on 2025-03-04") gets the diary entries (`memory.sleep.diary`) of the UTC
days in that period, the newest `MAX_ENTRIES` of them in day order. They are not search
results: they never enter the candidates the reranker orders, so the turns found for the
message are the same with or without a diary. A message without a resolvable period gets none.
Entries quote the user: the reply fences them as data.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memory.text.timeparse import parse_time

if TYPE_CHECKING:
    from memory.services import Services

MAX_ENTRIES = 7
"""Entries shown at most (a week's worth): the newest days of a longer period."""


async def diary_of_period(
    services: Services, tenant: str, text: str, now: datetime
) -> list[dict[str, Any]]:
    """The tenant's diary entries of the period `text` names (relative to `now`), in day
    order, at most `MAX_ENTRIES` (the newest); [] when `text` names no period."""
    window = parse_time(text, now).window
    if window is None:
        return []
    first = window.start.date().isoformat()
    last = (window.end - timedelta(microseconds=1)).date().isoformat()  # the window is [start, end)
    entries = await services.graph.diary.list(tenant, first=first, last=last)
    return [{"day": e.day, "text": e.text} for e in entries[-MAX_ENTRIES:]]
