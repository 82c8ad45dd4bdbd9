"""record: make the user's side of the turn durable before anything else, and say how.

The first node of a turn. Every user message of the run (those since the agent's last reply;
the reply answers the last) is written verbatim as a `pending` episode whose uid is its source
(tenant, thread, message id, else position), so a retried run writes nothing twice, and a known
id arriving with other words is a *conflict* the reply reports (nothing is written for it). If
the graph store cannot take it (down, locked, read-only, or unreachable in the last
`MNEME_STORE_RETRY_S` seconds: only unavailability trips that breaker, never a refusal of one
record), the turn goes to the process's durable outbox and memory is *degraded*; if even the
outbox fails, the turn is *not remembered*. `respond` tells the user which, and `remember`
completes the episode with the reply after it.

A message over `MNEME_MAX_MESSAGE_BYTES` is refused unwritten. The thread state keeps a bounded
copy of the message (the episode keeps it whole), so a huge paste is not carried into every
later run of the thread.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any, Final

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from memory.schema import NO_THREAD, episode_uid, utcnow
from memory.services import Services, get_services
from memory.settings import Settings, get_settings
from memory.stores.errors import unavailable
from memory.write.episodes import Conflict, InvalidInput, remember
from memory.write.filing import outbox_record
from memory.write.outbox import OutboxError, write_path
from nodes.context import Context, context_of
from nodes.state import AgentState, Earlier, Recorded
from tasks.content import THREAD_CHARS, Turn, bounded, last_human, read_turn, stored_user_text

log = logging.getLogger("mneme.nodes.record")

STORED: Final = "stored"
OUTBOX: Final = "outbox"
NOT_REMEMBERED: Final = "not_remembered"
REFUSED: Final = "refused"
EMPTY: Final = "empty"
CONFLICT: Final = "conflict"


def thread_of(runtime: Runtime[Context]) -> str:
    """The run's thread id, or `NO_THREAD`."""
    from langgraph.config import get_config

    info = runtime.execution_info
    if info is not None and info.thread_id:
        return str(info.thread_id)
    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:
        return NO_THREAD
    return str(configurable.get("thread_id") or NO_THREAD)


def source_of(turn: Turn, messages: list[Any]) -> str:
    """The message's identity in its thread: its id, else its position."""
    if turn.get("message_id"):
        return f"msg:{turn['message_id']}"
    return f"pos:{sum(1 for m in messages if getattr(m, 'type', '') == 'human')}"


def bounded_copy(messages: list[Any], turn: Turn) -> list[HumanMessage]:
    """The user's message as `turn` holds it, bounded, for the thread state (same id, so it
    replaces the original); nothing when it is short."""
    message = last_human(messages)
    if message is None or int(turn.get("chars", 0)) <= THREAD_CHARS or not message.id:
        return []
    return [HumanMessage(content=str(turn["text"]), id=message.id)]


async def services_or_settings() -> tuple[Services | None, Settings, str | None]:
    """The process services and their settings; when they cannot open, the process settings
    (the outbox still works) and why."""
    try:
        services = await get_services()
    except Exception as exc:
        log.warning("the stores cannot be opened (%s)", exc)
        return None, get_settings(), f"{type(exc).__name__}: {exc}"
    return services, services.settings, None


def unanswered(messages: list[Any]) -> list[int]:
    """The positions of the user's messages since the agent's last reply (this run's)."""
    out: list[int] = []
    for i, message in enumerate(messages):
        kind = getattr(message, "type", "")
        if kind == "ai":
            out = []
        elif kind == "human":
            out.append(i)
    return out


