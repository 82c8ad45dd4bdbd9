"""The facts surface of retrieval: knowledge hits ranked beside the episodes, conflict-aware.

`memory.retrieval.retrieve` searches the `knowledge` collection in the same pass as the derivatives
(dense, and sparse over `fact_terms` of the query) and hands the hits here (`FactHits`).
`gather_facts` and `FactPool.rank` then, against the graph (the source of truth for what is
current):

- score each fact in the episodes' units (weighted cosine + BM25 scaled by the better of the
  best fact and the best derivative, / the best episode's relevance, + coverage), x (1 +
  `Recipe.subject_boost`) when it is about whom the question is about;
- let the **current successor** of a superseded fact that matched inherit its relevance (a
  question about the user's home that matches "lives in Lyon" is answered by "moved to Porto")
  plus `Recipe.current_boost`;
- when the question is about the user, scale the turns that matched only through facts about
  someone else by `Recipe.other_subject_factor`;
- scale superseded facts, and the episodes that stated only superseded facts, by
  `Recipe.stale_factor`, unless the question asks about the past ("before", "used to",
  "old", ...), when superseded facts gain `Recipe.history_boost` instead;
- bring back current standing instructions whose scope the request touches (a request to
  write a function brings back the code-style instruction), above everything;
- for a "why" question, add what led to the best decisions or plans (LED_TO edges: facts, and
  turns no fact captured).

Every fact candidate carries its source episodes (`sources`), which the eval maps to turns.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from memory.retrieval.candidates import Candidate, two_sided, user_answers
from memory.retrieval.ranking import best_coverage
from memory.retrieval.recipes import Recipe
from memory.schema import (
    GROUNDING_MIN,
    USER_SUBJECT,
    Episode,
    Fact,
    FactKind,
    as_utc,
    normalise_text,
)
from memory.stores.base import VectorHit
from memory.text.relations import MY_RELATION
from memory.text.sparse import tokenize

if TYPE_CHECKING:
    from memory.services import Services

PAST = re.compile(
    r"(?i)\b(before|used to|previous(?:ly)?|former(?:ly)?|(?<!how )old|earlier|originally|"
    r"at first|in the past|back then|ex|history|first)\b"
)
"""A question about what held before, where superseded facts are the answer."""
WHY = re.compile(r"(?i)\b(why|what led|reasons?|motivat\w*|because|made me|cause[ds]?)\b")
"""A question about what led to something."""
MAX_CHAIN = 8
"""Supersession hops followed to find a fact's current successor."""


@dataclass(slots=True)
class FactHits:
    """One pass's knowledge hits: the best dense and sparse score per fact uid."""

    dense: dict[str, float] = field(default_factory=dict)
    sparse: dict[str, float] = field(default_factory=dict)
    sparse_scale: float = 0.0
    """The best BM25 score of the pass's derivatives: facts are scaled by the better of it and
    their own best, so that a fact matching one stray word does not score like a full match."""
    dense_weight: float | None = None
    """The pass's dense weight after `Recipe.dense_gain` (None: the recipe's), so that facts
    and episodes fuse alike."""

    def add(self, mode: str, hits: Sequence[VectorHit]) -> None:
        """Keep the best score of each fact in the mode's list."""
        best = self.dense if mode == "dense" else self.sparse
        for hit in hits:
            uid = str(hit.payload.get("fact_uid", ""))
            if uid:
                best[uid] = max(best.get(uid, hit.score), hit.score)

    def relevance(self, recipe: Recipe) -> dict[str, float]:
        """Weighted cosine + BM25 (scaled by the best) per fact, as `memory.retrieval.fusion` scores turns."""
        uids = set(self.dense) | set(self.sparse)
        dense_fill = min(self.dense.values(), default=0.0)
        sparse_top = max([*self.sparse.values(), self.sparse_scale], default=1.0) or 1.0
        sparse_fill = min(self.sparse.values(), default=0.0)
        out = {}
        for uid in uids:
            value = 0.0
            if recipe.dense:
                weight = recipe.dense_weight if self.dense_weight is None else self.dense_weight
                value += weight * max(0.0, self.dense.get(uid, dense_fill))
            if recipe.sparse:
                value += recipe.sparse_weight * self.sparse.get(uid, sparse_fill) / sparse_top
            out[uid] = value
        return out


