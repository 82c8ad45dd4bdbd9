"""Retrieval recipes: named, declarative search strategies for `memory.retrieval.retrieve.retrieve`.

A recipe is data, so an experiment is a config change: it reads as the steps of a retrieval,
each a small frozen config (graphiti's search recipes read as methods + reranker):

    search     what each pass asks the vector index for (collections, dense/sparse, budgets)
    summaries  the session summaries searched beside the turns, and their list in the fusion
    fusion     how the lists of a pass become one relevance (`memory.retrieval.fusion`)
    graph      what the graph adds: the entities the query names, the thread's neighbours
    time       the time window the question names, and the turns around the best ones
    turns      the shape of a turn: its speaker, its sides, what it asks, how much it says
    facts      the knowledge propositions ranked beside the turns (`memory.retrieval.facts`)
    rerank     the non-LLM rerank: the share of the question's words a candidate holds, and
               diversity against many candidates of one source
    priors     memory's state: salience, recency, association (co-retrieval links, concepts),
               the hop through a concept, and the salience floor

Copy one with `changed`, `dataclasses.replace` or `ablate` and pass it in. The router picks the
recipe by name (docs/design.md section 5) and may turn the temporal expansion on per turn
(`with_overrides`). Every part of the pipeline can be switched off; `PARTS` names them for
`mneme eval retrieval --ablate`. How many memories a reply gets is not the recipe's: it is the
route's (`tasks.route.result_count`); retrieval returns `Search.max_candidates` episodes for the
rerank to order, and `sized` widens that for a search asked for more (`Memory.search(k)`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from memory.retrieval.priors import Priors
from memory.schema import VectorKind


@dataclass(frozen=True, slots=True)
class Search:
    """What each pass sends to the vector index (`memory.retrieval.requests`)."""

    kinds: tuple[VectorKind, ...] = ("derivatives", "prospective")
    """Vector collections searched; every hit points back at its episode."""
    dense: bool = True
    """Search the dense (embedding) vectors."""
    sparse: bool = True
    """Search the sparse (BM25-like lexical) vectors."""
    contextual: bool = True
    """Score the context derivatives (turn + the turns before it); off: exact chunks only."""
    max_candidates: int = 30
    """Episodes `retrieve` returns, best first (the LLM rerank reads at most 50)."""
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
    similarity_floor: float | None = 0.15
    """Dense hits below this cosine similarity are dropped (None: none are): a guard against
    unrelated memories (unrelated texts score about 0-0.1 with MiniLM), not a ranking cut; 0.3
    dropped every dense hit of some LongMemEval questions, whose evidence scores 0.2-0.3."""
    max_passes: int = 1
    """Most query passes (sub-queries) one retrieval runs; an episode found by several takes the
    relevance of the pass that found it best, and the coverage rerank reads the sub-query it
    covers best."""


@dataclass(frozen=True, slots=True)
class Summaries:
    """The session summaries (`memory.write.sessions`), searched in the same pass: a summary
    that matches brings in its session's best turns for the question (ranked by the same dense
    + sparse search, within the session), a list of its own in the fusion."""

    on: bool = True
    """Search the session summaries."""
    hits: int = 3
    """Summaries expanded per pass (the best matches)."""
    turns: int = 3
    """Turns each expanded summary brings in, best first."""
    weight: float = 0.25
    """Weight of the summaries' list in the fusion: a turn scores the summary's match (relative
    to the best summary) / (1 + its rank within the session). 0.25: measured against 0.1 and
    0.5 (docs/adr/0100-summaries-in-retrieval.md)."""


@dataclass(frozen=True, slots=True)
class Fusion:
    """How the dense and sparse lists of a pass combine (`memory.retrieval.fusion`)."""

    method: Literal["score", "rrf"] = "score"
    """`score` = weighted sum of the calibrated scores (cosine similarity as it is, BM25
    divided by the best); `rrf` = reciprocal-rank fusion."""
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


@dataclass(frozen=True, slots=True)
class Graph:
    """What the graph adds to a pass: the associative path (entities named in the query →
    graph traversal → their episodes) and the thread's chain (smoothing)."""

    associative: bool = True
    """Entities named in the query → graph traversal → their episodes, fused with the vectors."""
    entity_hops: int = 1
    """RELATED_TO hops walked from the query's entities."""
    pointer_max: int = 12
    """An entity mentioned by at most this many episodes brings them in as candidates."""
    proximity_weight: float = 0.25
    """Weight of graph proximity in the relevance."""
    smoothing: float = 0.35
    """Add this x the better relevance of the previous and next turn of the same thread (the
    reply rides on the question that prompted it); the turns come from the graph's chain. For
    a one-sided turn (one speaker's message; its answer is the next episode)."""
    paired_smoothing: float = 0.15
    """`smoothing` for an episode that holds a message and the reply to it (a user turn and the
    assistant's answer): the answer is already inside it, so its neighbours lend it less.
    0.35 and 0.15, measured on both development benchmarks
    (docs/adr/0111-smoothing-by-turn-shape.md)."""


