"""Rebuild every vector collection from the graph, e.g. after changing the embedding model.

The graph is the source of truth: vectors are derived data, so dropping them loses nothing.
Episodes are re-indexed with the splitter; every fact (superseded ones too) and every semantic
feature is embedded again.
"""

from __future__ import annotations

import logging

from memory.episodes import Progress, SweepReport, index_episode
from memory.features import index_features
from memory.knowledge import index_facts
from memory.services import Services

log = logging.getLogger(__name__)


async def reindex_all(services: Services, *, progress: Progress | None = None) -> SweepReport:
    """Drop all mneme collections (any embedder), recreate them and re-index every episode,
    fact and feature."""
    await services.graph.setup()
    await services.vectors.drop_collections(None)
    await services.vectors.setup()
    tenants = await services.graph.list_tenants()
    todo = [
        (tenant, uid)
        for tenant in tenants
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
    for tenant in tenants:
        facts = await services.graph.list_facts(tenant, include_superseded=True)
        await index_facts(services, tenant, facts)
        await index_features(services, tenant)
    return report