@dataclass(slots=True)
class FactHit:
    """A fact as a retrieval result (before it becomes a `Candidate`)."""

    fact: Fact
    score: float
    """Final score, in the episode candidates' scale."""
    relevance: float
    sources: list[str]
    via: str = "search"
    """`search`, `successor` (inherited from a superseded fact), `instruction` or `cause`."""


async def _current_of(
    services: Services, tenant: str, facts: Mapping[str, Fact]
) -> dict[str, Fact]:
    """Superseded fact uid -> its current successor (following superseded_by)."""
    out: dict[str, Fact] = {}
    frontier = {uid: f.superseded_by for uid, f in facts.items() if f.superseded_by}
    known = dict(facts)
    for _ in range(MAX_CHAIN):
        wanted = [u for u in set(frontier.values()) if u not in known]
        for loaded in await services.graph.get_facts(tenant, wanted):
            known[loaded.uid] = loaded
        nxt: dict[str, str] = {}
        for origin, uid in frontier.items():
            step = known.get(uid)
            if step is None:
                continue
            if step.superseded_by is None:
                out[origin] = step
            else:
                nxt[origin] = step.superseded_by
        if not nxt:
            break
        frontier = nxt
    return out


@dataclass(slots=True)
class FactPool:
    """The facts one retrieval found, before they are scaled to the episodes' scores."""

    facts: dict[str, Fact] = field(default_factory=dict)
    relevance: dict[str, float] = field(default_factory=dict)
    """Raw relevance in the episodes' units (a successor carries what it inherited)."""
    via: dict[str, str] = field(default_factory=dict)
    lent: dict[str, str] = field(default_factory=dict)
    """Successor uid -> the text of the superseded fact whose relevance it inherited (its
    words count for the rerank's coverage too)."""
    past: bool = False
    """The question asks about the past: superseded facts are answers, not stale."""
    cause_turns: dict[str, float] = field(default_factory=dict)
    """Episode uid -> score, for turns that led to a matched decision or plan ("why" questions;
    filled by `rank`)."""
    demote: dict[str, float] = field(default_factory=dict)
    """Episode uid -> factor for episodes that stated only superseded facts that matched."""

    async def rank(
        self,
        services: Services,
        tenant: str,
        best: float,
        recipe: Recipe,
        queries: Sequence[str],
        subjects: Collection[str] = (),
    ) -> list[FactHit]:
        """The facts as results: relevance / `best` (the episodes' normaliser), x (1 +
        `subject_boost`) for a fact about a subject the question names (`subjects`, normalised),
        plus the rerank, current and history terms; at most `recipe.max_facts` (plus causes),
        best first."""
        q_tokens = [set(tokenize(q)) - _TIME_TOKENS for q in queries]
        final: dict[str, float] = {}
        instructions = [u for u in self.relevance if self.via[u] == "instruction"]
        for uid, value in self.relevance.items():
            f = self.facts[uid]
            if self.via[uid] == "instruction":
                continue
            score = value / (best or 1.0)
            if normalise_text(f.subject) in subjects:
                score *= 1.0 + recipe.subject_boost
            if recipe.rerank:
                text = f"{f.text} {self.lent.get(uid, '')}"
                score += recipe.rerank_weight * best_coverage(q_tokens, text)
            if self.via[uid] == "successor":
                score += recipe.current_boost
            elif f.superseded_by is None:
                pass
            elif self.past:
                score += recipe.history_boost
            else:
                score *= recipe.stale_factor
            final[uid] = score
        top = max(final.values(), default=1.0)
        for uid in instructions:  # an instruction that applies comes first
            final[uid] = max(top, 1.0) + recipe.instruction_boost
        order = sorted(final, key=lambda u: (-final[u], u))[: recipe.max_facts + len(instructions)]
        if recipe.cause_weight > 0 and any(WHY.search(q) for q in queries):
            order = await self._with_causes(services, tenant, order, final, recipe)
        sources = await services.graph.sources_of_facts(tenant, order)
        return [
            FactHit(self.facts[u], final[u], self.relevance.get(u, 0.0), sources[u], self.via[u])
            for u in order
        ]

    async def _with_causes(
        self,
        services: Services,
        tenant: str,
        order: list[str],
        final: dict[str, float],
        recipe: Recipe,
    ) -> list[str]:
        """`order` with what led to its best decisions and plans, scored below their effect."""
        out = list(order)
        effects = [u for u in order if self.facts[u].kind in _MOTIVATED]
        for uid in effects[:3]:
            causes = await services.graph.causes_of(tenant, uid)
            for c in causes:
                if c.kind == "episode":  # a turn no fact captured
                    score = final[uid] * recipe.cause_weight
                    self.cause_turns[c.uid] = max(self.cause_turns.get(c.uid, 0.0), score)
            for f in await services.graph.get_facts(
                tenant, [c.uid for c in causes if c.kind == "fact"]
            ):
                score = final[uid] * recipe.cause_weight
                if final.get(f.uid, -1.0) < score:
                    final[f.uid] = score
                    self.facts[f.uid] = f
                    self.via[f.uid] = "cause"
                    if f.uid not in out:
                        out.append(f.uid)
        return sorted(out, key=lambda u: (-final[u], u))


