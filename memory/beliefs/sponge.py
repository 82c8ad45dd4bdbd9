"""The sponge's running state per tenant: insights, interaction counter, cumulative belief shift
and the reflection trigger (docs/design.md section 6). No LLM and no prompts here.

Everything is kept so that re-running bookkeeping of an episode changes nothing:

- interactions are the tenant's episodes (`episodes.count`); the state records how many there
  were at the last reflection, so "interactions since" needs no counter to increment;
- the cumulative shift grows only by belief moves, which `memory.beliefs.evidence.apply_evidence` makes
  once per (episode, belief);
- an insight is kept once per episode.

The state survives a restart: it is a JSON document in the graph store's per-tenant state
(`state.get` / `state.put`, key `sponge`).
Writes of one tenant's state are serialised by the process's per-tenant lock
(`services.locks`): foreground and background bookkeeping run in one process.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory.schema import PersonalitySnapshot, as_utc, utcnow
from memory.stores.base import GraphStore

if TYPE_CHECKING:
    from memory.services import Services

log = logging.getLogger(__name__)

REFLECT_EVERY = 20
"""Reflection is due after this many interactions since the last one ..."""
SHIFT_TRIGGER = 0.1
"""... or as soon as the cumulative belief shift since the last one exceeds this."""
MAX_INSIGHTS = 50
"""Insights kept while waiting for reflection (oldest dropped first)."""
STATE_KEY = "sponge"


@dataclass(slots=True)
class Insight:
    """One sentence the agent took away from a qualifying turn."""

    text: str
    at: str
    """ISO time of the turn."""
    episode_uid: str | None = None


@dataclass(slots=True)
class SpongeState:
    """What is stored: the trigger's baseline and what waits for the next reflection."""

    episodes_at_reflection: int = 0
    """The tenant's episode count when the last reflection started."""
    cumulative_shift: float = 0.0
    """Sum of belief shifts since the last reflection."""
    insights: list[Insight] = field(default_factory=list)
    """Insights not yet reflected on, oldest first."""
    reflections: int = 0
    last_reflection_at: str | None = None

    def to_json(self) -> str:
        """The state as a JSON document."""
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> SpongeState:
        """Parse a stored document; anything unreadable gives a fresh state (with a warning)."""
        if not text:
            return cls()
        try:
            data: dict[str, Any] = json.loads(text)
            insights = [Insight(**i) for i in data.pop("insights", [])]
            known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
            return cls(**known, insights=insights)
        except (ValueError, TypeError) as exc:
            log.warning("the stored sponge state is unreadable (%s); starting afresh", exc)
            return cls()


@dataclass(frozen=True, slots=True)
class SpongeStatus:
    """The state with the tenant's interaction count, and whether reflection is due."""

    state: SpongeState
    interactions: int

    @property
    def since_reflection(self) -> int:
        """Interactions since the last reflection started."""
        return max(0, self.interactions - self.state.episodes_at_reflection)

    def due(self, every: int = REFLECT_EVERY, shift: float = SHIFT_TRIGGER) -> bool:
        """True when reflection should run: every ~`every` interactions or a shift > `shift`."""
        return self.since_reflection >= every or self.state.cumulative_shift > shift


# --------------------------------------------------------------------------- persistence


async def _read(graph: GraphStore, tenant: str) -> SpongeState:
    return SpongeState.from_json(await graph.state.get(tenant, STATE_KEY))


async def _write(graph: GraphStore, tenant: str, state: SpongeState) -> None:
    await graph.state.put(tenant, STATE_KEY, state.to_json())


async def load_state(graph: GraphStore, tenant: str) -> SpongeState:
    """The tenant's stored sponge state (fresh when none is stored)."""
    return await _read(graph, tenant)


async def status(graph: GraphStore, tenant: str) -> SpongeStatus:
    """The tenant's sponge state, interaction count and trigger."""
    state = await _read(graph, tenant)
    return SpongeStatus(state, await graph.episodes.count(tenant))


async def add_insight(
    services: Services,
    tenant: str,
    text: str,
    *,
    episode_uid: str | None = None,
    at: datetime | None = None,
) -> bool:
    """Keep an insight for the next reflection; once per episode. True if it was added."""
    text = " ".join(text.split())
    if not text:
        return False
    when = (as_utc(at) if at else utcnow()).isoformat()
    graph = services.graph
    async with services.locks.get("sponge", tenant):
        state = await _read(graph, tenant)
        if episode_uid is not None and any(i.episode_uid == episode_uid for i in state.insights):
            return False
        state.insights = [*state.insights, Insight(text, when, episode_uid)][-MAX_INSIGHTS:]
        await _write(graph, tenant, state)
    return True


async def add_shift(services: Services, tenant: str, amount: float) -> SpongeState:
    """Add a belief shift to the cumulative shift since the last reflection. The new state."""
    graph = services.graph
    async with services.locks.get("sponge", tenant):
        state = await _read(graph, tenant)
        if amount > 0:
            state.cumulative_shift = round(state.cumulative_shift + amount, 6)
            await _write(graph, tenant, state)
    return state


async def finish_reflection(
    services: Services, tenant: str, seen: SpongeStatus, at: datetime | None = None
) -> SpongeState:
    """Reset the trigger after a reflection that started from `seen`.

    Shift and insights that arrived while reflection ran are kept for the next one.
    """
    graph = services.graph
    async with services.locks.get("sponge", tenant):
        state = await _read(graph, tenant)
        state.episodes_at_reflection = max(state.episodes_at_reflection, seen.interactions)
        state.cumulative_shift = round(
            max(0.0, state.cumulative_shift - seen.state.cumulative_shift), 6
        )
        consumed = {(i.text, i.at, i.episode_uid) for i in seen.state.insights}
        state.insights = [
            i for i in state.insights if (i.text, i.at, i.episode_uid) not in consumed
        ]
        state.reflections += 1
        state.last_reflection_at = (as_utc(at) if at else utcnow()).isoformat()
        await _write(graph, tenant, state)
    return state


async def first_snapshot(
    services: Services, tenant: str, text: str, at: datetime
) -> PersonalitySnapshot | None:
    """Write the tenant's first personality snapshot (version 1, the starting personality) when
    it has none; None when one exists. Run at the tenant's first processed episode, so
    `mneme snapshot` is never empty once someone has talked to the agent."""
    async with services.locks.get("sponge", tenant):
        if await services.graph.snapshots.current(tenant) is not None:
            return None
        return await services.graph.snapshots.add(tenant, text, at)
