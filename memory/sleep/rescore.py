"""Micro sleep's scores: every episode's salience and utility at the run's time (docs/design.md
section 7; the formulas are `memory.sleep.salience`), rewritten when they changed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from memory.schema import Episode, EpisodeStatus
from memory.sleep.levels import Progress
from memory.sleep.salience import episode_salience, episode_utility

if TYPE_CHECKING:
    from memory.services import Services

_SCAN = 1_000_000


@dataclass(frozen=True, slots=True)
class Candidate:
    """An episode the cycle considers, with its scores at the run's time."""

    episode: Episode
    utility: float
    salience: float


async def live_episodes(services: Services, tenant: str) -> list[Episode]:
    """The tenant's indexed and processed episodes (those sleep works on)."""
    statuses = [EpisodeStatus.INDEXED, EpisodeStatus.PROCESSED]
    return await services.graph.list_by_status(tenant, statuses, limit=_SCAN)


async def connections_of(services: Services, tenant: str, uids: Sequence[str]) -> dict[str, int]:
    """Uid -> graph connections of each episode (strong co-retrieval links included)."""
    out: dict[str, int] = {}
    for i in range(0, len(uids), 500):
        out |= await services.graph.episode_connections(tenant, uids[i : i + 500])
    return out


async def rescore(
    services: Services, tenant: str, now: datetime, progress: Progress | None = None
) -> tuple[list[Candidate], dict[str, int], int]:
    """Micro: every episode's salience and utility at `now`, written when they changed.

    Returns the scored episodes, their connections and how many were rewritten.
    """
    episodes = await live_episodes(services, tenant)
    connections = await connections_of(services, tenant, [e.uid for e in episodes])
    scored: list[Candidate] = []
    changed = 0
    for n, episode in enumerate(episodes, start=1):
        links = connections.get(episode.uid, 0)
        sal = episode_salience(episode, links, now)
        util = episode_utility(episode, now)
        if not (
            math.isclose(sal, episode.salience, abs_tol=1e-9)
            and math.isclose(util, episode.utility_score, abs_tol=1e-9)
        ):
            await services.graph.update_scores(
                tenant, episode.uid, salience=sal, utility_score=util
            )
            changed += 1
        scored.append(Candidate(episode=episode, utility=util, salience=sal))
        if progress and (n % 200 == 0 or n == len(episodes)):
            progress("salience", n, len(episodes))
    return scored, connections, changed