_MOTIVATED = (FactKind.DECISION, FactKind.PLAN, FactKind.GOAL)
_TIME_TOKENS = frozenset(
    tokenize(
        "now today currently these days lately recently moment week month year still anymore "
        "nowadays time usually"
    )
)
"""Words that say when, not what: left out of a fact's query-term coverage."""


def fact_terms(query: str) -> str:
    """The query as the facts' lexical search reads it: without the words that say when
    ("now", "these days") and the "'s" of a contraction, which every "the user's ..." fact
    would match."""
    words = re.findall(r"[\w'\-]+", query)
    kept = [re.sub(r"'s$", "", w) for w in words if not set(tokenize(w)) <= _TIME_TOKENS]
    return " ".join(w for w in kept if w)


_FIRST_PERSON = re.compile(r"\b(I|me|my|mine|myself|I'm|I've|I'd)\b")


def subjects_named(queries: Sequence[str], entities: Collection[str]) -> set[str]:
    """Normalised fact subjects a question is about: the entities it names, a relation of the
    user's it names ("my brother" -> "user's brother"), else the user when it speaks in the
    first person."""
    out = {normalise_text(e) for e in entities}
    relations = {m.group(1).lower() for q in queries for m in MY_RELATION.finditer(q)}
    out |= {f"{USER_SUBJECT}'s {r}" for r in relations}
    if not relations and any(_FIRST_PERSON.search(q) for q in queries):
        out.add(USER_SUBJECT)
    return out


def _learned(f: Fact) -> datetime:
    return as_utc(f.learned_at or f.valid_from)


