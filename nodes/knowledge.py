"""knowledge: the bookkeeping stage that turns an episode's statements into facts with history.

The facts come from the extraction call (`tasks.extract`, which saw the episode in its window
and the known facts that may bear on it) or, when that call fell back or no LLM is configured,
from the offline heuristic (`tasks.facts.patterns`) on the same window. Each becomes a
`memory.knowledge.rules.Proposition` with its grounding in the source text, and `integrate` dedups,
cites, supersedes, links and embeds them. Idempotent like every stage: deterministic fact ids,
MERGE-style writes. A turn that only passes on another person's words is recorded as
`third_party` (`tasks.facts.source`), and no fact about its speaker is stored from it.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from memory.knowledge.facts import integrate
from memory.schema import EpisodeSource
from memory.services import get_services
from nodes.context import Context, context_of
from nodes.fallback import stage_note
from nodes.state import BookkeepingState, episode_of
from tasks.extract import Extraction
from tasks.facts.patterns import heuristic_facts
from tasks.facts.propositions import propositions, said_of
from tasks.facts.source import not_of_the_speaker, turn_source


async def knowledge(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Facts from the extraction (or the offline heuristic), with dedup and supersession."""
    services, episode = await get_services(), episode_of(state, context_of(runtime.context).user_id)
    previous = await services.graph.episodes.get_many(
        episode.tenant, list(state.get("window") or [])
    )
    said = said_of(episode, previous)
    told = episode.source
    if told is EpisodeSource.STATED and (told := turn_source(said)) is not EpisodeSource.STATED:
        await services.graph.episodes.set_source(episode.tenant, episode.uid, told)
    source = "\n".join([*(p.content for p in previous), episode.content])
    refs: dict[str, str] = dict(state.get("known") or {})
    notes = list(state.get("notes") or [])
    if not state.get("fallback"):
        try:
            facts = Extraction.model_validate(state["extraction"]).facts
            outcome = await integrate(
                services,
                episode,
                not_of_the_speaker(propositions(facts, said, source, refs), said, told),
                shown=set(refs.values()),
            )
            return {"facts": outcome.summary()}
        except Exception as exc:
            notes.append(stage_note("knowledge", exc))  # the model's facts: the heuristic's then
    try:
        props = propositions(heuristic_facts(said), said, source, refs)
        outcome = await integrate(
            services, episode, not_of_the_speaker(props, said, told), shown=None
        )
    except Exception as exc:
        notes.append(stage_note("heuristic knowledge", exc))
        return {"facts": {}, "notes": notes}
    return {"facts": outcome.summary(), "notes": notes}