@dataclass(frozen=True, slots=True)
class Time:
    """The time window the question names, and the turns around the best ones."""

    boost: float = 0.15
    """An episode inside a time window named by the question scores (1 + this) x its
    relevance. Multiplicative, as `Turns.speaker_boost`: a turn that matches nothing else
    ("Take care, Sam!") is not lifted by its date alone."""
    neighbours: int = 0
    """Episodes before and after each seed along TEMPORAL_NEXT to add (0: none)."""
    neighbour_seeds: int = 5
    """How many top candidates get their neighbours."""
    neighbour_decay: float = 0.5
    """A neighbour scores its seed's relevance x decay / |offset|."""


@dataclass(frozen=True, slots=True)
class Turns:
    """How the shape of a turn weighs: who speaks, which side answers, what it asks, how much
    it says."""

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
    reply_only_as_context: bool = True
    """A user + assistant turn found only through fragments of its reply (no fragment of the
    user's side matched) ranks both sides at `reply_weight` x its score, unless the question
    asks what the assistant said: the user's words matched nothing, so that side is no answer,
    and the reply answers a question about the user only through what the user told it
    (docs/adr/0115-reply-only-match-as-context.md)."""
    question_discount: float = 0.3
    """A one-sided turn (one speaker's words, no reply in it) scores x (1 - this x the share
    of its sentences that ask): a question states nothing, and its answer is the next turn,
    which smoothing lifts. "Wow, what did you paint?" matches "What did Melanie paint?" word
    for word. A bare question to the agent is scaled by
    `memory.text.questions.BARE_QUESTION_FACTOR` instead; a turn with both sides is never
    scaled (a user asks the agent by design, and tells what matters while asking)."""
    brevity_discount: float = 0.2
    """A one-sided turn that says little scores x (1 - this x max(0, 1 - words /
    `brevity_words`)), words being the distinct content words of what it says (without a
    speaker label): at the same rank, a turn of under 8 content words is a third as likely to
    hold the answer as one of 24 or more on LoCoMo. A turn with both sides is not scaled: the
    reply's length says nothing of what the user told (docs/adr/0125-brevity-discount.md)."""
    brevity_words: int = 48
    """Content words from which a turn takes no `brevity_discount`."""


@dataclass(frozen=True, slots=True)
class Facts:
    """The facts surface (`memory.retrieval.facts`): the `knowledge` collection searched in the
    same pass, facts ranked beside the episodes, each carrying its source episodes."""

    on: bool = True
    """Search the facts and rank them beside the episodes."""
    limit: int = 10
    """Most facts one retrieval returns (besides instructions and causes)."""
    similarity_floor: float | None = 0.3
    """Dense fact hits below this cosine similarity are dropped (None: none are). Facts are
    short propositions and keep the floor they were measured with; turns have their own
    (`Search.similarity_floor`)."""
    successors: bool = True
    """A superseded fact that matches lends its relevance to its current successor."""
    current_boost: float = 0.1
    """Added to a current fact that inherited its relevance from a superseded one it replaced
    (see `successors`), so that it outranks the stale fact and the turn that stated it."""
    subject_boost: float = 0.15
    """A fact about whom the question is about (the user for "I"/"my", or a person it names)
    scores (1 + this) x its relevance, as `Turns.speaker_boost` does for turns."""
    other_subject_factor: float = 0.7
    """A question about the user ("where do I live?") scales the turns that matched only
    through facts about someone else ("my sister lives in Lyon") by this."""
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


@dataclass(frozen=True, slots=True)
class Rerank:
    """The non-LLM rerank of the top `depth`: query-term coverage of each candidate's text."""

    on: bool = True
    """Rerank by coverage."""
    depth: int = 30
    """Candidates (by relevance) the rerank reads."""
    weight: float = 0.25
    """Added x the coverage (share of the question's content words a candidate's text holds),
    to turns and facts alike. 0.25: measured against 0.15, 0.2 and 0.35 on both development
    benchmarks, and against weighting each word by its rarity among the candidates
    (docs/adr/0110-coverage-rerank-weight.md)."""
    diversity: float = 0.7
    """A candidate whose source episodes a better candidate already holds (a fact and the turn
    that stated it, two facts of one turn) scores x this (docs/design.md section 5's diversity
    factor; 1: none)."""
    newest: bool = False
    """For a question about the present, the newest of the best candidates that say the same
    thing takes the place of the best of them (`memory.retrieval.current`). Off: it lifted the
    stories' current questions (held-out too) and left LoCoMo, BEAM and LongMemEval level, but
    cost `mneme bench sleep`'s changed facts (docs/adr/0152-newest-statement-first.md)."""
    oldest: bool = False
    """For a question about the past, the oldest of them does (off, as `newest`)."""
    newest_depth: int = 10
    """Best candidates `newest` and `oldest` read (the first ten, which the evaluations score
    and the reply draws from)."""
    dense_head: int = 2
    """Of the episodes the dense list ranks first, this many are read: each that no lexical
    hit found takes the place right after the lexical list's best when it ranks lower (0:
    none; `memory.retrieval.floor`, docs/adr/0156-dense-head-place.md)."""


