"""Sleep's scores: every episode's salience and utility at the run's time (docs/design.md section
7; the formulas are `memory.sleep.salience`). The `rescore` stage writes those that changed;
`score` computes them from the episodes, so the forgetting stage decides on the same values
without being handed a list."""

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
    return await services.graph.episodes.list_by_status(tenant, statuses, limit=_SCAN)


async def connections_of(services: Services, tenant: str, uids: Sequence[str]) -> dict[str, int]:
    """Uid -> graph connections of each episode (strong co-retrieval links included)."""
    out: dict[str, int] = {}
    for i in range(0, len(uids), 500):
        out |= await services.graph.episodes.connections(tenant, uids[i : i + 500])
    return out


async def score(
    services: Services, tenant: str, now: datetime
) -> tuple[list[Candidate], dict[str, int]]:
    """Every episode with its utility and salience at `now` (computed, not read), and the
    episodes' connections. The only evidence of what memory holds true does not decay
    (`episode_salience`)."""
    episodes = await live_episodes(services, tenant)
    uids = [e.uid for e in episodes]
    connections = await connections_of(services, tenant, uids)
    sole: set[str] = set()
    for i in range(0, len(uids), 500):
        sole |= await services.graph.episodes.sole_evidence(tenant, uids[i : i + 500])
    scored = [
        Candidate(
            episode=e,
            utility=episode_utility(e, now),
            salience=episode_salience(
                e, connections.get(e.uid, 0), now, sole_evidence=e.uid in sole
            ),
        )
        for e in episodes
    ]
    return scored, connections


async def rescore(
    services: Services, tenant: str, now: datetime, progress: Progress | None = None
) -> int:
    """Micro: write every episode's salience and utility at `now` where they changed; how many
    were rewritten."""
    scored, _ = await score(services, tenant, now)
    changed = 0
    for n, c in enumerate(scored, start=1):
        if not (
            math.isclose(c.salience, c.episode.salience, abs_tol=1e-9)
            and math.isclose(c.utility, c.episode.utility_score, abs_tol=1e-9)
        ):
            await services.graph.episodes.update_scores(
                tenant, c.episode.uid, salience=c.salience, utility_score=c.utility
            )
            changed += 1
        if progress and (n % 200 == 0 or n == len(scored)):
            progress("salience", n, len(scored))
    return changed
