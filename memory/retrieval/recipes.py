"""Retrieval recipes: named, declarative search strategies for `memory.retrieval.retrieve.retrieve`.

A recipe is data, so an experiment is a config change: copy one with `dataclasses.replace` (or
`ablate`) and pass it in. The router picks the recipe by name (docs/design.md section 5) and may override
its result count, temporal expansion and credibility weights per turn. Every part of the pipeline
can be switched off here; `PARTS` names them for `mneme eval retrieval --ablate`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from memory.schema import VectorKind

DEFAULT_N_RESULTS = 7
"""Memories a reply gets when neither the router nor the run's context says (docs/design.md: 7)."""


@dataclass(frozen=True, slots=True)
class Recipe:
    """How one retrieval runs. Scores: higher is better everywhere."""

    name: str
    # ---- vector search
    kinds: tuple[VectorKind, ...] = ("derivatives", "prospective")
    """Vector collections searched; every hit points back at its episode."""
    dense: bool = True
    """Search the dense (embedding) vectors."""
    sparse: bool = True
    """Search the sparse (BM25-like lexical) vectors."""
    contextual: bool = True
    """Score the context derivatives (turn + the turns before it); off: exact chunks only."""
    n_results: int = DEFAULT_N_RESULTS
    """Memories the reply gets after rerank (the router may override it; 1-20)."""
    max_candidates: int = 30
    """Candidates `retrieve` returns, best first (the rerank reads at most 50)."""
    overfetch: float = 2.0
    """Each underlying search asks for points enough for `overfetch * max_candidates` episodes."""
    fragments_per_episode: float = 2.0
    """Points fetched per episode asked for: a long turn is many fragments, and its best ones
    crowd a list (a 500-word reply is 6+ points), so each search asks for `overfetch *
    max_candidates * fragments_per_episode` points; an episode scores as its best (max-sim)."""
    prospective_share: float = 0.5
    """The prospective-question searches fetch this share of the points a derivative search
    fetches: a paraphrase of a turn adds to what its exact chunks found, and half as many cost
    nothing measurable on either benchmark (LoCoMo R@10 0.797 either way) and a sixth of a
    retrieval's CPU (docs/adr/0113-prospective-share.md)."""
    fusion: Literal["score", "rrf"] = "score"
    """How the dense and sparse lists combine (`memory.retrieval.fusion`): `score` = weighted sum of the
    calibrated scores (cosine similarity as it is, BM25 divided by the best); `rrf` =
    reciprocal-rank fusion."""
    rrf_k: int = 60
    """Reciprocal-rank-fusion constant: score = sum of w / (k + rank) over the ranked lists."""
    dense_weight: float = 1.0
    """Weight of the dense list in the fusion."""
    sparse_weight: float = 1.0
    """Weight of the sparse list in the fusion."""
    dense_gain: float = 2.0
    """The dense weight is scaled by 1 + this x (1 - fit), where fit is the best share of the
    question's words that one of the top `lexical_hits` sparse hits holds: a question whose
    words no lexical hit holds is matched on stray words, and meaning decides (0: fixed)."""
    lexical_hits: int = 3
    """Top sparse hits read for the fit of `dense_gain`."""
    similarity_floor: float | None = 0.15
    """Dense hits below this cosine similarity are dropped (None: none are): a guard against
    unrelated memories (unrelated texts score about 0-0.1 with MiniLM), not a ranking cut; 0.3
    dropped every dense hit of some LongMemEval questions, whose evidence scores 0.2-0.3."""
    smoothing: float = 0.35
    """Add this x the better relevance of the previous and next turn of the same thread (the
    reply rides on the question that prompted it); the turns come from the graph's chain. For
    a one-sided turn (one speaker's message; its answer is the next episode)."""
    paired_smoothing: float = 0.15
    """`smoothing` for an episode that holds a message and the reply to it (a user turn and the
    assistant's answer): the answer is already inside it, so its neighbours lend it less.
    0.35 and 0.15, measured on both development benchmarks
    (docs/adr/0111-smoothing-by-turn-shape.md)."""
    # ---- session summaries (`memory.write.sessions`)
    summaries: bool = True
    """Search the session summaries too: a summary that matches brings in its session's best
    turns for the question (ranked by the same dense + sparse search, within the session)."""
    summary_hits: int = 3
    """Summaries expanded per pass (the best matches)."""
    summary_turns: int = 3
    """Turns each expanded summary brings in, best first."""
    summary_weight: float = 0.25
    """Weight of the summaries' list in the fusion: a turn scores the summary's match (relative
    to the best summary) / (1 + its rank within the session). 0.25: measured against 0.1 and
    0.5 (docs/adr/0100-summaries-in-retrieval.md)."""
    # ---- time
    time_boost: float = 0.15
    """An episode inside a time window named by the question scores (1 + this) x its
    relevance. Multiplicative, as `speaker_boost`: a turn that matches nothing else ("Take
    care, Sam!") is not lifted by its date alone."""
    time_filter: bool = False
    """Search only inside the question's time window (when it names one)."""
    neighbours: int = 0
    """Episodes before and after each seed along TEMPORAL_NEXT to add (0: none)."""
    neighbour_seeds: int = 5
    """How many top candidates get their neighbours."""
    neighbour_decay: float = 0.5
    """A neighbour scores its seed's relevance x decay / |offset|."""
    # ---- associative path
    associative: bool = True
    """Entities named in the query → graph traversal → their episodes, fused with the vectors."""
    entity_hops: int = 1
    """RELATED_TO hops walked from the query's entities."""
    proximity_weight: float = 0.25
    """Weight of graph proximity in the relevance."""
    pointer_max: int = 12
    """An entity mentioned by at most this many episodes brings them in as candidates."""
    speaker_boost: float = 0.15
    """A turn whose speaker the query names scores (1 + this) x its relevance: "What did Ana
    read?" favours what Ana said over what others said to her. Transcripts of people only
    (turns stored as `Name: text`); agent turns carry no speaker. Multiplicative, so an
    irrelevant turn is not lifted by its speaker alone."""
    reply_weight: float = 0.5
    """A turn with both sides (user and agent) ranks its answering side at the turn's score
    and the other side, context, at this x it (`Candidate.sides`): the user's side answers,
    unless the question asks what the agent said and the agent's reply matched. 1: both sides
    at the turn's score, in order."""
    question_discount: float = 0.3
    """A one-sided turn (one speaker's words, no reply in it) scores x (1 - this x the share
    of its sentences that ask): a question states nothing, and its answer is the next turn,
    which smoothing lifts. "Wow, what did you paint?" matches "What did Melanie paint?" word
    for word. A bare question to the agent is scaled by `memory.text.questions.BARE_QUESTION_FACTOR`
    instead; a turn with both sides is never scaled (a user asks the agent by design, and tells
    what matters while asking)."""
    brevity_discount: float = 0.2
    """A one-sided turn that says little scores x (1 - this x max(0, 1 - words /
    `brevity_words`)), words being the distinct content words of what it says (without a
    speaker label): at the same rank, a turn of under 8 content words is a third as likely to
    hold the answer as one of 24 or more on LoCoMo. A turn with both sides is not scaled: the
    reply's length says nothing of what the user told (docs/adr/0125-brevity-discount.md)."""
    brevity_words: int = 48
    """Content words from which a turn takes no `brevity_discount`."""
    reply_only_as_context: bool = True
    """A user + assistant turn found only through fragments of its reply (no fragment of the
    user's side matched) ranks both sides at `reply_weight` x its score, unless the question
    asks what the assistant said: the user's words matched nothing, so that side is no answer,
    and the reply answers a question about the user only through what the user told it
    (docs/adr/0115-reply-only-match-as-context.md)."""
    # ---- facts (knowledge propositions; `memory.retrieval.facts`)
    facts: bool = True
    """Search the `knowledge` collection in the same pass and rank facts beside the episodes,
    each carrying its source episodes."""
    max_facts: int = 10
    """Most facts one retrieval returns (besides instructions and causes)."""
    fact_similarity_floor: float | None = 0.3
    """Dense fact hits below this cosine similarity are dropped (None: none are). Facts are
    short propositions and keep the floor they were measured with; turns have their own
    (`similarity_floor`)."""
    successors: bool = True
    """A superseded fact that matches lends its relevance to its current successor."""
    current_boost: float = 0.1
    """Added to a current fact that inherited its relevance from a superseded one it replaced
    (see `successors`), so that it outranks the stale fact and the turn that stated it."""
    other_subject_factor: float = 0.7
    """A question about the user ("where do I live?") scales the turns that matched only
    through facts about someone else ("my sister lives in Lyon") by this."""
    subject_boost: float = 0.15
    """A fact about whom the question is about (the user for "I"/"my", or a person it names)
    scores (1 + this) x its relevance, as `speaker_boost` does for turns."""
    stale_factor: float = 0.5
    """Superseded facts that match, and the episodes that stated only those, are scaled by
    this, unless the question asks about the past."""
    history_boost: float = 0.1
    """Added to superseded facts when the question asks about the past ("before", "old")."""
    instructions: bool = True
    """Current standing instructions whose scope the request touches come first."""
    instruction_boost: float = 0.2
    """An applicable instruction scores the best other score (at least 1) + this."""
    cause_weight: float = 0.9
    """For a "why" question, what led to a matched decision or plan scores this x its score."""
    # ---- rerank and final score
    rerank: bool = True
    """Non-LLM rerank of the top `rerank_depth`: query-term coverage of each candidate's text."""
    rerank_depth: int = 30
    rerank_weight: float = 0.25
    """Added x the coverage (share of the question's content words a candidate's text holds),
    to turns and facts alike. 0.25: measured against 0.15, 0.2 and 0.35 on both development
    benchmarks, and against weighting each word by its rarity among the candidates
    (docs/adr/0110-coverage-rerank-weight.md)."""
    salience_weight: float = 0.0
    """Final score = relevance (scaled to [0, 1] by the best) + the weighted salience, recency
    and credibility terms. docs/design.md's context weights (0.3 salience, 0.2 recency) are the recipe
    `CONTEXT`; on question answering they cost recall
    (docs/adr/0017-ranking-departs-from-design-weights.md)."""
    recency_weight: float = 0.0
    recency_days: float = 30.0
    """Recency = 1 / (1 + age_days / recency_days)."""
    min_salience: float = 0.1
    """Episodes with a lower salience are left out."""
    # ---- passes and budgets
    max_passes: int = 1
    """Most query passes (sub-queries) one retrieval runs; an episode found by several takes the
    relevance of the pass that found it best, and the coverage rerank reads the sub-query it
    covers best."""


