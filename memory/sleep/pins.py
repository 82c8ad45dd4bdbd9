"""Pinned memories: episodes a user or an app keeps, whatever consolidation would decide.

A pinned episode is never archived, expired or forgotten (`memory.sleep.expiry` and
`memory.sleep.forgetting` leave it out, and `memory.sleep.plan` re-reads the pin before applying
each decision) and its salience does not decay (`memory.sleep.salience.episode_salience`).
Pinning an archived episode restores it: the store clears `archived` and moves it back to
`stored` in one transaction, and the episode is queued for bookkeeping, which rebuilds its
vectors (if the process dies first, the sweep finds it `stored`). Unpinning changes nothing else: the episode is an ordinary memory again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.schema import Episode
from memory.stores.base import NotFound

if TYPE_CHECKING:
    from memory.services import Services


async def set_pinned(services: Services, tenant: str, uid: str, pinned: bool) -> Episode:
    """Pin or unpin one of the tenant's episodes; the episode as it now is.

    Raises `NotFound` for a uid the tenant has no episode with (another tenant's included).
    """
    before = await services.graph.episodes.get(tenant, uid)
    after = await services.graph.episodes.set_pinned(tenant, uid, pinned) if before else None
    if before is None or after is None:
        raise NotFound(f"no episode {uid!r} for this user (only episodes can be pinned)")
    if pinned and before.archived:
        services.bookkeeping.submit(tenant, uid)  # its vectors were removed: rebuild them
    return after
