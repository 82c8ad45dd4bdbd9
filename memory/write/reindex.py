"""Rebuild this embedder's vectors from the graph: after a model change, or to move to a new
vector backend.

The graph is the source of truth: vectors are derived data, so dropping them loses nothing.
Every episode goes through the bookkeeping pipeline again (given by the caller: the bookkeeping
graph's runner, which the memory layer never imports), so the rebuild holds everything the write
path indexes (model or splitter chunks, prospective questions, contextual derivatives and
whatever later stages add), not a reduced copy. Every stage is idempotent, so beliefs, topics and entities come out as they
were; with an LLM configured, extraction asks the model again. Then every fact (superseded ones
too) and every semantic feature is embedded again. Other embedders' collections are left alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memory.beliefs.features import index_features
from memory.knowledge.facts import index_facts
from memory.schema import EpisodeStatus
from memory.tenant import valid_ids
from memory.write.episodes import Progress, SweepReport
from memory.write.sessions import index_summaries

if TYPE_CHECKING:
    from memory.services import Services
    from memory.services.queue import Pipeline

log = logging.getLogger(__name__)


async def reindex_all(
    services: Services, pipeline: Pipeline, *, progress: Progress | None = None
) -> SweepReport:
    """Drop this embedder's collections, recreate them and run every episode's bookkeeping
    (`pipeline`) again; what was done and what failed (uid -> why)."""
    await services.graph.setup()
    await services.vectors.drop_collections(services.embedder.fingerprint)
    await services.vectors.setup(rebuild=True)
    tenants = valid_ids(await services.graph.episodes.list_tenants())
    todo = [
        (tenant, uid)
        for tenant in tenants
        for uid in await services.graph.episodes.list_uids(tenant)
    ]
    report = SweepReport()
    for n, (tenant, uid) in enumerate(todo, start=1):
        try:
            await services.graph.episodes.set_status(
                tenant, uid, EpisodeStatus.PENDING, only_forward=False
            )
            await pipeline(services, tenant, uid)
            report.done.append(uid)
        except Exception as exc:
            log.warning("reindex: episode %s failed: %s", uid, exc)
            report.failed[uid] = f"{type(exc).__name__}: {exc}"
        if progress:
            progress(n, len(todo))
    for tenant in tenants:
        facts = await services.graph.facts.list(tenant, include_superseded=True)
        await index_facts(services, tenant, facts)
        await index_features(services, tenant)
        await index_summaries(services, tenant)
    return report
