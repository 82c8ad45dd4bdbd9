"""extract: the bookkeeping stage that runs the extraction task (`tasks.extract`) on an episode.

One LLM call gives the chunks, prospective questions, topics, entities and facts, seeing the
episode in its window of the thread and, with an LLM, the known facts that may bear on it; the
heuristic extraction is its fallback, and the plain one (the whole turn as one chunk) the
fallback's. What failed is said in `notes`.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from memory.schema import Episode, Fact
from memory.services import get_services
from memory.services.usage import Usage
from nodes.context import Context, context_of
from nodes.fallback import stage_note
from nodes.state import BookkeepingState, episode_of
from tasks.extract import (
    extract,
    heuristic_extraction,
    known_facts,
    plain_extraction,
    read_window,
    window_lines,
)


async def extract_step(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Chunks, prospective questions, topics, entities and facts (one LLM call, heuristic
    fallback), seeing the episode in its window of the thread and, with an LLM, the known facts
    that may bear on it."""
    ctx = context_of(runtime.context)
    services, episode = await get_services(), episode_of(state, context_of(runtime.context).user_id)
    usage = Usage()
    notes: list[str] = []
    previous: list[Episode] = []
    known: list[tuple[str, Fact]] = []
    try:
        previous = list(await read_window(services, episode))
        if not services.chat.offline:
            known = list(await known_facts(services, episode))
    except Exception as exc:
        notes.append(stage_note("window", exc))  # extracted on its own, without the thread
    try:
        extraction, fallback = await extract(
            episode,
            chat=services.chat,
            usage=usage,
            model=ctx.model_structured,
            window=window_lines(previous),
            known=known,
        )
    except Exception as exc:
        notes.append(stage_note("extract", exc))
        try:
            extraction, fallback = heuristic_extraction(episode), True
        except Exception as inner:
            notes.append(stage_note("heuristic extraction", inner))
            extraction, fallback = plain_extraction(episode), True
    return {
        "extraction": extraction.model_dump(mode="json"),
        "fallback": fallback,
        "notes": notes,
        "window": [e.uid for e in previous],
        "known": {ref: fact.uid for ref, fact in known},
        "usage": usage.update(),
    }
