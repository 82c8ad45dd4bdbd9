"""Bounded retries of bookkeeping, with backoff, and the quarantine of episodes that keep failing.

Each tenant's failures are one JSON document in its tenant state (key `bookkeeping_failures`):
uid -> attempts, last error, when. An episode that failed waits `BACKOFF_S * 2**(attempts-1)`
(at most `MAX_BACKOFF_S`) before the sweep tries it again; after `max_attempts` failures it is
quarantined: the sweep leaves it alone, `mneme doctor` lists it with its reason, and
`mneme sweep --retry-quarantined` tries it once more. A success clears its record.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from memory.schema import utcnow
from memory.stores.base import GraphStore
from memory.tenant import valid_ids

KEY = "bookkeeping_failures"
BACKOFF_S = 300.0
MAX_BACKOFF_S = 6 * 3600.0
ERROR_CHARS = 500


@dataclass(slots=True)
class Failure:
    """How often an episode's bookkeeping failed, the last error and when."""

    attempts: int
    error: str
    last_at: str
    quarantined: bool = False

    def due(self, now: datetime) -> bool:
        """True when the backoff after the last failure is over (never while quarantined)."""
        if self.quarantined:
            return False
        wait = min(MAX_BACKOFF_S, BACKOFF_S * 2 ** max(0, self.attempts - 1))
        return now >= datetime.fromisoformat(self.last_at) + timedelta(seconds=wait)


async def failures(graph: GraphStore, tenant: str) -> dict[str, Failure]:
    """The tenant's failing episodes by uid (empty when none)."""
    raw = await graph.state.get(tenant, KEY)
    if not raw:
        return {}
    try:
        data = json.loads(raw)
        return {uid: Failure(**value) for uid, value in data.items()}
    except (ValueError, TypeError):
        return {}  # an unreadable record must not stop bookkeeping; it is rebuilt on next failure


async def _save(graph: GraphStore, tenant: str, found: dict[str, Failure]) -> None:
    value = json.dumps({uid: asdict(f) for uid, f in found.items()}, ensure_ascii=False)
    await graph.state.put(tenant, KEY, value)


async def record_failure(
    graph: GraphStore, tenant: str, uid: str, error: str, max_attempts: int
) -> Failure:
    """Count one failed attempt; quarantine the episode at `max_attempts`."""
    found = await failures(graph, tenant)
    before = found.get(uid)
    attempts = (before.attempts if before else 0) + 1
    failure = Failure(
        attempts=attempts,
        error=error[:ERROR_CHARS],
        last_at=utcnow().isoformat(),
        quarantined=attempts >= max_attempts,
    )
    found[uid] = failure
    await _save(graph, tenant, found)
    return failure


async def clear(graph: GraphStore, tenant: str, uid: str) -> None:
    """Forget an episode's failures (it succeeded)."""
    found = await failures(graph, tenant)
    if found.pop(uid, None) is not None:
        await _save(graph, tenant, found)


async def release(graph: GraphStore, tenant: str) -> list[str]:
    """Lift the quarantine of the tenant's episodes so they are tried again; their uids."""
    found = await failures(graph, tenant)
    lifted = [uid for uid, f in found.items() if f.quarantined]
    for uid in lifted:
        found[uid].quarantined = False
        found[uid].last_at = datetime.min.replace(tzinfo=utcnow().tzinfo).isoformat()
    if lifted:
        await _save(graph, tenant, found)
    return lifted


async def quarantined(graph: GraphStore) -> dict[tuple[str, str], Failure]:
    """Every quarantined episode, by (tenant, uid) (maintenance view for `mneme doctor`)."""
    out: dict[tuple[str, str], Failure] = {}
    for tenant in valid_ids(await graph.episodes.list_tenants()):
        for uid, failure in (await failures(graph, tenant)).items():
            if failure.quarantined:
                out[(tenant, uid)] = failure
    return out
