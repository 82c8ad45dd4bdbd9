"""Concepts and narrative loops: the daily sleep level's clustering
(docs/adr/0084-what-a-concept-is.md, 0085 and 0086).

A **concept** is a group of turns, said on at least `MIN_DAYS` distinct UTC days, that share a
topic or a name and mean nearly the same thing, with the current facts those turns state. It is
rebuilt whole at each daily run from the tenant's turns (archived ones included: they are kept
in the graph), offline and deterministically:

1. each turn's terms are its topic slugs and entity keys (`GraphStore.episodes.terms`); a term
   carried by more than `max(COMMON_MIN, COMMON_SHARE x turns)` turns is too common to say what
   two turns share and is ignored;
2. two turns on different days are linked when they share a term and the cosine of their
   embeddings (the user's side of the turn) is at least `LINK_COSINE`; the linked groups are
   the connected components;
3. a group keeps the turns within `CORE_COSINE` of its centroid (a chain of links can drift),
   and becomes a concept if those turns still span `MIN_DAYS` days and share at least
   `MIN_TERMS` terms (each carried by two of them or more);
4. its label is its `LABEL_TERMS` most shared terms; its description says when it came up and
   quotes its most central turn.

A **narrative loop** is a concept that keeps coming up on one weekday: on that weekday in at
least `LOOP_WEEKS` distinct ISO weeks, and on that weekday for at least `LOOP_SHARE` of its
days ("this comes up on Mondays"). It is stored on the concept (`loop`, `loop_count`), with
the emotion that recurs with it when one does (`loop_emotion`, `loop_emotion_of`: an emotion
word of the salience appraisal named in the concept's turns on that weekday in at least
`LOOP_WEEKS` of the loop's weeks and in at least `LOOP_SHARE` of them: "stressed about work,
mostly on Mondays").

Identity: a concept's uid is uuid5(tenant, "concept", its earliest turn's uid), so re-running
the same day gives the same concepts. Crash safety: every concept is written whole (node and
edges at once); stale ones are deleted after all new ones are written; a run killed between two
writes is finished by the next. `release_episode` is the hook forgetting and deletion call
before an episode goes: the concepts it belonged to lose it (and are dissolved when the rest
spans fewer than `MIN_DAYS` days); its day's diary entry and the chapter holding that day are
deleted, to be rewritten from the turns that remain.

With an LLM, `tasks.concept_naming` names and describes each new or changed concept (one call
each, validated, the offline label as its fallback); a concept `release_episode` changed is
named offline again, so nothing of a removed turn stays in its name, and the LLM renames it at
the next daily run. No prompts here.
"""

from __future__ import annotations

import calendar
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

import numpy as np

from memory.schema import Concept, Episode, EpisodeStatus, as_utc, stable_uid
from memory.sleep.chapters import drop_chapters_of
from memory.sleep.salience import emotion_words

if TYPE_CHECKING:
    from memory.services import Services

MIN_DAYS = 3
"""A concept's turns were said on at least this many distinct UTC days."""
LINK_COSINE = 0.45
"""Two turns on different days that share a term are linked at this cosine or above."""
CORE_COSINE = 0.35
"""A turn stays in its group only this close (cosine) to the group's centroid."""
COMMON_MIN = 10
COMMON_SHARE = 0.25
"""A term carried by more than max(COMMON_MIN, COMMON_SHARE x the tenant's turns) turns is
ignored (a word in one turn of four says nothing about what two turns share)."""
MIN_TERMS = 2
"""A concept's turns share at least this many terms (each carried by two of its turns or more):
one shared word is a habit of speech ("haha", "cool") or the weather as often as a subject."""
LABEL_TERMS = 3
"""How many terms name a concept."""
LOOP_WEEKS = 3
LOOP_SHARE = 0.5
"""A loop: the concept came up on one weekday in at least `LOOP_WEEKS` ISO weeks, and that
weekday holds at least `LOOP_SHARE` of its days."""
QUOTE = 140
"""Characters of the central turn quoted in a description."""