async def gather_facts(
    services: Services,
    tenant: str,
    hits: Sequence[FactHits],
    recipe: Recipe,
    queries: Sequence[str],
    cutoff: datetime,
    subjects: Collection[str] = (),
    instructions: Awaitable[list[Fact]] | None = None,
) -> FactPool:
    """The facts of the passes' knowledge hits, their successors and the instructions that
    apply, with raw relevance and the episodes to demote (see the module docstring).

    `subjects` (normalised) are whom the question is about; when it speaks of the user ("where
    do I live?"), turns that matched only through facts about someone else ("my sister lives
    in Lyon") are scaled by `Recipe.other_subject_factor`. `instructions` is the lookup of the
    applicable standing instructions (`applicable_instructions`) when the caller started it
    already (so that it overlaps the searches); else it runs here."""
    raw: dict[str, float] = {}
    for h in hits:
        for uid, value in h.relevance(recipe).items():
            raw[uid] = max(raw.get(uid, 0.0), value)
    pool = FactPool(past=any(PAST.search(q) for q in queries))
    found = await services.graph.get_facts(tenant, list(raw))
    pool.facts = {f.uid: f for f in found if _learned(f) <= cutoff}
    pool.relevance = {u: raw[u] for u in pool.facts}
    pool.via = dict.fromkeys(pool.facts, "search")
    matched = dict(pool.facts)
    if recipe.successors and not pool.past:
        for old, current in (await _current_of(services, tenant, matched)).items():
            if _learned(current) > cutoff:
                continue
            if pool.relevance.get(current.uid, -1.0) < pool.relevance[old]:
                pool.relevance[current.uid] = pool.relevance[old]
                pool.via[current.uid] = "successor"
                pool.lent[current.uid] = matched[old].text
            pool.facts[current.uid] = current
    if instructions is not None:  # awaited even when off: it was started
        applicable = await instructions
    elif recipe.instructions:
        applicable = await applicable_instructions(services, tenant, queries, cutoff)
    else:
        applicable = []
    if recipe.instructions:
        for f in applicable:
            pool.facts[f.uid] = f
            pool.relevance[f.uid] = pool.relevance.get(f.uid, 0.0)
            pool.via[f.uid] = "instruction"
    if USER_SUBJECT in subjects and recipe.other_subject_factor < 1.0:
        others = [u for u, f in matched.items() if normalise_text(f.subject) not in subjects]
        mine = [u for u, f in pool.facts.items() if normalise_text(f.subject) in subjects]
        sources = await services.graph.sources_of_facts(tenant, others + mine)
        keep = {e for u in mine for e in sources[u]}
        for u in others:
            for e in sources[u]:
                if e not in keep:
                    pool.demote[e] = recipe.other_subject_factor
    if not pool.past and recipe.stale_factor < 1.0:
        stale = [u for u, f in matched.items() if f.superseded_by is not None]
        live = [u for u, f in pool.facts.items() if f.superseded_by is None]
        sources = await services.graph.sources_of_facts(tenant, stale + live)
        keep = {e for u in live for e in sources[u]}
        for u in stale:
            for e in sources[u]:
                if e not in keep:
                    pool.demote[e] = min(pool.demote.get(e, 1.0), recipe.stale_factor)
    return pool


def applies(instruction: Fact, q_tokens: Collection[str]) -> bool:
    """True when a request (its sparse tokens) touches the instruction's scope: its concepts
    ("code", "function", ...) or its value ("python")."""
    scope = set(tokenize(" ".join(instruction.concepts))) | set(tokenize(instruction.value))
    return bool(scope & set(q_tokens))


async def standing_instructions(
    services: Services, tenant: str, request: str, now: datetime
) -> list[Fact]:
    """Every current, grounded standing instruction of the tenant: those that apply to
    `request` first, then the rest, each group newest first."""
    current = await services.graph.list_facts(tenant, kinds=[FactKind.INSTRUCTION])
    q_tokens = set(tokenize(request))
    kept = [f for f in current if _learned(f) <= as_utc(now) and f.grounding >= GROUNDING_MIN]
    return sorted(kept, key=lambda f: (not applies(f, q_tokens), -_learned(f).timestamp(), f.uid))


async def applicable_instructions(
    services: Services, tenant: str, queries: Sequence[str], cutoff: datetime
) -> list[Fact]:
    """Current standing instructions whose concepts or value the request touches."""
    current = await services.graph.list_facts(tenant, kinds=[FactKind.INSTRUCTION])
    q_tokens = set().union(*(set(tokenize(q)) for q in queries))
    return [f for f in current if _learned(f) <= cutoff and applies(f, q_tokens)]


