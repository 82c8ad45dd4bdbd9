"""Expiry, at the daily and deep levels: a passing remark about a bounded present or future span
("busy this week", "see you tomorrow") is archived once that span is over.

Only passing remarks expire (at most `EPHEMERAL_CONNECTIONS` graph edges: topics, entities,
facts, beliefs): a turn linked to people, places or facts is also the memory of an event ("when
did I go to Paris?"). Protection and pins apply as in forgetting (`memory.sleep.plan`).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memory.schema import Episode, as_utc
from memory.sleep.levels import Progress
from memory.sleep.plan import Decision, carry_out
from memory.sleep.rescore import connections_of, live_episodes
from memory.text.timeparse import parse_time

if TYPE_CHECKING:
    from memory.services import Services

EPHEMERAL_CONNECTIONS = 1
"""Expiry archives only turns with at most this many graph edges (topics, entities, facts,
beliefs): passing remarks, not the memory of an event."""

_DAY_WORDS = re.compile(r"\b(today|tonight|tomorrow)\b", re.IGNORECASE)


def expires_at(episode: Episode) -> datetime | None:
    """When what the turn says stops being true, if it names a bounded present or future span
    ("this week", "next Tuesday", "tomorrow"); None for anything else (the past, no time)."""
    said = as_utc(episode.created_at)
    text = episode.user_text or ""
    window = parse_time(text, said).window
    ends: list[datetime] = []
    if window is not None and as_utc(window.end) > said:
        ends.append(as_utc(window.end))
    match = _DAY_WORDS.search(text)
    if match:
        days = 2 if match.group(1).lower() == "tomorrow" else 1
        start = said.replace(hour=0, minute=0, second=0, microsecond=0)
        ends.append(start + timedelta(days=days))
    return max(ends) if ends else None


async def expire(
    services: Services, tenant: str, now: datetime, progress: Progress | None = None
) -> dict[str, int]:
    """Daily and deep: archive the passing remarks whose span is over at `now` (the module
    docstring); how many `expired`, and how many were `protected` or `pinned` instead."""
    found = [e for e in await live_episodes(services, tenant) if not e.archived and not e.pinned]
    linked = await connections_of(services, tenant, [e.uid for e in found])
    due = [
        e.uid
        for e in found
        if linked.get(e.uid, 0) <= EPHEMERAL_CONNECTIONS
        and (end := expires_at(e)) is not None
        and end <= now
    ]
    if not due:
        return {}
    protected = await services.graph.episodes.sole_evidence(tenant, due)
    plan = {uid: Decision.ARCHIVE for uid in due if uid not in protected}
    done = await carry_out(services, tenant, plan, now)
    if progress:
        progress("expiry", len(due), len(due))
    return {
        "expired": done["archived"],
        "protected": len(protected) + done["protected"],
        "pinned": done["pinned"],
    }