@dataclass(frozen=True, slots=True)
class Recipe:
    """How one retrieval runs: a name and one config per step. Scores: higher is better
    everywhere."""

    name: str
    search: Search = Search()
    summaries: Summaries = Summaries()
    fusion: Fusion = Fusion()
    graph: Graph = Graph()
    time: Time = Time()
    turns: Turns = Turns()
    facts: Facts = Facts()
    rerank: Rerank = Rerank()
    priors: Priors = Priors()


SIMPLE = Recipe("SIMPLE")
"""One pass, dense + sparse over derivatives and prospective questions, entities, rerank."""

TEMPORAL = Recipe("TEMPORAL", time=Time(boost=0.25, neighbours=2))
"""SIMPLE, a stronger time-window boost, and the 2 episodes before and after the best ones."""

AGGREGATION = Recipe("AGGREGATION", search=Search(max_passes=4))
"""Up to 4 sub-queries, each episode at its best pass's relevance. The sub-queries are the
router's: offline (`tasks.route.heuristic_route`) there is one pass, the message itself, so an
offline AGGREGATION searches as SIMPLE does and differs only in the memories the reply keeps
(`tasks.route.N_RESULTS_OF_KIND`: 10)."""

RECIPES: dict[str, Recipe] = {r.name: r for r in (SIMPLE, TEMPORAL, AGGREGATION)}
"""Recipes by name."""

PARTS: dict[str, dict[str, object]] = {
    "dense": {"search.dense": False},
    "sparse": {"search.sparse": False},
    "prospective": {"search.kinds": ("derivatives",)},
    "contextual": {"search.contextual": False},
    "floor": {"search.similarity_floor": None},
    "fragments": {"search.fragments_per_episode": 1.0},
    "summaries": {"summaries.on": False},
    "fusion": {"fusion.method": "rrf"},
    "adaptive": {"fusion.dense_gain": 0.0},
    "associative": {"graph.associative": False},
    "smoothing": {"graph.smoothing": 0.0, "graph.paired_smoothing": 0.0},
    "time": {"time.boost": 0.0},
    "neighbours": {"time.neighbours": 0},
    "speaker": {"turns.speaker_boost": 0.0},
    "turns": {"turns.reply_weight": 1.0},
    "reply": {"turns.reply_only_as_context": False},
    "questions": {"turns.question_discount": 0.0},
    "brevity": {"turns.brevity_discount": 0.0},
    "facts": {"facts.on": False},
    "subject": {"facts.subject_boost": 0.0, "facts.other_subject_factor": 1.0},
    "supersession": {
        "facts.successors": False,
        "facts.current_boost": 0.0,
        "facts.stale_factor": 1.0,
        "facts.history_boost": 0.0,
    },
    "instructions": {"facts.instructions": False},
    "causes": {"facts.cause_weight": 0.0},
    "rerank": {"rerank.on": False},
    "diversity": {"rerank.diversity": 1.0},
    "densehead": {"rerank.dense_head": 0},
    "state": {
        "priors.salience_weight": 0.0,
        "priors.recency_weight": 0.0,
        "priors.association_weight": 0.0,
        "priors.concept_hops": 0,
    },
    "cornerstones": {"priors.cornerstones": False},
}
"""Parts that `ablate` can turn off, and what turning each off changes (`step.field`: value)."""


def get_recipe(name: str) -> Recipe:
    """The recipe called `name` (BELIEF_QUERY searches like SIMPLE); ValueError names the options."""
    key = "SIMPLE" if name.upper() == "BELIEF_QUERY" else name.upper()
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
    return changed(recipe, changes)


def changed(recipe: Recipe, changes: dict[str, object]) -> Recipe:
    """A copy of `recipe` with `changes` (`step.field`: value) applied; ValueError names an
    unknown step or field."""
    steps: dict[str, dict[str, Any]] = {}
    for path, value in changes.items():
        step, _, name = path.partition(".")
        config = getattr(recipe, step, None) if step in _STEPS else None
        if config is None or name not in {f.name for f in fields(config)}:
            raise ValueError(f"unknown recipe setting {path!r}")
        steps.setdefault(step, {})[name] = value
    return replace(
        recipe, **{step: replace(getattr(recipe, step), **kw) for step, kw in steps.items()}
    )


_STEPS = frozenset(f.name for f in fields(Recipe)) - {"name"}


def with_overrides(recipe: Recipe, *, neighbours: int | None = None) -> Recipe:
    """A copy of `recipe` with the router's per-turn choices applied (the temporal expansion:
    `neighbours` turns before and after the best ones)."""
    if neighbours is not None:
        recipe = replace(recipe, time=replace(recipe.time, neighbours=max(0, neighbours)))
    return recipe


def sized(recipe: Recipe, k: int) -> Recipe:
    """A copy of `recipe` that returns `k` episodes and `k` facts (when the memory holds that
    many matches) where it returns fewer: for a search asked for `k` results of any kind."""
    search, facts = recipe.search, recipe.facts
    if k <= search.max_candidates and k <= facts.limit:
        return recipe
    return replace(
        recipe,
        search=replace(search, max_candidates=max(k, search.max_candidates)),
        facts=replace(facts, limit=max(k, facts.limit)),
    )