_SCAN = 1_000_000

Namer = Callable[[Concept, Sequence[str]], Awaitable[tuple[str, str]]]
"""name(the concept as named offline, its turns' texts in time order) -> (label, description)."""


@dataclass(slots=True)
class Built:
    """What one concept pass did."""

    concepts: int = 0
    written: int = 0
    dissolved: int = 0
    loops: int = 0

    def note(self) -> str:
        """One line for the consolidation report."""
        return (
            f"concepts: {self.concepts} ({self.written} written, {self.dissolved} dissolved, "
            f"{self.loops} narrative loops)"
        )


def day_of(episode: Episode) -> date:
    """The UTC day a turn was said on."""
    return as_utc(episode.created_at).date()


def concept_uid(tenant: str, seed_uid: str) -> str:
    """The uid of the concept whose earliest turn is `seed_uid`."""
    return stable_uid(tenant, "concept", seed_uid)


def narrative_loop(days: Sequence[date]) -> tuple[str, int]:
    """(weekday name, distinct weeks) when the days recur on one weekday, else ("", 0)."""
    distinct = sorted(set(days))
    if not distinct:
        return "", 0
    weeks: dict[int, set[tuple[int, int]]] = defaultdict(set)
    counts: Counter[int] = Counter()
    for d in distinct:
        iso = d.isocalendar()
        weeks[d.weekday()].add((iso.year, iso.week))
        counts[d.weekday()] += 1
    weekday = max(weeks, key=lambda w: (len(weeks[w]), -w))
    n = len(weeks[weekday])
    if n >= LOOP_WEEKS and counts[weekday] >= LOOP_SHARE * len(distinct):
        return calendar.day_name[weekday], n
    return "", 0


def loop_emotion_of(episodes: Sequence[Episode], loop: str) -> str:
    """The emotion word that recurs with a loop on `loop` (a weekday name), else ""."""
    if not loop:
        return ""
    weeks: dict[tuple[int, int], set[str]] = defaultdict(set)
    for e in episodes:
        day = day_of(e)
        if calendar.day_name[day.weekday()] == loop:
            iso = day.isocalendar()
            weeks[(iso.year, iso.week)] |= emotion_words(e.user_text)
    counts = Counter(name for felt in weeks.values() for name in felt)
    if not counts:
        return ""
    name = min(counts, key=lambda n: (-counts[n], n))
    recurs = counts[name] >= LOOP_WEEKS and counts[name] >= LOOP_SHARE * len(weeks)
    return name if recurs else ""


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _union(parent: list[int], a: int, b: int) -> None:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)


def _groups(
    episodes: Sequence[Episode], terms: Sequence[Sequence[str]], vectors: np.ndarray
) -> list[list[int]]:
    """Connected components of the links (shared term, different days, cosine), trimmed."""
    carriers: dict[str, list[int]] = defaultdict(list)
    for i, ts in enumerate(terms):
        for t in ts:
            carriers[t].append(i)
    parent = list(range(len(episodes)))
    days = [day_of(e) for e in episodes]
    for term in sorted(carriers):
        idx = carriers[term]
        if len(idx) < 2:
            continue
        sims = vectors[idx] @ vectors[idx].T
        for a, b in zip(*np.nonzero(sims >= LINK_COSINE), strict=True):
            i, j = idx[int(a)], idx[int(b)]
            if i < j and days[i] != days[j]:
                _union(parent, i, j)
    members: dict[int, list[int]] = defaultdict(list)
    for i in range(len(episodes)):
        members[_find(parent, i)].append(i)
    out: list[list[int]] = []
    for group in members.values():
        if len({days[i] for i in group}) < MIN_DAYS:
            continue
        centroid = vectors[group].mean(axis=0)
        centroid /= float(np.linalg.norm(centroid)) or 1.0
        core = [i for i in group if float(vectors[i] @ centroid) >= CORE_COSINE]
        shared = Counter(t for i in core for t in terms[i])
        if (
            len({days[i] for i in core}) >= MIN_DAYS
            and sum(1 for n in shared.values() if n >= 2) >= MIN_TERMS
        ):
            out.append(core)
    return out


