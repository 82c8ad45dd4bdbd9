"""Co-retrieval links: memories shown together in one turn become associated (micro sleep).

Every `record_access` (the agent's rerank node, the eval, the bench) links each pair of the
first `MAX_LINKED` episodes it marks accessed with a CO_RETRIEVED edge, in the same
transaction as the access count, so the two can never disagree. The edge keeps the evidence
(`count`: how many retrievals showed both; `last_at`: the latest) and a `weight`:

    weight = ln(1 + count) * exp(-days since last_at / LINK_DAYS)

Recording writes it fresh (t = 0: each co-retrieval strengthens the link); sleep (`decay_links`,
the `links` stage of every level) rewrites it at the run's time and deletes a link whose weight fell under `PRUNE_WEIGHT`. A link of weight >= `STRONG_LINK`
counts as one of an episode's connections (`episodes.connections`), so it feeds salience and
cornerstones. Once sleep has run, a recipe that weighs association reads the links among its
candidates (`memory.retrieval.state`; the agent's weighs 0, docs/adr/0148); retrieval does not
expand along links to episodes search did not find (docs/adr/0090-co-retrieval-links.md).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

from memory.schema import as_utc
from memory.stores.graph.coretrieval import MAX_LINKED, STRONG_LINK, Link, pairs

if TYPE_CHECKING:
    from memory.services import Services

LINK_DAYS = 30.0
"""The e-folding time of a link's weight since the two were last retrieved together."""

PRUNE_WEIGHT = 0.1
"""A link weaker than this is deleted at the next micro run (a single co-retrieval after about
two months, ten after about three)."""


def link_weight(count: int, days: float) -> float:
    """ln(1 + count) x exp(-days / LINK_DAYS); days since the last co-retrieval (>= 0)."""
    return math.log1p(max(0, count)) * math.exp(-max(0.0, days) / LINK_DAYS)


def weight_at(link: Link, now: datetime) -> float:
    """The link's weight at `now`."""
    days = (as_utc(now) - as_utc(link.last_at)).total_seconds() / 86400.0
    return link_weight(link.count, days)


__all__ = [
    "LINK_DAYS",
    "MAX_LINKED",
    "PRUNE_WEIGHT",
    "STRONG_LINK",
    "Link",
    "decay_links",
    "link_weight",
    "pairs",
    "weight_at",
]


async def decay_links(services: Services, tenant: str, now: datetime) -> tuple[int, int]:
    """Micro: rewrite every link's weight at `now`, deleting those under `PRUNE_WEIGHT`.

    Returns (reweighed, pruned). The weight is a function of the stored count and time, so a
    run killed half way is finished, with the same result, by the next.
    """
    links = await services.graph.coretrieval.list(tenant)
    weights: dict[tuple[str, str], float] = {}
    drop: list[tuple[str, str]] = []
    for link in links:
        weight = weight_at(link, now)
        if weight < PRUNE_WEIGHT:
            drop.append((link.a, link.b))
        elif not math.isclose(weight, link.weight, abs_tol=1e-9):
            weights[(link.a, link.b)] = weight
    for start in range(0, max(len(weights), len(drop)), 500):
        chunk = dict(list(weights.items())[start : start + 500])
        await services.graph.coretrieval.reweigh(tenant, chunk, drop[start : start + 500])
    return len(weights), len(drop)
