"""What memory's state lends a ranking: salience, recency of use, association (co-retrieval links
and concepts), the hop through a concept, and diversity (docs/design.md section 5,
docs/adr/0148-one-ranking-reads-memory-state.md).

The relevance of the passes says how well a memory matches the question; this module adds what
memory has learned about it apart from the question:

- **salience**, as sleep keeps it (age, use, connections, emotion, identity; `memory.sleep`);
- **recency** of its last use (its last access, else its creation): retrieval strengthens
  memory, since every access the agent records (`record_access`) makes the memory recent again;
- **association**: the best relevance among the candidates it is linked to by co-retrieval
  (memories shown together before, the link's weight over `STRONG_LINK`, at most 1) or shares a
  concept with (one of the best candidates' concepts, `Priors.concept_seeds`).

The state terms weigh only once sleep has run for the tenant (`Priors.after_sleep`, read from
`memory.sleep.levels.last_runs`): before it, salience is the appraisal of a turn's own words at
writing, and no use has been consolidated. On such a memory the ranking is the relevance alone.

The **hop through a concept** adds the members of the best candidates' concepts that retrieval
did not find, scored below their seed (x `Time.neighbour_decay`), most salient first. The
**hop to a cornerstone** (`Priors.cornerstones`) does the same for the cornerstones linked to
one of those candidates (an episode with `CORNERSTONE_CONNECTIONS` connections, which sleep
never lets decay): sharing a concept with it, linked to it by co-retrieval (`STRONG_LINK`), or
naming an entity it names or one RELATED_TO hop from it (a person, a place) where few episodes
sit at that distance (`Graph.pointer_max`, the associative path's rule). The **diversity**
factor scales a candidate whose sources a better candidate already holds (`Rerank.diversity`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from memory.retrieval.candidates import Candidate, Source, reached
from memory.retrieval.priors import Priors
from memory.retrieval.question import Question
from memory.retrieval.ranking import recency
from memory.retrieval.recipes import Recipe
from memory.schema import Episode, as_utc
from memory.sleep.levels import last_runs
from memory.sleep.salience import is_cornerstone
from memory.stores.graph.coretrieval import STRONG_LINK

if TYPE_CHECKING:
    from memory.services import Services

__all__ = [
    "MemoryState",
    "hops",
    "diversified",
    "read_state",
    "slept",
    "state_terms",
]


@dataclass(slots=True)
class MemoryState:
    """What a retrieval read of memory's state for its candidates."""

    on: bool = False
    """Whether the state terms weigh (sleep has run, or the recipe does not wait for it)."""
    links: dict[str, dict[str, float]] = field(default_factory=dict)
    """Episode uid -> linked candidate uid -> strength in (0, 1] (co-retrieval or concept)."""
    concepts: dict[str, list[str]] = field(default_factory=dict)
    """Seed uid -> the episodes of its concepts (the seed left out), for the hop."""
    cornerstones: dict[str, list[str]] = field(default_factory=dict)
    """Seed uid -> the cornerstones linked to it (the seed left out), for the hop."""

    def association(self, uid: str, relevance: Mapping[str, float]) -> float:
        """The best relevance among the candidates linked to `uid`, x each link's strength."""
        return max(
            (
                relevance.get(other, 0.0) * strength
                for other, strength in self.links.get(uid, {}).items()
            ),
            default=0.0,
        )

    def link(self, a: str, b: str, strength: float) -> None:
        """Record a link of `strength` between `a` and `b` (both ways; the stronger kept)."""
        if a == b:
            return
        for x, y in ((a, b), (b, a)):
            row = self.links.setdefault(x, {})
            row[y] = max(row.get(y, 0.0), strength)


def state_weighs(priors: Priors) -> bool:
    """Whether the recipe weighs any state term or hops through concepts."""
    return bool(
        priors.salience_weight
        or priors.recency_weight
        or priors.association_weight
        or priors.concept_hops
    )


async def slept(services: Services, tenant: str, cutoff: datetime) -> bool:
    """Whether a sleep level has run for the tenant at or before `cutoff`."""
    for when in (await last_runs(services, tenant)).values():
        try:
            if as_utc(datetime.fromisoformat(when)) <= cutoff:
                return True
        except ValueError:
            continue
    return False


async def read_state(
    services: Services, tenant: str, ranked: Sequence[str], recipe: Recipe, cutoff: datetime
) -> MemoryState:
    """The state of the `ranked` candidates (best first): off when the recipe weighs none or
    waits for a sleep that has not run; else their co-retrieval links among themselves and the
    concepts of the best `concept_seeds`, and the cornerstones linked to those."""
    priors = recipe.priors
    if not ranked or not state_weighs(priors):
        return MemoryState()
    if priors.after_sleep and not await slept(services, tenant, cutoff):
        return MemoryState()
    state = MemoryState(on=True)
    present = set(ranked)
    if priors.association_weight:
        for link in await services.graph.coretrieval.list(tenant, list(ranked)):
            if link.a in present and link.b in present and link.weight > 0:
                state.link(link.a, link.b, min(1.0, link.weight / STRONG_LINK))
    if priors.association_weight or priors.concept_hops:
        for seed in ranked[: priors.concept_seeds]:
            members: dict[str, None] = {}
            for concept in (await services.graph.episodes.groups(tenant, seed)).concepts:
                group = await services.graph.concepts.members(tenant, concept)
                members.update(dict.fromkeys(u for u in group.episodes if u != seed))
            state.concepts[seed] = list(members)
            for uid in members:
                if uid in present:
                    state.link(seed, uid, 1.0)
    if priors.concept_hops and priors.cornerstones:
        state.cornerstones = await linked_cornerstones(
            services, tenant, ranked[: priors.concept_seeds], state.concepts, recipe
        )
    return state


