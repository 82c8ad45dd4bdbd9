"""The facts surface of retrieval: knowledge hits ranked beside the episodes, conflict-aware.

Each pass searches the `knowledge` collection beside the derivatives (`memory.retrieval.requests`:
dense, and sparse over `fact_terms` of the query) and keeps the hits here (`FactHits`).
`gather_facts` and `FactPool.rank` then, against the graph (the source of truth for what is
current):

- score each fact in the episodes' units (weighted cosine + BM25 scaled by the better of the
  best fact and the best derivative, / the best episode's relevance, + coverage), x (1 +
  `Facts.subject_boost`) when it is about whom the question is about;
- let the **current successor** of a superseded fact that matched inherit its relevance (a
  question about the user's home that matches "lives in Lyon" is answered by "moved to Porto")
  plus `Facts.current_boost`;
- when the question is about the user, scale the turns that matched only through facts about
  someone else by `Facts.other_subject_factor`;
- scale superseded facts, and the episodes that stated only superseded facts, by
  `Facts.stale_factor`, unless the question asks about the past ("before", "used to",
  "old", ...), when superseded facts gain `Facts.history_boost` instead;
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

from memory.retrieval.ranking import best_coverage
from memory.retrieval.recipes import Facts as FactsConfig
from memory.retrieval.recipes import Recipe
from memory.schema import GROUNDING_MIN, USER_SUBJECT, Fact, FactKind, as_utc, normalise_text
from memory.stores.base import VectorHit
from memory.text.relations import MY_RELATION
from memory.text.sparse import tokenize

if TYPE_CHECKING:
    from memory.retrieval.question import Question
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
    """The pass's dense weight after `Fusion.dense_gain` (None: the recipe's), so that facts
    and episodes fuse alike."""

    def add(self, mode: str, hits: Sequence[VectorHit]) -> None:
        """Keep the best score of each fact in the mode's list."""
        best = self.dense if mode == "dense" else self.sparse
        for hit in hits:
            uid = str(hit.payload.get("fact_uid", ""))
            if uid:
                best[uid] = max(best.get(uid, hit.score), hit.score)

    def relevance(self, recipe: Recipe) -> dict[str, float]:
        """Weighted cosine + BM25 (scaled by the best) per fact, as `memory.retrieval.fusion`
        scores turns."""
        uids = set(self.dense) | set(self.sparse)
        dense_fill = min(self.dense.values(), default=0.0)
        sparse_top = max([*self.sparse.values(), self.sparse_scale], default=1.0) or 1.0
        sparse_fill = min(self.sparse.values(), default=0.0)
        fusion = recipe.fusion
        dense_weight = fusion.dense_weight if self.dense_weight is None else self.dense_weight
        out = {}
        for uid in uids:
            value = 0.0
            if recipe.search.dense:
                value += dense_weight * max(0.0, self.dense.get(uid, dense_fill))
            if recipe.search.sparse:
                value += fusion.sparse_weight * self.sparse.get(uid, sparse_fill) / sparse_top
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
    cosine: float | None = None
    """Its best dense cosine to the question (None: no dense search hit it)."""


