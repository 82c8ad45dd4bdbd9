"""remember: complete the episode `record` wrote with the reply, then schedule its bookkeeping.

Runs after the reply's last token. The user's side is already durable (graph store or outbox,
see `nodes.record`); this adds the agent's side and the message's ESS to the same episode (same
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

from memory.schema import ESS, ReasoningType
from memory.write.episodes import outbox_record
from memory.write.outbox import OutboxError, write_path
from nodes.context import Context, context_of
from nodes.record import OUTBOX, STORED, services_or_settings, thread_of
from nodes.state import AgentState, Recorded, turn_of
from tasks.content import STORE_CHARS, bounded, content_text, stored_user_text

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


async def remember(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Attach the reply and ESS to the recorded episode and queue its bookkeeping."""
    ctx = context_of(runtime.context)
    episode = Recorded(**(state.get("episode") or {}))
    if episode.get("outcome") not in (STORED, OUTBOX):
        return {"episode": episode}
    messages = state.get("messages") or []
    reply = content_text(messages[-1].content)[0] if messages else ""
    agent_text = bounded(reply, STORE_CHARS)
    ess = ess_record(state.get("ess"))
    uid = str(episode["uid"])
    services, settings, _ = await services_or_settings()
    if episode["outcome"] == STORED and services is not None:
        try:
            await services.graph.episodes.attach_reply(ctx.user_id, uid, agent_text)
            if ess is not None:
                await services.graph.episodes.set_ess(ctx.user_id, uid, ess)
            scheduled = services.bookkeeping.submit(ctx.user_id, uid)
            return {"episode": episode | {"scheduled": scheduled, "reply_stored": True}}
        except Exception as exc:
            log.warning("could not attach the reply to %s (%s); using the outbox", uid, exc)
    turn = turn_of(state)
    outbox, _ = write_path(settings.resolved_outbox_dir)
    try:
        # The whole turn under the same uid: the drain creates it if the user's side is not
        # in the store yet, then attaches the reply (both idempotent).
        outbox.append(
            outbox_record(
                uid=uid,
                tenant=ctx.user_id,
                thread_id=str(episode.get("thread_id") or thread_of(runtime)),
                # Bounded in the state; the first write of this uid (record's, whole) wins.
                user_text=stored_user_text(turn),
                agent_text=agent_text,
                created_at=datetime.fromisoformat(str(episode["created_at"])),
                ess=ess,
            )
        )
    except OutboxError as exc:
        log.error("the reply of %s is not remembered (%s)", uid, exc)
        return {"episode": episode | {"scheduled": False, "reply_stored": False}}
    return {"episode": episode | {"scheduled": False, "reply_stored": "outbox"}}