async def linked_cornerstones(
    services: Services,
    tenant: str,
    seeds: Sequence[str],
    concepts: Mapping[str, Sequence[str]],
    recipe: Recipe,
) -> dict[str, list[str]]:
    """Seed uid -> the cornerstones linked to it: the episodes sharing one of its concepts
    (`concepts`, as `read_state` read them), linked to it by co-retrieval at `STRONG_LINK` or
    more, or naming one of its entities or an entity one RELATED_TO hop from one, where at most
    `Graph.pointer_max` episodes sit at that distance (the speaker named in every turn links
    nothing); of those, the ones with at least `CORNERSTONE_CONNECTIONS` connections."""
    graph = services.graph
    linked: dict[str, set[str]] = {seed: set(concepts.get(seed, ())) for seed in seeds}
    links, named = await asyncio.gather(
        graph.coretrieval.list(tenant, list(seeds)),
        asyncio.gather(*(graph.entities.of_episode(tenant, seed) for seed in seeds)),
    )
    for link in links:
        if link.weight >= STRONG_LINK:
            for a, b in ((link.a, link.b), (link.b, link.a)):
                if a in linked:
                    linked[a].add(b)
    most = recipe.graph.pointer_max
    limit = 2 * most + 2  # both distances complete whenever each is specific
    names = sorted({e.name for entities in named for e in entities})
    walks = await asyncio.gather(
        *(graph.entities.episodes_near(tenant, [name], 1, limit) for name in names)
    )
    near: dict[str, set[str]] = {}
    for name, hits in zip(names, walks, strict=True):
        at: dict[int, list[str]] = {}
        for hit in hits:
            at.setdefault(hit.distance, []).append(hit.episode_uid)
        cut = hits[-1].distance if len(hits) >= limit else None
        near[name] = {
            uid
            for distance, uids in at.items()
            if distance != cut and len(uids) <= most
            for uid in uids
        }
    for seed, entities in zip(seeds, named, strict=True):
        for entity in entities:
            linked[seed] |= near[entity.name]
    for seed, reach in linked.items():
        reach.discard(seed)
    wanted = sorted(set().union(*linked.values())) if linked else []
    counts = await services.graph.episodes.connections(tenant, wanted) if wanted else {}
    return {
        seed: sorted(u for u in uids if is_cornerstone(counts.get(u, 0)))
        for seed, uids in linked.items()
    }


def state_terms(episode: Episode, association: float, question: Question, priors: Priors) -> float:
    """The weighted salience, recency of last use and association of an episode."""
    used = as_utc(episode.created_at)
    if episode.last_accessed is not None:
        used = max(used, as_utc(episode.last_accessed))
    return (
        priors.salience_weight * episode.salience
        + priors.recency_weight * recency(used, question.cutoff, priors.recency_days)
        + priors.association_weight * association
    )


async def hops(
    services: Services,
    tenant: str,
    seeds: Sequence[Candidate],
    state: MemoryState,
    recipe: Recipe,
    question: Question,
) -> list[Candidate]:
    """The members of the seeds' concepts, then the cornerstones linked to them
    (`linked_cornerstones`), that are not candidates yet: of each, at most
    `Priors.concept_hops` per seed (most salient first), each scored its seed's score x
    `Time.neighbour_decay`; none created after the question, archived or under the salience
    floor."""
    out = await _hop(services, tenant, seeds, state, state.concepts, recipe, question, "concept")
    out += await _hop(
        services, tenant, [*seeds, *out], state, state.cornerstones, recipe, question, "cornerstone"
    )
    return out


async def _hop(
    services: Services,
    tenant: str,
    seeds: Sequence[Candidate],
    state: MemoryState,
    reach: Mapping[str, Sequence[str]],
    recipe: Recipe,
    question: Question,
    source: Source,
) -> list[Candidate]:
    """The episodes each seed reaches (`reach`) that are not candidates yet, at most
    `Priors.concept_hops` per seed (most salient first), scored the seed's score x
    `Time.neighbour_decay`; none created after the question, archived or under the salience
    floor."""
    hops, decay = recipe.priors.concept_hops, recipe.time.neighbour_decay
    if not state.on or hops <= 0 or not reach:
        return []
    present = {c.episode_uid for c in seeds}
    wanted = {u for m in reach.values() for u in m if u not in present}
    if not wanted:
        return []
    read = {e.uid: e for e in await services.graph.episodes.get_many(tenant, sorted(wanted))}
    out: list[Candidate] = []
    for seed in seeds:
        members = [
            e
            for u in reach.get(seed.episode_uid, [])
            if u not in present
            and (e := read.get(u)) is not None
            and not e.archived
            and as_utc(e.created_at) <= question.cutoff
            and e.salience >= recipe.priors.min_salience
        ]
        members.sort(key=lambda e: (-e.salience, e.uid))
        for episode in members[:hops]:
            present.add(episode.uid)
            out.append(reached(episode, seed, decay, source, recipe.turns.reply_weight))
    return out


def diversified(candidates: Iterable[Candidate], factor: float) -> list[Candidate]:
    """The candidates best first, each whose sources better candidates already hold scaled by
    `factor` (its sides alike), then in order again (ties by uid)."""
    ordered = sorted(candidates, key=lambda c: (-c.score, c.uid))
    if factor >= 1.0:
        return ordered
    held: set[str] = set()
    for c in ordered:
        sources = set(c.sources)
        if sources and sources <= held:
            c.score *= factor
            c.sides = {side: value * factor for side, value in c.sides.items()}
        held |= sources
    return sorted(ordered, key=lambda c: (-c.score, c.uid))
