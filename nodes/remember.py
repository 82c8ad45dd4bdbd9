"""remember: write the turn as an episode durably, then schedule its bookkeeping.

The write is one small transaction (status `pending`) and happens before the reply returns;
bookkeeping runs on the bounded background queue, so the reply never waits for it. A full queue
or a crash leaves the episode `pending` for the sweep. What is stored is bounded: a side of the
turn longer than `STORE_CHARS` is cut, with a note in the stored text that says so.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.config import get_config
from langgraph.runtime import Runtime

from graph.context import Context, context_of
from graph.state import AgentState
from memory.episodes import InvalidInput
from memory.episodes import remember as remember_turn
from memory.schema import ESS, ReasoningType, utcnow
from memory.services import get_services
from nodes.content import STORE_CHARS, bounded, content_text

log = logging.getLogger("mneme.nodes.remember")

NO_THREAD = "no-thread"
"""Thread id recorded for runs without a thread (stateless runs)."""


def thread_of(runtime: Runtime[Context]) -> str:
    """The run's thread id, or `NO_THREAD`."""
    info = runtime.execution_info
    if info is not None and info.thread_id:
        return str(info.thread_id)
    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:
        return NO_THREAD
    return str(configurable.get("thread_id") or NO_THREAD)


def ess_record(ess: dict[str, Any]) -> ESS | None:
    """The ESS record to store, from the gate's state value."""
    if not ess:
        return None
    try:
        return ESS(
            score=float(ess["score"]),
            specificity=float(ess["specificity"]),
            grounding=float(ess["grounding"]),
            rigor=float(ess["rigor"]),
            source_quality=float(ess["source_quality"]),
            objectivity=float(ess["objectivity"]),
            reasoning_type=ReasoningType(ess.get("reasoning_type", "no_argument")),
        )
    except (KeyError, ValueError, TypeError):
        return None


def stored_user_text(turn: dict[str, Any]) -> str:
    """The user's side as stored: bounded, noting any non-text parts left out."""
    text = bounded(str(turn.get("text", "")), STORE_CHARS)
    dropped = turn.get("dropped_parts") or []
    if dropped:
        text += f"\n[non-text content not kept: {', '.join(sorted(set(dropped)))}]"
    return text


async def remember(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Store the turn as a pending episode and queue its bookkeeping."""
    ctx = context_of(runtime.context)
    turn = state.get("turn") or {}
    if turn.get("empty"):
        return {"episode": {"stored": False, "reason": "empty message: nothing to remember"}}
    messages = state.get("messages") or []
    reply = content_text(messages[-1].content)[0] if messages else ""
    user_text = stored_user_text(turn)
    agent_text = bounded(reply, STORE_CHARS)
    now = utcnow()
    try:
        services = await get_services()
        result = await remember_turn(
            services,
            tenant=ctx.user_id,
            thread_id=thread_of(runtime),
            user_text=user_text,
            agent_text=agent_text,
            at=now,
            ess=ess_record(state.get("ess") or {}),
        )
    except InvalidInput as exc:
        return {"episode": {"stored": False, "reason": str(exc)}}
    except Exception as exc:
        log.warning("could not store the episode (%s); this turn is not remembered", exc)
        return {"episode": {"stored": False, "reason": f"memory store unavailable: {exc}"}}
    scheduled = False if result.duplicate else services.bookkeeping.submit(ctx.user_id, result.uid)
    return {
        "episode": {
            "stored": True,
            "uid": result.uid,
            "duplicate": result.duplicate,
            "scheduled": scheduled,
            "truncated": int(turn.get("chars", 0)) > STORE_CHARS,
        }
    }