async def _current_of(
    services: Services, tenant: str, facts: Mapping[str, Fact]
) -> dict[str, Fact]:
    """Superseded fact uid -> its current successor (following superseded_by)."""
    out: dict[str, Fact] = {}
    frontier = {uid: f.superseded_by for uid, f in facts.items() if f.superseded_by}
    known = dict(facts)
    for _ in range(MAX_CHAIN):
        wanted = [u for u in set(frontier.values()) if u not in known]
        for loaded in await services.graph.facts.get_many(tenant, wanted):
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
    cosine: dict[str, float] = field(default_factory=dict)
    """The best dense cosine of each fact the searches hit (a successor carries what it
    inherited with the relevance); none for a fact no dense search hit."""
    via: dict[str, str] = field(default_factory=dict)
    matched: dict[str, Fact] = field(default_factory=dict)
    """The facts the searches hit (before successors and instructions joined)."""
    lent: dict[str, str] = field(default_factory=dict)
    """Successor uid -> the text of the superseded fact whose relevance it inherited (its
    words count for the rerank's coverage too)."""
    past: bool = False
    """The question asks about the past: superseded facts are answers, not stale."""
    cause_turns: dict[str, float] = field(default_factory=dict)
    """Episode uid -> score, for turns that led to a matched decision or plan ("why" questions;
    filled by `rank`)."""
    demote: dict[str, float] = field(default_factory=dict)
    """Episode uid -> factor for episodes that stated only superseded facts that matched, or,
    for a question about the user, only facts about someone else."""
    scale: float = 1.0
    """The best relevance of the episodes ranked beside the facts: facts are scaled by it into
    the episodes' scores (`rank`)."""

    async def rank(
        self, services: Services, tenant: str, recipe: Recipe, question: Question
    ) -> list[FactHit]:
        """The facts as results: relevance / `scale`, x (1 + `subject_boost`) for a fact about
        a subject the question is about, plus the rerank, current and history terms; at most
        `Facts.limit` (plus instructions and causes), best first."""
        q_tokens = [set(tokenize(q)) - _TIME_TOKENS for q in question.queries]
        final = {
            uid: self._score(uid, value, recipe, question.subjects, q_tokens)
            for uid, value in self.relevance.items()
            if self.via[uid] != "instruction"
        }
        instructions = [u for u in self.relevance if self.via[u] == "instruction"]
        top = max(final.values(), default=1.0)
        for uid in instructions:  # an instruction that applies comes first
            final[uid] = max(top, 1.0) + recipe.facts.instruction_boost
        order = sorted(final, key=lambda u: (-final[u], u))[
            : recipe.facts.limit + len(instructions)
        ]
        if recipe.facts.cause_weight > 0 and any(WHY.search(q) for q in question.queries):
            order = await self._with_causes(services, tenant, order, final, recipe.facts)
        sources = await services.graph.facts.sources_many(tenant, order)
        return [
            FactHit(
                self.facts[u],
                final[u],
                self.relevance.get(u, 0.0),
                sources[u],
                self.via[u],
                self.cosine.get(u),
            )
            for u in order
        ]

    def _score(
        self,
        uid: str,
        value: float,
        recipe: Recipe,
        subjects: Collection[str],
        q_tokens: Sequence[set[str]],
    ) -> float:
        """One fact's score from its raw relevance `value` (see `rank`)."""
        f = self.facts[uid]
        score = value / (self.scale or 1.0)
        if normalise_text(f.subject) in subjects:
            score *= 1.0 + recipe.facts.subject_boost
        if recipe.rerank.on:
            text = f"{f.text} {self.lent.get(uid, '')}"
            score += recipe.rerank.weight * best_coverage(q_tokens, text)
        if self.via[uid] == "successor":
            score += recipe.facts.current_boost
        elif f.superseded_by is None:
            pass
        elif self.past:
            score += recipe.facts.history_boost
        else:
            score *= recipe.facts.stale_factor
        return score

    async def _with_causes(
        self,
        services: Services,
        tenant: str,
        order: list[str],
        final: dict[str, float],
        facts: FactsConfig,
    ) -> list[str]:
        """`order` with what led to its best decisions and plans, scored below their effect."""
        out = list(order)
        effects = [u for u in order if self.facts[u].kind in _MOTIVATED]
        for uid in effects[:3]:
            causes = await services.graph.facts.causes(tenant, uid)
            for c in causes:
                if c.kind == "episode":  # a turn no fact captured
                    score = final[uid] * facts.cause_weight
                    self.cause_turns[c.uid] = max(self.cause_turns.get(c.uid, 0.0), score)
            for f in await services.graph.facts.get_many(
                tenant, [c.uid for c in causes if c.kind == "fact"]
            ):
                score = final[uid] * facts.cause_weight
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
    question: Question,
    instructions: Awaitable[list[Fact]] | None = None,
) -> FactPool:
    """The facts of the passes' knowledge hits, their successors and the instructions that
    apply, with raw relevance and the episodes to demote (see the module docstring).

    When the question is about the user ("where do I live?"), turns that matched only through
    facts about someone else ("my sister lives in Lyon") are demoted by
    `Facts.other_subject_factor`. `instructions` is the lookup of the applicable standing
    instructions (`applicable_instructions`) when the caller started it already (so that it
    overlaps the searches); else it runs here."""
    facts = recipe.facts
    pool = await _matched(services, tenant, hits, recipe, question)
    if facts.successors and not pool.past:
        await _lend_to_successors(services, tenant, pool, question.cutoff)
    if instructions is not None:  # awaited even when off: it was started
        applicable = await instructions
    elif facts.instructions:
        applicable = await applicable_instructions(
            services, tenant, question.queries, question.cutoff
        )
    else:
        applicable = []
    if facts.instructions:
        for f in applicable:
            pool.facts[f.uid] = f
            pool.relevance[f.uid] = pool.relevance.get(f.uid, 0.0)
            pool.via[f.uid] = "instruction"
    if USER_SUBJECT in question.subjects and facts.other_subject_factor < 1.0:
        await _demote_other_subjects(services, tenant, pool, question.subjects, facts)
    if not pool.past and facts.stale_factor < 1.0:
        await _demote_stale(services, tenant, pool, facts)
    return pool


