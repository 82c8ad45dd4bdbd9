"""Rebuild every vector collection from the graph, e.g. after changing the embedding model.

The graph is the source of truth: vectors are derived data, so dropping them loses nothing.
"""

from __future__ import annotations

import logging

from memory.episodes import Progress, SweepReport, index_episode
from memory.services import Services

log = logging.getLogger(__name__)


async def reindex_all(services: Services, *, progress: Progress | None = None) -> SweepReport:
    """Drop all mneme collections (any embedder), recreate them and re-index every episode."""
    await services.graph.setup()
    await services.vectors.drop_collections(None)
    await services.vectors.setup()
    todo = [
        (tenant, uid)
        for tenant in await services.graph.list_tenants()
        for uid in await services.graph.list_episode_uids(tenant)
    ]
    report = SweepReport()
    for n, (tenant, uid) in enumerate(todo, start=1):
        try:
            await index_episode(services, tenant, uid)
            report.done.append(uid)
        except Exception as exc:
            log.warning("reindex: episode %s failed: %s", uid, exc)
            report.failed[uid] = f"{type(exc).__name__}: {exc}"
        if progress:
            progress(n, len(todo))
    return report
