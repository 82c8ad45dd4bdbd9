"""What is true now: for a question about the present, the newest statement of what the best
candidates say takes the place of the best of them (issue 30 item 2, issue 32 item 1;
docs/adr/0152-newest-statement-first.md; off by default, `Rerank.newest`).

A fact that changes is stated again, in other words, later: "I live in Haarlem" in January,
"I found a place in Leiden" in April. Both match "Where do I live?", and the older often
matches better (it was said plainly, or more often). Retrieval's relevance does not know which
is current; the fact layer knows only when its write path linked the two (SUPERSEDES). This
step reads it from time and similarity alone, on the final list:

- **the tense of the question** (`tense`), only when the asker speaks of themselves (a
  first-person pronoun: "where do I live", "where does my sister live"; a question about a named
  person in the third person asks about events that pile up, and the step cost LoCoMo NDCG@10
  0.048 without this gate): neither when it names a time that has ended (a
  window of `memory.text.timeparse` ending by the question's time: what was said then answers,
  and the time boost finds it); past when it asks for what held before
  (`memory.retrieval.facts.PAST`) or its auxiliary or copula is in the past tense ("was",
  "were", "did", "had"); present when none of that holds and it names a window that holds the
  question's time ("these days") or its auxiliary or copula is in the present tense ("is",
  "are", "am", "do", "does", "have", "has", "what's"). The closed class of English tense forms
  of be/do/have, not words of any topic. Else neither.
- **what the best candidates say about the question**: the user's side of each of the
  `Rerank.newest_depth` best candidates (a fact: its text) against the question's embedding
  (`stated_vectors`: a turn's stored vector is read from the index when its user side is one
  derivative, the others are embedded with the question, by the same embedder); a candidate
  is *about the question* when its cosine to the question is at least the mean of those
  cosines (the list's own level, so no constant fitted to one set), and two candidates are *about the same thing* when their cosine to each other is
  at least that mean too.
- **the newest takes the best one's place**: the best-ranked candidate about the question is the
  anchor; of it and the candidates about the question and about the same thing as it, the newest
  (creation time: when it was said) takes the anchor's score, and the others move one place down
  within the group's places (none leaves the list).

For a question about the past the oldest of the group takes the place instead (`Rerank.oldest`);
one neither present nor past, and one about what the agent said, are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from memory.retrieval.candidates import Candidate
from memory.retrieval.facts import PAST
from memory.retrieval.question import Question
from memory.retrieval.recipes import Recipe
from memory.schema import clean_text
from memory.text.chunking import MAX_CHUNKS, split_text
from memory.text.questions import asks_share
from memory.write.episodes import derivative_id

if TYPE_CHECKING:
    from memory.embeddings.embedders import Matrix
    from memory.services import Services

__all__ = ["Tense", "newest_first", "tense"]

Tense = Literal["present", "past"] | None

FIRST_PERSON = re.compile(r"(?i)\b(i|me|my|mine|we|us|our|ours)\b")
"""The asker speaks of themselves: what they said of themselves later replaces what they said
before. A question about someone else in the third person ("What did Caroline paint?") asks
about events that pile up, not about a value that changed."""
PAST_FORM = re.compile(r"(?i)\b(was|were|did|had)\b")
"""A finite past form of be, do or have: the question asks about a time before now."""
PRESENT_FORM = re.compile(
    r"(?i)\b(am|is|are|do|does|have|has)\b"
    r"|\b(?:what|who|where|how|which|that|there|it|i|you|we|they)['\u2019](?:s|m|re)\b"
)
"""A finite present form of be, do or have (contracted after a question word or a pronoun)."""


def tense(question: Question) -> Tense:
    """Whether `question` asks about the present, the past, or neither (module docstring)."""
    text = " ".join(question.queries)
    if not FIRST_PERSON.search(text):
        return None  # about others, in the third person
    if any(w.end <= question.cutoff for w in question.windows):
        return None  # a time that has ended: what was said then answers (`Time.boost`)
    if PAST.search(text) or PAST_FORM.search(text):
        return "past"
    if PRESENT_FORM.search(text) or any(w.contains(question.cutoff) for w in question.windows):
        return "present"
    return None


async def newest_first(
    services: Services,
    tenant: str,
    candidates: list[Candidate],
    question: Question,
    recipe: Recipe,
) -> list[Candidate]:
    """`candidates` (best first) with the newest statement of what the best ones say in the
    place of the best of them for a question about the present (`Rerank.newest`), the oldest
    for one about the past (`Rerank.oldest`); else as they are."""
    when = tense(question)
    on = recipe.rerank.newest if when == "present" else recipe.rerank.oldest
    if when is None or not on or question.about_agent:
        return candidates
    top = [
        (i, text)
        for i, c in enumerate(candidates[: recipe.rerank.newest_depth])
        if (text := said(c))
    ]
    if len(top) < 3:
        return candidates
    asked, stated = await stated_vectors(
        services, tenant, question.queries[0], [(candidates[i], text) for i, text in top]
    )
    days = [candidates[i].created_at.date().toordinal() for i, _ in top]
    states = [asks_share(text) < 1.0 for _, text in top]
    places = group([d if when == "present" else -d for d in days], states, asked, stated)
    if not places:
        return candidates
    return moved(candidates, [top[k][0] for k in places])


async def stated_vectors(
    services: Services, tenant: str, question: str, said_by: Sequence[tuple[Candidate, str]]
) -> tuple[Matrix, Matrix]:
    """The question's embedding, and a unit vector per (candidate, what it states) of
    `said_by`: a turn's, read from the index when its user side is one derivative of the
    splitter whose stored text is `said` (`derivative_id(..., 0)`, role `user`); the others'
    texts embedded with the question, in one call. A fact's point holds its text and concepts
    (`knowledge.rules.vector_text`), and a long user side is several chunks, none of them the
    embedding of the whole side: those are embedded, so the step compares what it compared
    before the index was read."""
    wanted = {
        c.episode_uid: derivative_id(tenant, c.episode_uid, 0)
        for c, text in said_by
        if c.kind == "episode" and len(split_text(text, max_chunks=MAX_CHUNKS // 2)) == 1
    }
    read = await services.vectors.read_vectors(
        "derivatives", tenant, list(wanted.values()), ("text", "role")
    )
    rows: list[Matrix | None] = []
    for c, text in said_by:
        point = read.get(wanted.get(c.episode_uid, "")) if c.kind == "episode" else None
        ok = (
            point is not None
            and point.payload.get("role") == "user"
            and point.payload.get("text") == clean_text(text)
        )
        rows.append(np.asarray(point.dense, np.float32) if ok and point is not None else None)
    missing = [text for (_, text), row in zip(said_by, rows, strict=True) if row is None]
    embedded = await services.embedder.embed_documents([question, *missing])
    filled = iter(embedded[1:])
    stated = np.stack([row if row is not None else next(filled) for row in rows])
    return embedded[0], stated


def said(candidate: Candidate) -> str:
    """The words a candidate states: a fact's text, an episode's user side (blank: none)."""
    if candidate.kind == "fact":
        return candidate.content.strip()
    user, _, _ = candidate.content.removeprefix("User: ").partition("\nAgent: ")
    return user.strip()  # `memory.schema.episode_content` undone


def group(
    days: Sequence[int], states: Sequence[bool], question: Matrix, texts: Matrix
) -> list[int]:
    """The places (indices into `texts`, best first) of the anchor's group, the one of the
    latest of `days` that `states` something first (the best-ranked of that day; a text that
    only asks states nothing), then the others in their order; [] when the anchor is that one
    or no group forms. `question` and `texts` are unit vectors."""
    to_question = texts @ question
    level = float(to_question.mean())

    about = [k for k in range(len(texts)) if to_question[k] >= level]
    if not about:
        return []
    anchor = about[0]
    near = max(level, float(to_question[anchor]))
    members = [k for k in about if float(texts[k] @ texts[anchor]) >= near]
    stating = [k for k in members if states[k]]
    if not stating:
        return []
    first = max(stating, key=lambda k: (days[k], -k))
    if first == anchor:
        return []
    return [first, *(k for k in members if k != first)]


def moved(candidates: list[Candidate], order: list[int]) -> list[Candidate]:
    """`candidates` with the members at `order` (indices, the new order) taking the group's
    places best first, each with the score (and its sides scaled alike) of the place it takes;
    the first names the one whose place it took (`Candidate.replaces`)."""
    places = sorted(order)
    scores = [candidates[p].score for p in places]
    candidates[order[0]].replaces = candidates[places[0]].uid
    out = list(candidates)
    for place, member, score in zip(places, order, scores, strict=True):
        c = candidates[member]
        if c.score > 0:
            c.sides = {s: v * score / c.score for s, v in c.sides.items()}
        c.score = score
        out[place] = c
    return out
