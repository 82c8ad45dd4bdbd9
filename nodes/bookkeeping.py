"""The bookkeeping graph's own stages: load, index, beliefs and link.

The other stages have a module each, beside the LLM task they run or the memory operation they
call: `nodes.extract`, `nodes.features`, `nodes.knowledge`, `nodes.compress` (the `thread`
stage), `nodes.sessions` and `nodes.salience`. Each is a small async function of (state,
runtime) returning a partial update of `nodes.state.BookkeepingState`; `graph/bookkeeping.py`
wires them, and that graph is the one bookkeeping pipeline the queue, the sweep, the CLI and the
eval run. `load` reads the episode once; every later stage takes it from the state
(`nodes.state.episode_of`). Every step is idempotent (deterministic point ids, MERGE-style graph
writes), so running an episode twice leaves the stores as running it once, and a crash at any
point is finished by the sweep, whose run loads the episode anew.

No episode is left unsearchable by its own content: when a stage fails on it (extraction,
contextual derivatives, beliefs, topics and entities), the step does what it still can (the
heuristic extraction, the splitter's plain chunks, skipping the failed part) and records why in
`notes`. A store that is unavailable is not such a failure: it raises, and the retry (bounded,
with backoff, then quarantine: `memory.write.quarantine`) waits for the store.

A new stage is one node function in `nodes/` and one node and edge in `graph/bookkeeping.py`.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from memory.beliefs.sponge import first_snapshot
from memory.schema import CO_MENTIONED, EntityType, EpisodeStatus, entity_key
from memory.services import get_services
from memory.services.usage import Usage
from memory.stores.base import NotFound
from memory.stores.graph.entities import EntityStore
from memory.text.chunking import split_turn
from memory.write.contextual import contextualise, speaker_label
from memory.write.episodes import index_episode
from nodes.context import Context, context_of
from nodes.fallback import stage_note
from nodes.state import BookkeepingState, episode_of
from tasks.extract import (
    Extraction,
    derivatives_from,
    topic_slugs,
)
from tasks.provenance import belief_provenance
from tasks.reflect import reflect
from tasks.respond import DEFAULT_SNAPSHOT

log = logging.getLogger("mneme.bookkeeping")


async def load(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Read the episode of the run's user (the run's one read of it) and its status."""
    services = await get_services()
    tenant, uid = context_of(runtime.context).user_id, state["episode_uid"]
    episode = await services.graph.episodes.get(tenant, uid)
    if episode is None:
        raise NotFound(f"episode {uid!r} of tenant {tenant!r} does not exist")
    return {"episode": episode.model_dump(mode="json"), "status": episode.status.value}


_note = stage_note


async def index(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Embed and upsert derivatives and questions; the episode becomes `indexed`.

    Chunks (LLM or splitter) get their context: third-person paraphrases as prospective
    questions and a context derivative with the previous turns (`memory.write.contextual`).
    """
    services, episode = await get_services(), episode_of(state, context_of(runtime.context).user_id)
    notes = list(state.get("notes") or [])
    try:
        extraction = Extraction.model_validate(state["extraction"])
        base = derivatives_from(episode, extraction, fallback=bool(state.get("fallback")))
    except Exception as exc:
        notes.append(_note("derivatives", exc))
        base = split_turn(episode.user_text, episode.agent_text)
    try:
        derivatives = (await contextualise(services.graph, episode, base)).derivatives
    except Exception as exc:
        notes.append(_note("contextual", exc))
        derivatives = base  # the plain chunks: searchable by what was said
    n = await index_episode(services, episode.tenant, episode.uid, derivatives, episode=episode)
    questions = sum(len(d.questions) for d in derivatives)
    return {
        "derivatives": n,
        "questions": questions,
        "notes": notes,
        "status": EpisodeStatus.INDEXED.value,
    }


async def beliefs(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Belief provenance when the stored ESS recommends it, then reflection if it became due.

    Provenance is idempotent per (episode, belief); a failed reflection is logged and runs again
    at the next trigger, it never fails the episode.
    """
    ctx = context_of(runtime.context)
    services, episode = await get_services(), episode_of(state, context_of(runtime.context).user_id)
    usage = Usage()
    notes = list(state.get("notes") or [])
    try:  # the sponge exists from the first turn: version 1 is the starting personality
        await first_snapshot(services, episode.tenant, DEFAULT_SNAPSHOT, episode.created_at)
    except Exception as exc:
        notes.append(_note("first snapshot", exc))
    try:
        result = await belief_provenance(services, episode, usage=usage, model=ctx.model_structured)
    except Exception as exc:
        note = _note("beliefs", exc)
        return {"beliefs": [], "reflected": False, "notes": [*notes, note]}
    reflected = False
    if result.reflection_due:
        try:
            outcome = await reflect(
                services, episode.tenant, usage=usage, model=ctx.model_structured
            )
            reflected = outcome.ran
        except Exception:
            log.warning(
                "reflection for %s failed; it runs at the next trigger",
                episode.tenant,
                exc_info=True,
            )
    return {
        "beliefs": list(result.summary()),
        "reflected": reflected,
        "proposed_features": result.features,
        "feature_counters": result.counters,
        "notes": notes,
        "usage": usage.update(),
    }


async def link(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Topics and entities into the graph (`nodes.salience` then marks it `processed`)."""
    services, episode = await get_services(), episode_of(state, context_of(runtime.context).user_id)
    graph, tenant = services.graph, episode.tenant
    notes = list(state.get("notes") or [])
    slugs: list[str] = []
    names: list[str] = []
    try:
        extraction = Extraction.model_validate(state["extraction"])
        slugs = topic_slugs(extraction)
        if slugs:
            await graph.topics.link(tenant, episode.uid, slugs)
        speaker, _ = speaker_label(episode.user_text)  # "Name: text" transcripts: the speaker
        if speaker:
            names.append((await graph.entities.upsert(tenant, speaker, EntityType.PERSON)).name)
        named: list[str] = []
        for entity in extraction.entities:
            stored = await graph.entities.upsert(tenant, entity.name.strip(), entity.type)
            named.append(stored.name)
        names += named
        if names:
            await graph.entities.link_mentions(tenant, episode.uid, names)
        await relate_co_mentioned(graph.entities, tenant, named)
    except Exception as exc:
        notes.append(_note("link", exc))  # searchable already; topics and entities skipped
    return {"topics": slugs, "entities": names, "notes": notes}


CO_MENTIONED_MAX = 6
"""Of the entities one turn names, the first this many are related pairwise (at most 15 edges a
turn): a turn that lists more is an enumeration, whose items say little about each other."""


async def relate_co_mentioned(entities: EntityStore, tenant: str, names: list[str]) -> None:
    """RELATED_TO edges ("co-mentioned") between the entities one turn names, each pair once,
    from the lower key to the higher (so the turn's word order does not matter). A relation the
    text stated (a fact's: "Ben's sister is Carla", written by the knowledge stage) is kept.

    The turn's speaker label is not one of them: the speaker of a transcript is in every turn
    they say, and relating them to all they mention would make every person one hop from
    everything they ever named."""
    first: dict[str, str] = {}
    for name in names:
        if entity_key(name) and len(first) < CO_MENTIONED_MAX:
            first.setdefault(entity_key(name), name)
    pairs = sorted(first.items())
    for i, (_, a) in enumerate(pairs):
        for _, b in pairs[i + 1 :]:
            await entities.relate(tenant, a, b, CO_MENTIONED, replace=False)
