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
from memory.sleep.plan import PLAN_KEY, Decision, apply_plan, save_plan
from memory.sleep.report import Report
from memory.sleep.rescore import Candidate
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
    services: Services,
    tenant: str,
    scored: list[Candidate],
    connections: dict[str, int],
    now: datetime,
    report: Report,
    progress: Progress | None,
) -> None:
    # Only passing remarks expire (at most `EPHEMERAL_CONNECTIONS` edges): a turn linked to
    # people, places or facts is also the memory of an event ("when did I go to Paris?").
    due = [
        c.episode.uid
        for c in scored
        if not c.episode.archived
        and not c.episode.pinned
        and connections.get(c.episode.uid, 0) <= EPHEMERAL_CONNECTIONS
        and (end := expires_at(c.episode)) is not None
        and end <= now
    ]
    if not due:
        return
    protected = await services.graph.sole_evidence(tenant, due)
    plan = {uid: Decision.ARCHIVE for uid in due if uid not in protected}
    report.protected += len(protected)
    await save_plan(services, tenant, plan)
    before = report.archived
    await apply_plan(services, tenant, plan, now, report)
    report.expired += report.archived - before
    report.archived = before
    await services.graph.put_tenant_state(tenant, PLAN_KEY, "[]")
    if progress:
        progress("expiry", len(due), len(due))
    for i, c in enumerate(scored):
        if c.episode.uid in plan:
            archived = c.episode.model_copy(update={"archived": True})
            scored[i] = Candidate(episode=archived, utility=c.utility, salience=c.salience)