SIMPLE = Recipe(name="SIMPLE")
"""One pass, dense + sparse over derivatives and prospective questions, entities, rerank."""

TEMPORAL = Recipe(name="TEMPORAL", neighbours=2, time_boost=0.25)
"""SIMPLE, a stronger time-window boost, and the 2 episodes before and after the best ones."""

AGGREGATION = Recipe(name="AGGREGATION", n_results=10, max_passes=4)
"""Up to 4 sub-queries, each episode at its best pass's relevance."""

CONTEXT = Recipe(name="CONTEXT", salience_weight=0.3, recency_weight=0.2)
"""docs/design.md section 5's context weights: salience and recency beside similarity and proximity."""

RECIPES: dict[str, Recipe] = {r.name: r for r in (SIMPLE, TEMPORAL, AGGREGATION, CONTEXT)}
"""Recipes by name."""

PARTS: dict[str, dict[str, object]] = {
    "dense": {"dense": False},
    "sparse": {"sparse": False},
    "prospective": {"kinds": ("derivatives",)},
    "contextual": {"contextual": False},
    "fusion": {"fusion": "rrf"},
    "time": {"time_boost": 0.0, "time_filter": False},
    "neighbours": {"neighbours": 0},
    "associative": {"associative": False},
    "rerank": {"rerank": False},
    "adaptive": {"dense_gain": 0.0},
    "floor": {"similarity_floor": None},
    "fragments": {"fragments_per_episode": 1.0},
    "turns": {"reply_weight": 1.0},
    "reply": {"reply_only_as_context": False},
    "smoothing": {"smoothing": 0.0, "paired_smoothing": 0.0},
    "speaker": {"speaker_boost": 0.0},
    "questions": {"question_discount": 0.0},
    "brevity": {"brevity_discount": 0.0},
    "facts": {"facts": False},
    "subject": {"subject_boost": 0.0, "other_subject_factor": 1.0},
    "supersession": {
        "successors": False,
        "current_boost": 0.0,
        "stale_factor": 1.0,
        "history_boost": 0.0,
    },
    "instructions": {"instructions": False},
    "causes": {"cause_weight": 0.0},
    "summaries": {"summaries": False},
}
"""Parts that `ablate` can turn off, and what turning each off changes."""


def get_recipe(name: str) -> Recipe:
    """The recipe called `name` (BELIEF_QUERY searches like SIMPLE); ValueError names the options."""
    key = name.upper()
    if key == "BELIEF_QUERY":
        return SIMPLE
    try:
        return RECIPES[key]
    except KeyError:
        raise ValueError(
            f"unknown retrieval recipe {name!r}; use one of {sorted(RECIPES)}"
        ) from None


def ablate(recipe: Recipe, part: str) -> Recipe:
    """A copy of `recipe` with one part turned off; ValueError names the parts."""
    try:
        changes = PARTS[part]
    except KeyError:
        raise ValueError(f"unknown part {part!r}; use one of {sorted(PARTS)}") from None
    return replace(recipe, **changes)  # type: ignore[arg-type]


def with_overrides(
    recipe: Recipe, *, n_results: int | None = None, neighbours: int | None = None
) -> Recipe:
    """A copy of `recipe` with the router's per-turn choices applied."""
    if n_results is not None:
        recipe = replace(recipe, n_results=max(1, min(20, n_results)))
    if neighbours is not None:
        recipe = replace(recipe, neighbours=max(0, neighbours))
    return recipe
