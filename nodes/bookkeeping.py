"""Bookkeeping of one episode: extract -> index (embed + upsert) -> topics and entities -> processed.

Every step is idempotent (deterministic point ids, MERGE-style graph writes), so running an
episode twice leaves the stores as running it once, and a crash at any point is finished by the
sweep. `process_episode` runs the steps in order (the background queue and the sweep use it);
`graph/bookkeeping.py` wires the same steps as a LangGraph graph.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from memory.contextual import contextualise, speaker_label
from memory.episodes import index_episode
from memory.schema import EntityType, Episode, EpisodeStatus
from memory.services import Services
from memory.stores.base import NotFound
from nodes.extract import Extraction, derivatives_from, extract, topic_slugs
from nodes.llm import Usage
from nodes.provenance import belief_provenance
from nodes.reflection import reflect

log = logging.getLogger("mneme.bookkeeping")


@dataclass(slots=True)
class BookkeepingResult:
    """What bookkeeping did to one episode."""

    uid: str
    status: str
    derivatives: int = 0
    questions: int = 0
    topics: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    fallback: bool = False
    beliefs: list[dict[str, Any]] = field(default_factory=list)
    """Beliefs the episode moved (topic, edge kind, valence and confidence before/after)."""
    reflected: bool = False
    usage: dict[str, Any] = field(default_factory=dict)


async def load(services: Services, tenant: str, uid: str) -> Episode:
    """The episode to process; `NotFound` names it if it does not exist."""
    episode = await services.graph.get_episode(tenant, uid)
    if episode is None:
        raise NotFound(f"episode {uid!r} of tenant {tenant!r} does not exist")
    return episode


async def index(
    services: Services, episode: Episode, extraction: Extraction, *, fallback: bool
) -> tuple[int, int]:
    """Embed and upsert the episode's derivatives and questions; (derivatives, questions).

    Chunks (LLM or splitter) get their context: third-person paraphrases as prospective
    questions and a context derivative with the previous turns (`memory.contextual`).
    """
    base = derivatives_from(episode, extraction, fallback=fallback)
    derivatives = (await contextualise(services.graph, episode, base)).derivatives
    n = await index_episode(services, episode.tenant, episode.uid, derivatives)
    questions = sum(len(d.questions) for d in derivatives)
    return n, questions


async def link(
    services: Services, episode: Episode, extraction: Extraction
) -> tuple[list[str], list[str]]:
    """Write topics and entities into the graph and mark the episode processed."""
    graph, tenant = services.graph, episode.tenant
    slugs = topic_slugs(extraction)
    if slugs:
        await graph.link_topics(tenant, episode.uid, slugs)
    names: list[str] = []
    speaker, _ = speaker_label(episode.user_text)  # "Name: text" transcripts: the speaker
    if speaker:
        names.append((await graph.upsert_entity(tenant, speaker, EntityType.PERSON)).name)
    for entity in extraction.entities:
        stored = await graph.upsert_entity(tenant, entity.name.strip(), entity.type)
        names.append(stored.name)
    if names:
        await graph.link_mentions(tenant, episode.uid, names)
    await graph.set_status(tenant, episode.uid, EpisodeStatus.PROCESSED)
    return slugs, names


async def beliefs(
    services: Services, episode: Episode, usage: Usage, model: str | None = None
) -> tuple[list[dict[str, Any]], bool]:
    """Belief provenance when the stored ESS recommends it, then reflection if it became due.

    Provenance is idempotent per (episode, belief); a failed reflection is logged and runs again
    at the next trigger, it never fails the episode.
    """
    result = await belief_provenance(services, episode, usage=usage, model=model)
    reflected = False
    if result.reflection_due:
        try:
            reflected = (await reflect(services, episode.tenant, usage=usage, model=model)).ran
        except Exception:
            log.warning(
                "reflection for %s failed; it runs at the next trigger",
                episode.tenant,
                exc_info=True,
            )
    return list(result.summary()), reflected


async def process_episode(
    services: Services, tenant: str, uid: str, *, model: str | None = None
) -> BookkeepingResult:
    """Run every bookkeeping step for one episode (a processed episode is left alone)."""
    episode = await load(services, tenant, uid)
    if episode.status == EpisodeStatus.PROCESSED:
        return BookkeepingResult(uid=uid, status=episode.status.value)
    usage = Usage()
    extraction, fallback = await extract(episode, usage, model)
    n, questions = await index(services, episode, extraction, fallback=fallback)
    moved, reflected = await beliefs(services, episode, usage, model)
    slugs, names = await link(services, episode, extraction)
    log.debug("bookkeeping %s: %d derivatives, %d questions", uid, n, questions)
    return BookkeepingResult(
        uid=uid,
        status=EpisodeStatus.PROCESSED.value,
        derivatives=n,
        questions=questions,
        topics=slugs,
        entities=names,
        fallback=fallback,
        beliefs=moved,
        reflected=reflected,
        usage=usage.update(),
    )