async def _matched(
    services: Services, tenant: str, hits: Sequence[FactHits], recipe: Recipe, question: Question
) -> FactPool:
    """The pool of the facts the passes hit that were learned by the question's time, each at
    its best pass's relevance."""
    raw: dict[str, float] = {}
    cosine: dict[str, float] = {}
    for h in hits:
        for uid, value in h.relevance(recipe).items():
            raw[uid] = max(raw.get(uid, 0.0), value)
        for uid, value in h.dense.items():
            cosine[uid] = max(cosine.get(uid, value), value)
    pool = FactPool(past=any(PAST.search(q) for q in question.queries))
    found = await services.graph.facts.get_many(tenant, list(raw))
    pool.facts = {f.uid: f for f in found if _learned(f) <= question.cutoff}
    pool.relevance = {u: raw[u] for u in pool.facts}
    pool.cosine = {u: cosine[u] for u in pool.facts if u in cosine}
    pool.via = dict.fromkeys(pool.facts, "search")
    pool.matched = dict(pool.facts)
    return pool


async def _lend_to_successors(
    services: Services, tenant: str, pool: FactPool, cutoff: datetime
) -> None:
    """Let the current successor (learned by `cutoff`) of each superseded fact matched inherit
    its relevance, when that is more than its own."""
    matched = pool.matched
    for old, current in (await _current_of(services, tenant, matched)).items():
        if _learned(current) > cutoff:
            continue
        if pool.relevance.get(current.uid, -1.0) < pool.relevance[old]:
            pool.relevance[current.uid] = pool.relevance[old]
            if old in pool.cosine:
                pool.cosine[current.uid] = pool.cosine[old]
            pool.via[current.uid] = "successor"
            pool.lent[current.uid] = matched[old].text
        pool.facts[current.uid] = current


async def _demote_other_subjects(
    services: Services, tenant: str, pool: FactPool, subjects: Collection[str], facts: FactsConfig
) -> None:
    """Demote the turns that stated only matched facts about someone else than `subjects`."""
    others = [u for u, f in pool.matched.items() if normalise_text(f.subject) not in subjects]
    mine = [u for u, f in pool.facts.items() if normalise_text(f.subject) in subjects]
    sources = await services.graph.facts.sources_many(tenant, others + mine)
    keep = {e for u in mine for e in sources[u]}
    for u in others:
        for e in sources[u]:
            if e not in keep:
                pool.demote[e] = facts.other_subject_factor


async def _demote_stale(
    services: Services, tenant: str, pool: FactPool, facts: FactsConfig
) -> None:
    """Demote the turns that stated only matched facts that were since superseded."""
    stale = [u for u, f in pool.matched.items() if f.superseded_by is not None]
    live = [u for u, f in pool.facts.items() if f.superseded_by is None]
    sources = await services.graph.facts.sources_many(tenant, stale + live)
    keep = {e for u in live for e in sources[u]}
    for u in stale:
        for e in sources[u]:
            if e not in keep:
                pool.demote[e] = min(pool.demote.get(e, 1.0), facts.stale_factor)


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
    current = await services.graph.facts.list(tenant, kinds=[FactKind.INSTRUCTION])
    q_tokens = set(tokenize(request))
    kept = [f for f in current if _learned(f) <= as_utc(now) and f.grounding >= GROUNDING_MIN]
    return sorted(kept, key=lambda f: (not applies(f, q_tokens), -_learned(f).timestamp(), f.uid))


async def applicable_instructions(
    services: Services, tenant: str, queries: Sequence[str], cutoff: datetime
) -> list[Fact]:
    """Current standing instructions whose concepts or value the request touches."""
    current = await services.graph.facts.list(tenant, kinds=[FactKind.INSTRUCTION])
    q_tokens = set().union(*(set(tokenize(q)) for q in queries))
    return [f for f in current if _learned(f) <= cutoff and applies(f, q_tokens)]
