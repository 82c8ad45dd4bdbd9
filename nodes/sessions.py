"""sessions: the bookkeeping stage that summarises a thread's finished sessions
(`memory.write.sessions`) with the session-summary task (`tasks.sessions`).

The stage runs after `thread`: when the episode starts a new session of its thread (a turn after
the idle gap, or on a new day), the session before it is finished and gets its summary. The
last session of a thread is finished by consolidation once its gap has elapsed.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from memory.services import get_services
from memory.services.usage import Usage
from memory.write.sessions import (
    summarise_thread,
)
from nodes.context import Context, context_of
from nodes.fallback import stage_note
from nodes.state import BookkeepingState, episode_of
from tasks.sessions import (
    llm_summariser,
)


async def sessions(state: BookkeepingState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Summarise the sessions of the episode's thread that the episode finished."""
    ctx = context_of(runtime.context)
    services, episode = await get_services(), episode_of(state, context_of(runtime.context).user_id)
    usage = Usage()
    try:
        written = await summarise_thread(
            services,
            ctx.user_id,
            episode.thread_id,
            summarise=llm_summariser(services, usage, ctx.model_structured),
        )
    except Exception as exc:  # the turn is searchable already; the next pass summarises it
        note = stage_note("sessions", exc)
        return {"notes": [*(state.get("notes") or []), note], "usage": usage.update()}
    return {"sessions": written, "usage": usage.update()}