async def fact_candidates(
    services: Services,
    tenant: str,
    pool: FactPool,
    out: list[Candidate],
    best: float,
    recipe: Recipe,
    queries: Sequence[str],
    subjects: Collection[str],
    cutoff: datetime,
    about_agent: bool = False,
) -> list[Candidate]:
    """The episode candidates `out` with the pool's facts ranked among them (`FactPool.rank`)
    and, for a "why" question, the turns that led to a matched decision. `about_agent`: the
    question asks what the agent said (`memory.text.query.addresses_agent`)."""
    hits = await pool.rank(services, tenant, best, recipe, queries, subjects)
    read = await services.graph.get_episodes(tenant, list({s for h in hits for s in h.sources}))
    episodes = {e.uid: e for e in read}
    # A question about what the agent said may be answered by a fact taken from its reply:
    # both sides of the source then rank at the fact's score.
    reply_weight = 1.0 if about_agent else recipe.reply_weight
    out = out + [_fact_candidate(h, episodes, reply_weight) for h in hits]
    if pool.cause_turns:
        out = await _with_cause_turns(
            services, tenant, out, pool.cause_turns, cutoff, recipe.reply_weight
        )
    return out


async def _with_cause_turns(
    services: Services,
    tenant: str,
    out: list[Candidate],
    turns: Mapping[str, float],
    cutoff: datetime,
    reply_weight: float,
) -> list[Candidate]:
    """`out` with the turns that led to a matched decision: lifted to their cause score (their
    sides alike), or added when retrieval had not found them (the user's side answering)."""
    present = {c.uid: c for c in out if c.kind == "episode"}
    for uid, score in turns.items():
        found = present.get(uid)
        if found is not None and score > found.score:
            was, found.score = found.score, score
            found.sides = {s: v * score / was if was > 0 else score for s, v in found.sides.items()}
    missing = [u for u in turns if u not in present]
    for episode in await services.graph.get_episodes(tenant, missing):
        if episode.archived or as_utc(episode.created_at) > cutoff:
            continue
        out.append(
            Candidate(
                episode_uid=episode.uid,
                score=turns[episode.uid],
                similarity=None,
                created_at=as_utc(episode.created_at),
                thread_id=episode.thread_id,
                content=episode.content,
                source="cause",
                signals=episode.ess.signals() if episode.ess else {},
                relevance=turns[episode.uid],
                salience=episode.salience,
                sides=user_answers(turns[episode.uid], reply_weight) if two_sided(episode) else {},
                uid=episode.uid,
                sources=[episode.uid],
            )
        )
    return out


def _fact_candidate(
    hit: FactHit, episodes: Mapping[str, Episode], reply_weight: float
) -> Candidate:
    """A fact as a retrieval candidate; `episode_uid` and `thread_id` are its first source's
    (`episodes`: its sources, read).

    A fact is what the user's side of its source turns stated (the offline rules read the
    user's text; the extraction prompt asks for what the speaker states), so when a source
    holds both sides the user's answers at the fact's score and the reply is context at
    `reply_weight` x it (`Candidate.sides`), as for an episode found by the user's words; 1
    when the question asks what the agent said."""
    f = hit.fact
    learned = as_utc(f.learned_at or f.valid_from)
    first = hit.sources[0] if hit.sources else ""
    source = episodes.get(first)
    replied = any(two_sided(e) for u in hit.sources if (e := episodes.get(u)) is not None)
    return Candidate(
        episode_uid=first,
        score=hit.score,
        similarity=None,
        created_at=learned,
        thread_id=source.thread_id if source is not None else "",
        content=f.text,
        fragments=[f.text],
        relevance=hit.relevance,
        sides=user_answers(hit.score, reply_weight) if replied else {},
        kind="fact",
        uid=f.uid,
        sources=list(hit.sources),
        fact={
            "kind": f.kind.value,
            "subject": f.subject,
            "attribute": f.attribute,
            "value": f.value,
            "valid_from": as_utc(f.valid_from).isoformat(),
            "valid_to": as_utc(f.valid_to).isoformat() if f.valid_to else None,
            "current": f.superseded_by is None,
            "superseded_by": f.superseded_by,
            "confidence": f.confidence,
            "grounding": f.grounding,
            "via": hit.via,
        },
    )
