"""Knowledge that stays true: turning an episode's propositions into facts with history.

`integrate` takes what one episode states (`Proposition`s, from the LLM's extraction or the
offline heuristic) and, for each:

1. **dedup within the batch**: of two propositions with cosine > `BATCH_DUP` the one with the
   higher confidence stays;
2. **identity**: the fact uid is uuid5(tenant, normalised text), so re-processing an episode
   writes the same facts; a fact already stored is cited (STATES edge) rather than duplicated;
3. **candidates**: the tenant's current facts with cosine >= `CANDIDATE_MIN` (top
   `CANDIDATES`), plus the current facts with the same subject and attribute (an index read);
4. **supersession** (bi-temporal, nothing deleted): a candidate about the same subject that the
   proposition replaces is closed (valid_to = the new fact's valid_from, superseded_by = it).
   "Replaces" is the LLM's confirmation when there is one (`Proposition.supersedes`), else the
   same-subject-same-attribute rule (`conflicts`): a single-valued attribute with another value,
   or an explicit replacement ("switched from X", "instead of X", "quit X"). A proposition
   that ends an attribute ("I quit my job") closes it with itself as the successor. A
   standing instruction's attribute is only its scope (`instruction:code`), which holds many
   instructions at once: offline, a new one replaces or revokes an old one of its scope when
   the two are about the same thing (cosine >= `SAME_INSTRUCTION`, whatever their values), or
   when it names what it replaces ("instead of tabs"), and never otherwise; "always add type
   hints" leaves "always use tabs for indentation" current. A proposition older than the current fact it conflicts with is
   stored already closed;
5. **duplicates**: otherwise a candidate about the same subject with cosine > `STORE_DUP` and
   the same attribute value is cited instead of storing a near copy;
6. **subjects and causes**: a fact about a named person gets an ABOUT edge to that person's
   entity (and a relationship between two named people, "Ben's sister is Carla", a RELATED_TO
   edge between them, the attribute as its relation); a decision, plan or goal gets LED_TO edges from what motivated it: the LLM's
   `because`, else what `memory.knowledge.causes` finds: earlier same-subject facts and turns no
   fact captured that share a content word and are similar enough;
7. **vectors**: stored facts are embedded (text + concepts) into the `knowledge` collection.

The rules themselves (ids, grounding, the conflict rule) are `memory.knowledge.rules`. No prompts
and no LangGraph here; the stage that calls it is `nodes.knowledge`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memory.knowledge.causes import MAX_CAUSES, motivating_turns, motivations
from memory.knowledge.precision import precision_of
from memory.knowledge.rules import (
    Proposition,
    conflicts,
    fact_uid,
    mentions,
    point_id,
    same_value,
    vector_text,
)
from memory.schema import (
    USER_SUBJECT,
    EntityType,
    Episode,
    Fact,
    FactKind,
    as_utc,
    normalise_text,
)
from memory.stores.base import VectorPoint
from memory.text.sparse import encode_document, tokenize

if TYPE_CHECKING:
    from memory.services import Services

log = logging.getLogger(__name__)

BATCH_DUP = 0.82
"""Two propositions of one episode closer than this are one fact (the more confident stays)."""
STORE_DUP = 0.78
"""A proposition closer than this to a stored fact about the same subject cites that fact."""
CANDIDATE_MIN = 0.6
"""Stored facts at least this similar are supersession candidates ..."""
CANDIDATES = 5
"""... at most this many of them."""
SAME_INSTRUCTION = 0.72
"""Offline, a standing instruction replaces or revokes a current one of its scope only when
their texts are at least this similar (and the scope rule says so), or when it names what it
replaces. Set on hand-written pairs of the configured embedder (docs/adr/0143): instructions
about the same thing ("keep answers short" / "give me detailed answers", "tabs" / "four
spaces for indentation") scored 0.66-0.95, different things of one scope ("use tabs for
indentation" / "add type hints to Python code") 0.32-0.69."""
NAMED_SLOTS = frozenset({"instruction:name"})
"""Instruction scopes that are one slot (how to address the user): the scope rule alone."""


@dataclass(slots=True)
class Outcome:
    """What `integrate` did with an episode's propositions."""

    stored: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    """Uids of the facts closed by this episode."""
    dropped: int = 0
    """Propositions merged into a near duplicate of the same episode."""
    causes: int = 0

    def summary(self) -> dict[str, object]:
        """JSON-friendly counts and uids for the bookkeeping state."""
        return {
            "stored": self.stored,
            "cited": self.cited,
            "superseded": self.superseded,
            "dropped": self.dropped,
            "causes": self.causes,
        }


async def integrate(
    services: Services,
    episode: Episode,
    propositions: Sequence[Proposition],
    *,
    shown: Collection[str] | None = None,
) -> Outcome:
    """Store the episode's propositions as facts: dedup, cite, supersede, link, embed.

    `shown`: the uids of the known facts the LLM was shown (None: offline). A candidate the model
    saw is superseded only when it says so (`Proposition.supersedes`); one it did not see falls
    to the offline rule. Idempotent: running it twice leaves the stores as running it once.
    """
    outcome = Outcome()
    props = [p for p in propositions if p.text.strip()]
    if not props:
        return outcome
    vectors = await services.embedder.embed_documents([vector_text(p) for p in props])
    keep = _batch_dedup(props, vectors)
    outcome.dropped = len(props) - len(keep)
    to_index: list[tuple[Fact, list[float]]] = []
    for i in keep:
        p, vec = props[i], vectors[i]
        stored = await _integrate_one(services, episode, p, vec, shown, outcome)
        if stored is not None:  # new, or stated by this very episode before (a re-run)
            to_index.append((stored, vec.tolist()))
            await _link(services, episode, stored, p, vec, shown is not None, outcome)
    if to_index:
        await services.vectors.upsert("knowledge", [_point(f, v, episode.uid) for f, v in to_index])
    return outcome


def _batch_dedup(props: Sequence[Proposition], vectors: np.ndarray) -> list[int]:
    """Indexes of the propositions to keep: of near-duplicates (same subject, and the same
    attribute when both have one), the more confident (then the first)."""
    sims = vectors @ vectors.T
    order = sorted(range(len(props)), key=lambda i: (-props[i].confidence, i))
    kept: list[int] = []
    for i in order:
        if all(sims[i, j] <= BATCH_DUP or not _same_claim(props[i], props[j]) for j in kept):
            kept.append(i)
    return sorted(kept)


def _same_claim(a: Proposition, b: Proposition) -> bool:
    if normalise_text(a.subject) != normalise_text(b.subject):
        return False
    return not a.attribute or not b.attribute or a.attribute == b.attribute


async def _integrate_one(
    services: Services,
    episode: Episode,
    p: Proposition,
    vec: np.ndarray,
    shown: Collection[str] | None,
    outcome: Outcome,
) -> Fact | None:
    """Store, cite or supersede for one proposition; the fact to index and link (None: a fact
    of another episode was cited). A fact this episode stored before (a re-run, perhaps after a
    crash between the graph and the vector writes) comes back so that its vector and edges are
    written again; they are idempotent."""
    graph, tenant = services.graph, episode.tenant
    uid = fact_uid(tenant, p.text, p.attribute)
    existing = await graph.facts.get(tenant, uid)
    if existing is not None:
        sources = await graph.facts.sources(tenant, uid)
        if episode.uid in sources and existing.learned_at == as_utc(episode.created_at):
            return existing
        if existing.superseded_by is None or episode.uid in sources:
            await graph.facts.cite(tenant, uid, episode.uid)
            outcome.cited.append(uid)
            return None
        uid = fact_uid(tenant, p.text, p.attribute, episode.uid)  # an old value said again
        if await graph.facts.get(tenant, uid) is not None:
            await graph.facts.cite(tenant, uid, episode.uid)
            outcome.cited.append(uid)
            return None
    candidates = await _candidates(services, tenant, p, vec)
    seen = shown or ()
    replaced = [c for c, sim in candidates if _replaces(p, c, c.uid in seen, sim)]
    if not replaced and not p.ends:
        for c, sim in candidates:
            if sim > STORE_DUP and _about_same(p, c) and same_value(p, c):
                await graph.facts.cite(tenant, c.uid, episode.uid)
                outcome.cited.append(c.uid)
                return None
    fact = _fact_of(p, uid, episode, replaced)
    newer = [c for c in replaced if as_utc(c.valid_from) > fact.valid_from]
    if newer:  # told late: it held until the current fact began
        successor = min(newer, key=lambda c: c.valid_from)
        fact = fact.model_copy(
            update={"valid_to": successor.valid_from, "superseded_by": successor.uid}
        )
    stored = await graph.facts.add(fact, episode.uid)
    for old in replaced:
        if old not in newer:
            await graph.facts.supersede(tenant, old.uid, stored, stored.valid_from)
            outcome.superseded.append(old.uid)
    outcome.stored.append(stored.uid)
    return stored


def _replaces(p: Proposition, old: Fact, model_saw_it: bool, similarity: float) -> bool:
    """The model's confirmation for a candidate it was shown, else the offline rule (for a
    standing instruction, only one about the same thing: `SAME_INSTRUCTION`)."""
    if model_saw_it:
        return old.uid in p.supersedes and _about_same(p, old)
    if not _scoped_instruction(p) or p.replaces:
        return conflicts(p, old)
    same_scope = _about_same(p, old) and p.attribute == old.attribute
    return same_scope and (similarity >= SAME_INSTRUCTION or same_frame(p.text, old.text))


_FRAME = frozenset(tokenize("standing instruction user always never now please use"))
"""The words any standing instruction may hold ("Standing instruction from the user: always
use ..."), which say nothing about what it is about."""


def same_frame(new: str, old: str) -> bool:
    """Two instructions that say the same thing with another value ("show code examples in
    TypeScript" / "use Python for code examples"): at least two content words in common, and
    those at least half of the longer one's. MiniLM's cosine of such a pair runs 0.6-0.7, under
    `SAME_INSTRUCTION`, because the value is the words that differ (docs/adr/0143)."""
    a, b = set(tokenize(new)) - _FRAME, set(tokenize(old)) - _FRAME
    shared = len(a & b)
    return shared >= 2 and 2 * shared >= max(len(a), len(b))


def _scoped_instruction(p: Proposition) -> bool:
    """A standing instruction whose attribute is a scope that holds many instructions (its
    value, the scope's salient word, says little: "tabs" and "four spaces for indentation in
    my code" are both `code`)."""
    return p.kind is FactKind.INSTRUCTION and bool(p.attribute) and p.attribute not in NAMED_SLOTS


def _about_same(p: Proposition, fact: Fact) -> bool:
    return normalise_text(p.subject) == normalise_text(fact.subject)


def _fact_of(p: Proposition, uid: str, episode: Episode, replaced: Sequence[Fact]) -> Fact:
    said = as_utc(episode.created_at)
    valid_from = as_utc(p.valid_from) if p.valid_from is not None else said
    attribute = p.attribute
    if not attribute and replaced:  # "sold the Golf": the attribute of what it replaces
        attribute = replaced[0].attribute
    return Fact(
        uid=uid,
        tenant=episode.tenant,
        text=p.text,
        confidence=p.confidence,
        valid_from=min(valid_from, said),
        kind=p.kind,
        subject=p.subject,
        attribute=attribute,
        value=p.value,
        learned_at=said,
        grounding=p.grounding,
        concepts=tuple(p.concepts),
        precision=precision_of(p.kind, attribute, p.text, episode.user_text, said),
    )


async def _candidates(
    services: Services, tenant: str, p: Proposition, vec: np.ndarray
) -> list[tuple[Fact, float]]:
    """Current facts that may conflict with or duplicate `p`, with their cosine to it."""
    hits = await services.vectors.search(
        "knowledge", tenant, dense=vec.tolist(), limit=CANDIDATES, score_threshold=CANDIDATE_MIN
    )
    sims = {str(h.payload.get("fact_uid", "")): h.score for h in hits}
    same: list[Fact] = []
    if p.attribute:
        same = await services.graph.facts.list(tenant, subject=p.subject, attribute=p.attribute)
    elif p.replaces:
        same = await services.graph.facts.list(tenant, subject=p.subject)
        same = [f for f in same if mentions(f, p.replaces)]
    facts = await services.graph.facts.get_many(tenant, list(sims))
    by_uid = {f.uid: f for f in [*facts, *same] if f.superseded_by is None}
    unscored = [f for u, f in by_uid.items() if u not in sims and f.kind is FactKind.INSTRUCTION]
    if unscored and p.kind is FactKind.INSTRUCTION:  # same scope, outside the vector hits
        vectors = await services.embedder.embed_documents([vector_text(f) for f in unscored])
        sims |= {f.uid: float(v @ vec) for f, v in zip(unscored, vectors, strict=True)}
    return [(f, sims.get(u, 0.0)) for u, f in by_uid.items()]


async def _link(
    services: Services,
    episode: Episode,
    fact: Fact,
    p: Proposition,
    vec: np.ndarray,
    confirmed_by_llm: bool,
    outcome: Outcome,
) -> None:
    """ABOUT edges to named subjects, LED_TO edges from what motivated a decision or plan."""
    graph, tenant = services.graph, episode.tenant
    names = [fact.subject] if _is_entity_name(fact.subject) else []
    if fact.kind is FactKind.RELATIONSHIP and _is_entity_name(fact.value):
        names.append(fact.value)
    for name in names:
        await graph.entities.upsert(tenant, name, EntityType.PERSON)
        await graph.facts.link_subject(tenant, fact.uid, name)
    if len(names) == 2:  # "Ben's sister is Carla": Ben RELATED_TO Carla, as "sister"
        await graph.entities.relate(tenant, names[0], names[1], fact.attribute or fact.kind.value)
    if fact.kind not in (FactKind.DECISION, FactKind.PLAN, FactKind.GOAL):
        return
    causes = list(p.because) if confirmed_by_llm else await motivations(services, fact, vec)
    if not confirmed_by_llm and len(causes) < MAX_CAUSES:
        causes += await motivating_turns(services, episode, fact, vec, causes)
    for cause in causes[:MAX_CAUSES]:
        outcome.causes += await graph.facts.link_cause(tenant, fact.uid, cause)


def _is_entity_name(name: str) -> bool:
    return bool(name) and name != USER_SUBJECT and "'" not in name and name[:1].isupper()


def _point(fact: Fact, dense: list[float], episode_uid: str) -> VectorPoint:
    """A fact's point; `episode_uid` is its first source (the vector index requires one)."""
    text = vector_text(fact)
    return VectorPoint(
        id=point_id(fact.tenant, fact.uid),
        dense=dense,
        sparse=encode_document(text),
        payload={
            "tenant": fact.tenant,
            "episode_uid": episode_uid,
            "text": fact.text,
            "fact_uid": fact.uid,
            "kind": fact.kind.value,
            "subject": fact.subject,
            "created_at": as_utc(fact.learned_at or fact.valid_from).isoformat(),
            "archived": False,
        },
    )


async def index_facts(
    services: Services, tenant: str, facts: Sequence[Fact], *, exclude: Collection[str] = ()
) -> int:
    """(Re-)embed and upsert facts into the `knowledge` collection (e.g. after `mneme reindex`);
    a point names the fact's first source not in `exclude` (an episode being forgotten)."""
    if not facts:
        return 0
    vectors = await services.embedder.embed_documents([vector_text(f) for f in facts])
    sources = await services.graph.facts.sources_many(tenant, [f.uid for f in facts])
    points = [
        _point(
            fact,
            vec.tolist(),
            ([s for s in sources.get(fact.uid, []) if s not in exclude] or [fact.uid])[0],
        )
        for fact, vec in zip(facts, vectors, strict=True)
    ]
    await services.vectors.upsert("knowledge", points)
    return len(points)