def describe(
    tenant: str,
    episodes: Sequence[Episode],
    terms: Sequence[Sequence[str]],
    central: Episode,
    now: datetime,
) -> Concept:
    """The concept of these turns (sorted by time), named offline."""
    ordered = sorted(episodes, key=lambda e: (as_utc(e.created_at), e.uid))
    shared = Counter(t for ts in terms for t in set(ts))
    ranked = sorted(shared, key=lambda t: (-shared[t], t))
    days = [day_of(e) for e in ordered]
    loop, loop_count = narrative_loop(days)
    feeling = loop_emotion_of(ordered, loop)
    first, last = as_utc(ordered[0].created_at), as_utc(ordered[-1].created_at)
    distinct = len(set(days))
    quote = " ".join(central.user_text.split())[:QUOTE]
    description = (
        f"Came up on {distinct} days between {first:%d %b %Y} and {last:%d %b %Y}"
        + (f", mostly on {loop}s" if loop else "")
        + (f" (feeling {feeling})" if feeling else "")
        + f': "{quote}"'
    )
    return Concept(
        uid=concept_uid(tenant, ordered[0].uid),
        tenant=tenant,
        label=", ".join(t.replace("-", " ") for t in ranked[:LABEL_TERMS]) or quote[:40],
        description=description,
        terms=tuple(ranked),
        episode_count=len(ordered),
        day_count=distinct,
        first_seen=first,
        last_seen=last,
        loop=loop,
        loop_count=loop_count,
        loop_emotion=feeling,
        updated_at=as_utc(now),
    )


async def _facts_by_episode(services: Services, tenant: str) -> dict[str, list[str]]:
    facts = await services.graph.facts.list(tenant)  # current only
    sources = await services.graph.facts.sources_many(tenant, [f.uid for f in facts])
    out: dict[str, list[str]] = defaultdict(list)
    for fact_uid, episode_uids in sources.items():
        for uid in episode_uids:
            out[uid].append(fact_uid)
    return out


async def _turns(services: Services, tenant: str) -> list[Episode]:
    statuses = [EpisodeStatus.INDEXED, EpisodeStatus.PROCESSED]
    found = await services.graph.episodes.list_by_status(tenant, statuses, limit=_SCAN)
    return sorted(found, key=lambda e: (as_utc(e.created_at), e.uid))


