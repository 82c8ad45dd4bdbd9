"""knowledge: the bookkeeping stage that turns an episode's statements into facts with history.

The facts come from the extraction call (`tasks.extract`, which saw the episode in its window
and the known facts that may bear on it) or, when that call fell back or no LLM is configured,
from the offline heuristic (`tasks.facts.patterns`) on the same window. Each becomes a
`memory.knowledge.rules.Proposition` with its grounding in the source text, and `integrate` dedups,
cites, supersedes, links and embeds them. Idempotent like every stage: deterministic fact ids,
MERGE-style writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langgraph.runtime import Runtime

from memory.knowledge.facts import integrate
from memory.knowledge.rules import Proposition, grounding
from memory.schema import USER_SUBJECT, Episode, Fact, as_utc
from memory.services import Services, get_services
from memory.stores.base import NotFound
from memory.write.contextual import speaker_label
from nodes.context import Context, context_of
from nodes.fallback import stage_note
from nodes.state import BookkeepingState
from tasks.extract import ExtractedFact, Extraction
from tasks.facts.patterns import Said, heuristic_facts

WINDOW_TURNS = 2
"""Earlier turns of the same thread the extraction sees."""
KNOWN_FACTS = 8
"""Current facts shown to the model as the ones the turn may replace or build on ..."""
KNOWN_MIN = 0.2
"""... when at least this similar to the turn (a candidate the model is not shown still meets
the offline supersession rule after the call)."""
_ME = frozenset({"user", "the user", "i", "me", "myself", "speaker", "the speaker"})

__all__ = ["knowledge", "known_facts", "propositions", "read_window", "said_of"]


async def read_window(
    services: Services, episode: Episode, turns: int = WINDOW_TURNS
) -> list[Episode]:
    """The episodes just before this one in its thread, oldest first."""
    neighbours = await services.graph.temporal_neighbours(episode.tenant, episode.uid, turns)
    return [
        n.episode for n in neighbours if n.offset < 0 and n.episode.thread_id == episode.thread_id
    ]


async def known_facts(
    services: Services, episode: Episode, limit: int = KNOWN_FACTS
) -> list[tuple[str, Fact]]:
    """The current facts most similar to the turn, numbered `K1`, `K2`, ... for the prompt."""
    text = episode.user_text or episode.content
    query = (await services.embedder.embed_query(text)).tolist()
    hits = await services.vectors.search(
        "knowledge", episode.tenant, dense=query, limit=limit * 2, score_threshold=KNOWN_MIN
    )
    uids = [str(h.payload.get("fact_uid", "")) for h in hits]
    facts = [
        f for f in await services.graph.get_facts(episode.tenant, uids) if f.superseded_by is None
    ]
    return [(f"K{i}", f) for i, f in enumerate(facts[:limit], start=1)]


def said_of(episode: Episode, previous: Sequence[Episode]) -> Said:
    """How the heuristic reads a turn: who "I" is, and what was said just before."""
    speaker, body = speaker_label(episode.user_text)
    before = ""
    if previous:
        last = previous[-1]
        if speaker is None:
            before = last.agent_text or last.user_text
        else:
            before = speaker_label(last.user_text)[1]
    return Said(
        text=body,
        subject=speaker or USER_SUBJECT,
        when=as_utc(episode.created_at),
        previous=before,
        agent=speaker is None,
    )


def _valid_from(since: str) -> datetime | None:
    try:
        return as_utc(datetime.fromisoformat(since)) if since else None
    except ValueError:
        return None


def propositions(
    facts: Sequence[ExtractedFact],
    said: Said,
    source: str,
    refs: Mapping[str, str] | None = None,
) -> list[Proposition]:
    """Extracted facts as propositions: subjects normalised, ids resolved, grounding measured."""
    refs = refs or {}
    out = []
    for f in facts:
        subject = said.subject if f.subject.strip().lower() in _ME else f.subject.strip()
        ignore = [subject, said.subject] if subject != USER_SUBJECT else [said.subject]
        out.append(
            Proposition(
                text=f.text,
                kind=f.kind,
                subject=subject or said.subject,
                attribute=f.attribute,
                value=f.value,
                confidence=f.confidence,
                concepts=tuple(f.concepts),
                valid_from=_valid_from(f.since),
                ends=f.ends,
                replaces=f.replaces,
                grounding=grounding(f.text, source, ignore),
                supersedes=tuple(refs[r] for r in f.supersedes if r in refs),
                because=tuple(refs[r] for r in f.because if r in refs),
            )
        )
    return out


async def knowledge(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Facts from the extraction (or the offline heuristic), with dedup and supersession."""
    services = await get_services()
    tenant = context_of(runtime.context).user_id
    episode = await services.graph.get_episode(tenant, state["episode_uid"])
    if episode is None:
        raise NotFound(f"episode {state['episode_uid']!r} of tenant {tenant!r} does not exist")
    previous = await services.graph.get_episodes(tenant, list(state.get("window") or []))
    said = said_of(episode, previous)
    source = "\n".join([*(p.content for p in previous), episode.content])
    refs: dict[str, str] = dict(state.get("known") or {})
    notes = list(state.get("notes") or [])
    if not state.get("fallback"):
        try:
            facts = Extraction.model_validate(state["extraction"]).facts
            outcome = await integrate(
                services,
                episode,
                propositions(facts, said, source, refs),
                shown=set(refs.values()),
            )
            return {"facts": outcome.summary()}
        except Exception as exc:
            notes.append(stage_note("knowledge", exc))  # the model's facts: the heuristic's then
    try:
        outcome = await integrate(
            services, episode, propositions(heuristic_facts(said), said, source, refs), shown=None
        )
    except Exception as exc:
        notes.append(stage_note("heuristic knowledge", exc))
        return {"facts": {}, "notes": notes}
    return {"facts": outcome.summary(), "notes": notes}
