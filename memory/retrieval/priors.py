"""The recipe's `priors` step (`memory.retrieval.recipes.Recipe.priors`): what an episode weighs
apart from the question, memory's state, which `memory.retrieval.state` applies."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Priors:
    """What an episode weighs apart from the question: memory's state (`memory.retrieval.state`).

    Final score = relevance (scaled to [0, 1] by the best) + the rerank's coverage + the
    relevance x the weighted salience, recency and association (`relative`; + credibility when
    a route asks). The state terms weigh only once sleep has run for the tenant
    (`after_sleep`): before it, an episode's salience is the appraisal of its own words at
    writing, which says little about which memory answers a question
    (docs/adr/0017-ranking-departs-from-design-weights.md), and no access has been consolidated
    yet. Their weights are 0, by measurement (docs/adr/0148-one-ranking-reads-memory-state.md);
    the hop through a concept, and to a cornerstone, is on."""

    salience_weight: float = 0.0
    """Weight of the episode's salience (docs/design.md section 7: age, use, connections,
    emotion, identity; sleep keeps it current). 0: at the design's 0.3 (with recency 0.2 and
    association 0.2) the simulated year of `mneme bench sleep` ranked its changed facts below
    the old values it had used all year, and no group gained (docs/adr/0148)."""
    recency_weight: float = 0.0
    """Weight of recency: of the episode's last use (last access, else creation). 0, as
    `salience_weight`."""
    recency_days: float = 30.0
    """Recency = 1 / (1 + days since the last use / recency_days)."""
    association_weight: float = 0.0
    """Weight of association (0, as `salience_weight`): the best relevance among the
    candidates this episode is linked to by co-retrieval (scaled by the link's strength,
    `STRONG_LINK` full) or shares a concept with."""
    relative: bool = True
    """The state terms scale with the episode's relevance (score + relevance x terms): a memory
    is not lifted by its use alone, as `Turns.speaker_boost` and `Time.boost` multiply; False:
    added as they are."""
    after_sleep: bool = True
    """State terms only once a sleep level has run for the tenant (at or before the question's
    time); False: always."""
    concept_hops: int = 2
    """Members of the best candidates' concepts added as candidates when retrieval missed them
    (per seed; 0: none), scored `Time.neighbour_decay` x their seed, most salient first: an
    associative hop through a concept."""
    concept_seeds: int = 3
    """How many of the best candidates lend their concepts (`concept_hops`)."""
    cornerstones: bool = True
    """The hop also reaches the cornerstones (`memory.sleep.salience.is_cornerstone`) linked to
    those candidates: sharing a concept, linked by co-retrieval, or naming an entity (a person,
    a place) they name or one RELATED_TO hop from it, where few episodes sit at that distance
    (`memory.retrieval.state.linked_cornerstones`); at most `concept_hops` per seed, scored as
    the concept's members (docs/adr/0148-one-ranking-reads-memory-state.md, amendment)."""
    min_salience: float = 0.1
    """Episodes with a lower salience are left out."""
