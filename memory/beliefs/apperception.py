"""Bulk apperception: how well the agent knows this person, computed at deep sleep.

Five components, each 0..1 and saturating (the scales are chosen by hand, not fitted: a
rough sense of "knows a lot" for one person's memory):

- **density**: mean graph connections per episode (topics, entities, facts, beliefs, strong
  co-retrieval links) / `DENSITY_SCALE`: memories that hang together;
- **cornerstones**: episodes with >= 15 connections / `CORNERSTONE_SCALE`: anchors;
- **coverage**: topics discussed / `TOPIC_SCALE`: how much of a life it has heard about;
- **emotional range**: distinct emotion words the person used / `EMOTION_SCALE`;
- **knowledge**: current facts / `FACT_SCALE`.

The score is their mean; `level` is low under `LOW`, high from `HIGH`, else medium. Stored in
the tenant's state (`KEY`) by deep sleep's `apperception` stage; the reply reads it
(`tasks.respond`: low -> ask more, high -> anticipate). Before the first deep sleep there is
no score and the reply says nothing about it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from memory.schema import Episode, as_utc
from memory.sleep.salience import emotion_words, is_cornerstone

if TYPE_CHECKING:
    from memory.services import Services
    from memory.stores.base import GraphStore

log = logging.getLogger(__name__)

KEY = "apperception"
"""Tenant-state key of the latest score (JSON)."""

# Offline bookkeeping gives a rich turn several topics and entities: three turns about a sister,
# a job and a worry already discuss ten topics. The scales are set so such a start is "low".
DENSITY_SCALE = 8.0
CORNERSTONE_SCALE = 5.0
TOPIC_SCALE = 100.0
EMOTION_SCALE = 12.0
FACT_SCALE = 30.0
LOW = 0.3
HIGH = 0.6

Level = Literal["low", "medium", "high"]


@dataclass(frozen=True, slots=True)
class Apperception:
    """The score, its level and components, and when it was computed."""

    score: float
    level: Level
    density: float
    cornerstones: float
    coverage: float
    emotional_range: float
    knowledge: float
    episodes: int
    at: str


def _scaled(value: float, scale: float) -> float:
    return round(min(1.0, max(0.0, value / scale)), 4)


def level_of(score: float) -> Level:
    """The level, low / medium / high, by the `LOW` and `HIGH` thresholds."""
    return "low" if score < LOW else "high" if score >= HIGH else "medium"


def score(
    episodes: Sequence[Episode],
    connections: Mapping[str, int],
    topics: int,
    facts: int,
    now: datetime,
) -> Apperception:
    """The apperception of a memory of `episodes` (with their connections), `topics` topics
    discussed and `facts` current facts."""
    links = [connections.get(e.uid, 0) for e in episodes]
    felt: set[str] = set()
    for e in episodes:
        felt |= emotion_words(e.user_text)
    parts = {
        "density": _scaled(sum(links) / len(links) if links else 0.0, DENSITY_SCALE),
        "cornerstones": _scaled(sum(1 for n in links if is_cornerstone(n)), CORNERSTONE_SCALE),
        "coverage": _scaled(topics, TOPIC_SCALE),
        "emotional_range": _scaled(len(felt), EMOTION_SCALE),
        "knowledge": _scaled(facts, FACT_SCALE),
    }
    total = round(sum(parts.values()) / len(parts), 4)
    return Apperception(
        score=total,
        level=level_of(total),
        episodes=len(episodes),
        at=as_utc(now).isoformat(),
        **parts,
    )


async def assess(
    services: Services,
    tenant: str,
    episodes: Sequence[Episode],
    connections: Mapping[str, int],
    now: datetime,
) -> Apperception:
    """Score the tenant's memory as it is after the deep level and store it."""
    graph = services.graph
    found = score(
        episodes,
        connections,
        await graph.topics.count(tenant),
        len(await graph.facts.list(tenant)),
        now,
    )
    await graph.state.put(tenant, KEY, json.dumps(asdict(found), sort_keys=True))
    return found


async def load(graph: GraphStore, tenant: str) -> Apperception | None:
    """The tenant's latest stored score, or None (no deep sleep yet, or unreadable)."""
    raw = await graph.state.get(tenant, KEY)
    if not raw:
        return None
    try:
        return Apperception(**json.loads(raw))
    except (TypeError, ValueError):
        log.warning("apperception: unreadable score for %s ignored", tenant)
        return None