async def record(state: AgentState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write every user message of the run durably (graph store, else outbox) and say how the
    last one (the one the reply answers) went, and any earlier one that was not stored."""
    ctx = context_of(runtime.context)
    messages = state.get("messages") or []
    full = read_turn(messages)
    turn: Turn = {**full, "text": bounded(full["text"], THREAD_CHARS)}  # the state's copy
    services, settings, error = await services_or_settings()
    thread = thread_of(runtime)
    at = utcnow()
    earlier: list[Earlier] = []
    copies: list[HumanMessage] = []
    last = last_human(messages)
    before = [i for i in unanswered(messages) if messages[i] is not last]
    for n, i in enumerate(before):
        said = read_turn(messages[: i + 1])
        if said["empty"]:
            continue
        when = at - timedelta(milliseconds=len(before) - n)  # in the order they were sent
        done = await keep(ctx.user_id, thread, said, messages[: i + 1], when, services, settings)
        if done["outcome"] == STORED and services is not None and not done.get("duplicate"):
            services.bookkeeping.submit(ctx.user_id, str(done["uid"]))
        if done["outcome"] != STORED:
            uid, reason = str(done.get("uid", "")), str(done.get("reason", ""))
            earlier.append(Earlier(uid=uid, outcome=done["outcome"], reason=reason))
        copies += bounded_copy(
            messages[: i + 1], {**said, "text": bounded(said["text"], THREAD_CHARS)}
        )
    episode: Recorded
    if turn["empty"]:
        episode = {"stored": False, "outcome": EMPTY, "reason": "empty message"}
    else:
        episode = await keep(ctx.user_id, thread, full, messages, at, services, settings, error)
        copies += bounded_copy(messages, turn)
    if earlier:
        episode["earlier"] = earlier
    return {"turn": turn, "episode": episode, "messages": copies}


async def keep(
    tenant: str,
    thread: str,
    full: Turn,
    messages: list[Any],
    at: datetime,
    services: Services | None,
    settings: Settings,
    error: str | None = None,
) -> Recorded:
    """Write one user message (`full`, the last of `messages`) to the graph store, else the
    outbox, and say how it went."""
    size = len(str(full["text"]).encode("utf-8", "surrogatepass"))
    if size > settings.max_message_bytes:
        reason = (
            f"the message is {size:,} bytes; at most {settings.max_message_bytes:,} can be "
            "remembered (MNEME_MAX_MESSAGE_BYTES); split it into several"
        )
        return {"stored": False, "outcome": REFUSED, "reason": reason}
    uid = episode_uid(tenant, thread, source_of(full, messages))
    user_text = stored_user_text(full)
    episode: Recorded = {
        "uid": uid,
        "thread_id": thread,
        "created_at": at.isoformat(),
        "chars": size,
    }
    if "\x00" in user_text:  # no store keeps NUL; say so rather than drop it silently
        episode["removed_nul"] = user_text.count("\x00")
    outbox, breaker = write_path(settings.resolved_outbox_dir)
    error = error or breaker.last_error or "the graph store failed moments ago"
    if services is not None and breaker.allows():
        try:
            result = await remember(
                services, tenant=tenant, thread_id=thread, user_text=user_text, at=at, uid=uid
            )
            breaker.reset()
            if outbox.files():
                services.bookkeeping.drain_outbox_soon()
            return episode | {"stored": True, "outcome": STORED, "duplicate": result.duplicate}
        except Conflict:
            reason = (
                f"its id {full.get('message_id')!r} names an earlier message with other words; "
                "send the changed message as a new message (a new id)"
            )
            return episode | {"stored": False, "outcome": CONFLICT, "reason": reason}
        except InvalidInput as exc:
            return episode | {"stored": False, "outcome": REFUSED, "reason": str(exc)}
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.warning("graph store did not take the turn (%s); using the outbox", error)
            if unavailable(exc):  # a refusal of this record says nothing about the next turns
                breaker.trip(settings.store_retry_s, error)
    try:
        outbox.append(
            outbox_record(
                uid=uid,
                tenant=tenant,
                thread_id=thread,
                user_text=user_text,
                agent_text=None,
                created_at=at,
                ess=None,
            )
        )
    except OutboxError as exc:
        log.error("the outbox failed too (%s); this turn is NOT remembered", exc)
        return episode | {
            "stored": False,
            "outcome": NOT_REMEMBERED,
            "reason": "memory unavailable",
        }
    return episode | {"stored": True, "outcome": OUTBOX, "reason": "memory store unavailable"}
