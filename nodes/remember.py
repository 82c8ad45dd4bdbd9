"""remember: complete the episode `record` wrote with the reply, then schedule its bookkeeping.

Runs after the reply's last token. The user's side is already durable (graph store or outbox,
see `nodes.record`); this recomputes the episode's uid from the run's tenant, thread and last
user message (never from the state, which a caller can write) and adds the agent's side and the message's ESS to the same episode (same
uid) and submits it to the bounded background queue, so the reply never waits for bookkeeping.
If the graph store fails now, the whole turn goes to the outbox under the same uid, and the
drain completes the episode. A full queue or a crash leaves the episode `pending` for the sweep.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from langgraph.runtime import Runtime

from memory.schema import ESS, ReasoningType, as_utc, episode_uid, utcnow
from memory.write.filing import outbox_record
from memory.write.outbox import OutboxError, write_path
from nodes.context import Context, context_of
from nodes.record import OUTBOX, STORED, services_or_settings, source_of, thread_of
from nodes.state import AgentState, Recorded
from tasks.content import (
    STORE_CHARS,
    THREAD_CHARS,
    bounded,
    content_text,
    read_turn,
    stored_user_text,
)

log = logging.getLogger("mneme.nodes.remember")

__all__ = ["ess_record", "remember", "thread_of"]


def ess_record(ess: Mapping[str, Any] | None) -> ESS | None:
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


def recorded_at(episode: Recorded) -> datetime:
    """When `record` wrote the turn, as the state says, if that is a time and not in the
    future; else now (the state is the caller's to set)."""
    now = utcnow()
    try:
        at = as_utc(datetime.fromisoformat(str(episode.get("created_at"))))
    except (TypeError, ValueError):
        return now
    return min(at, now)


async def remember(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Attach the reply and ESS to the recorded episode and queue its bookkeeping."""
    ctx = context_of(runtime.context)
    episode = Recorded(**(state.get("episode") or {}))
    if episode.get("outcome") not in (STORED, OUTBOX):
        return {"episode": episode}
    messages = state.get("messages") or []
    # What is written is recomputed from the run's identity and messages, never taken from the
    # `episode` or `turn` channels: a caller can set those (`command.update`) and jump here.
    turn = read_turn(messages)
    thread = thread_of(runtime)
    uid = episode_uid(ctx.user_id, thread, source_of(turn, messages))
    episode["uid"] = uid
    reply = content_text(messages[-1].content)[0] if messages else ""
    agent_text = bounded(reply, STORE_CHARS)
    ess = ess_record(state.get("ess"))
    services, settings, _ = await services_or_settings()
    if episode["outcome"] == STORED and services is not None:
        try:
            if await services.graph.episodes.attach_reply(ctx.user_id, uid, agent_text):
                if ess is not None:
                    await services.graph.episodes.set_ess(ctx.user_id, uid, ess)
                scheduled = services.bookkeeping.submit(ctx.user_id, uid)
                return {"episode": episode | {"scheduled": scheduled, "reply_stored": True}}
            log.warning("episode %s is not in the store; the whole turn goes to the outbox", uid)
        except Exception as exc:
            log.warning("could not attach the reply to %s (%s); using the outbox", uid, exc)
    outbox, _ = write_path(settings.resolved_outbox_dir)
    try:
        # The whole turn under the same uid: the drain creates it if the user's side is not
        # in the store yet, then attaches the reply (both idempotent).
        outbox.append(
            outbox_record(
                uid=uid,
                tenant=ctx.user_id,
                thread_id=thread,
                # Bounded as the thread keeps it; the first write of this uid (record's) wins.
                user_text=stored_user_text({**turn, "text": bounded(turn["text"], THREAD_CHARS)}),
                agent_text=agent_text,
                created_at=recorded_at(episode),
                ess=ess,
            )
        )
    except OutboxError as exc:
        log.error("the reply of %s is not remembered (%s)", uid, exc)
        return {"episode": episode | {"scheduled": False, "reply_stored": False}}
    return {"episode": episode | {"scheduled": False, "reply_stored": "outbox"}}
