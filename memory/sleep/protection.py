"""What sleep protects keeps its context (issue 32, "protection means findable";
docs/adr/0154-protected-turns-keep-their-context.md).

Retrieval smooths along the thread: a turn is lent 0.35 x the relevance of its better neighbour
on the chain (`memory.retrieval.ranking.smooth`, docs/adr/0111), so how findable a turn is
depends on the turns beside it. Sleep protects a turn (the only evidence of an active belief,
the only source of a current fact, a source of a current timeless fact, a pinned turn, a
cornerstone) so that it stays findable; archiving or forgetting the turn next to it would take
that lift away, and a protected turn nobody asked about for months then ranks below small talk
whose neighbours are still searchable. So forgetting neither archives nor forgets a turn that
is not archived and is next to a protected turn of its own thread on the chain, while that turn
is protected. Expiry is not held back: a remark whose span is over is no longer true, and
lends nothing worth keeping.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory.sleep.salience import is_cornerstone

if TYPE_CHECKING:
    from memory.services import Services


async def context_of_protected(services: Services, tenant: str, uids: Sequence[str]) -> set[str]:
    """The episodes among `uids`, not archived, that are next (offset +-1 on the chain, same
    thread) to an episode sleep protects: pinned, a cornerstone, or `sole_evidence`. Three reads
    (the neighbours, their connections, which of them are sole evidence)."""
    episodes = services.graph.episodes
    near = await episodes.neighbours_many(tenant, uids, 1)
    if not near:
        return set()
    own = {e.uid: e for e in await episodes.get_many(tenant, list(near))}
    beside: dict[str, list[str]] = {}  # uid -> its live same-thread neighbours' uids
    pinned: set[str] = set()
    for uid, around in near.items():
        me = own.get(uid)
        if me is None or me.archived:
            continue  # already out of search: its leaving changes no lift
        for n in around:
            if n.episode.thread_id == me.thread_id:
                beside.setdefault(uid, []).append(n.episode.uid)
                if n.episode.pinned:
                    pinned.add(n.episode.uid)
    others = sorted({n for ns in beside.values() for n in ns})
    if not others:
        return set()
    linked = await episodes.connections(tenant, others)
    protected = pinned | {n for n in others if is_cornerstone(linked.get(n, 0))}
    protected |= await episodes.sole_evidence(tenant, others)
    return {uid for uid, ns in beside.items() if protected.intersection(ns)}