async def build_concepts(
    services: Services, tenant: str, now: datetime, name: Namer | None = None
) -> Built:
    """Rebuild the tenant's concepts and loops from its turns (idempotent; see the module).

    With `name` (the LLM), a concept that is new, changed, or still named offline is named by
    it, one call each; an unchanged concept keeps its stored name.
    """
    graph = services.graph
    turns = await _turns(services, tenant)
    all_terms = await graph.episodes.terms(tenant, [e.uid for e in turns])
    carried = Counter(t for ts in all_terms.values() for t in ts)
    common = max(COMMON_MIN, COMMON_SHARE * len(turns))
    useful = {t for t, n in carried.items() if n >= 2 and n <= common}
    # Only a turn sharing a useful term with a turn of another day can be linked: embed those.
    days_of_term: dict[str, set[date]] = defaultdict(set)
    for e in turns:
        for t in all_terms.get(e.uid, []):
            if t in useful:
                days_of_term[t].add(day_of(e))
    linkable = {t for t, ds in days_of_term.items() if len(ds) >= 2}
    candidates = [
        e for e in turns if e.user_text.strip() and linkable & set(all_terms.get(e.uid, []))
    ]
    terms = [sorted(linkable & set(all_terms.get(e.uid, []))) for e in candidates]
    vectors = await services.embedder.embed_documents([e.user_text for e in candidates])
    facts_of = await _facts_by_episode(services, tenant)
    built = Built()
    wanted: set[str] = set()
    for group in _groups(candidates, terms, np.asarray(vectors)):
        members = [candidates[i] for i in group]
        centroid = np.asarray(vectors)[group].mean(axis=0)
        central = members[int(np.argmax(np.asarray(vectors)[group] @ centroid))]
        concept = describe(tenant, members, [terms[i] for i in group], central, now)
        wanted.add(concept.uid)
        built.loops += int(bool(concept.loop))
        existing = await graph.concepts.get(tenant, concept.uid)
        episode_uids = sorted(e.uid for e in members)
        fact_uids = sorted({f for e in members for f in facts_of.get(e.uid, [])})
        if existing is not None and _same(existing, concept):
            old = await graph.concepts.members(tenant, concept.uid)
            unchanged = old.episodes == episode_uids and old.facts == fact_uids
            if unchanged and (name is None or existing.label != concept.label):
                continue  # not rewritten, so a re-run writes nothing
        if name is not None:
            ordered = sorted(members, key=lambda e: (as_utc(e.created_at), e.uid))
            label, description = await name(concept, [e.user_text for e in ordered])
            concept = concept.model_copy(update={"label": label, "description": description})
        await graph.concepts.put(concept, episode_uids, fact_uids)
        built.written += 1
    for stale in await graph.concepts.list(tenant):
        if stale.uid not in wanted:
            await graph.concepts.delete(tenant, stale.uid)
            built.dissolved += 1
    built.concepts = len(wanted)
    return built


def _same(stored: Concept, offline: Concept) -> bool:
    """The same turns' summary (its name and time of writing aside: the LLM may have named it)."""
    keep = {"label": offline.label, "description": offline.description}
    return stored.model_copy(update=keep | {"updated_at": offline.updated_at}) == offline


async def release_episode(services: Services, tenant: str, episode_uid: str) -> None:
    """Before an episode is forgotten or deleted: drop it from its concepts (dissolving those
    left under `MIN_DAYS` days), delete its day's diary entry and the chapter holding its day
    (`memory.sleep.chapters`). Idempotent."""
    graph = services.graph
    going = await graph.episodes.get(tenant, episode_uid)
    if going is not None:
        await drop_chapters_of(graph, tenant, day_of(going))
    groups = await graph.episodes.groups(tenant, episode_uid)
    for entry_uid in groups.diary:
        await graph.diary.delete(tenant, entry_uid)
    for uid in groups.concepts:
        concept = await graph.concepts.get(tenant, uid)
        if concept is None:
            continue
        members = await graph.concepts.members(tenant, uid)
        rest = sorted(
            await graph.episodes.get_many(
                tenant, [u for u in members.episodes if u != episode_uid]
            ),
            key=lambda e: (as_utc(e.created_at), e.uid),
        )
        if len({day_of(e) for e in rest}) < MIN_DAYS:
            await graph.concepts.delete(tenant, uid)
            continue
        terms = await graph.episodes.terms(tenant, [e.uid for e in rest])
        kept = set(concept.terms)
        # Without embeddings here the central turn is unknown: the earliest remaining one is
        # quoted until the next daily run rebuilds the concept.
        redone = describe(
            tenant,
            rest,
            [[t for t in terms.get(e.uid, []) if t in kept] for e in rest],
            rest[0],
            concept.updated_at,
        )
        await graph.concepts.put(
            redone.model_copy(update={"uid": uid}), [e.uid for e in rest], members.facts
        )


__all__ = [
    "MIN_DAYS",
    "MIN_TERMS",
    "Built",
    "Namer",
    "build_concepts",
    "concept_uid",
    "day_of",
    "describe",
    "loop_emotion_of",
    "narrative_loop",
    "release_episode",
]
