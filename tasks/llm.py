"""How LLM tasks call a model: structured calls that degrade to heuristics, and free text.

A structured call validates the tool-call output against its Pydantic schema, retries once
showing the model its error, and then returns the caller's deterministic heuristic of the same
schema. No endpoint configured (offline mode), an endpoint that is down, slow or returns
garbage: all end in the heuristic with a logged warning, never an exception. Every request is
counted in the caller's `Usage` and the process totals of `ChatModels`.

A turn's foreground stages (route, rerank) share a latency budget (`turn_budget`, from
MNEME_TURN_BUDGET_S): inside it a structured call waits for the model only until the budget's end,
then answers with its heuristic (outcome `budget`); the first stage of the turn that does so
says so in a warning, the next ones with an info line only.

The clients themselves belong to the process (`memory.services.chat.ChatModels`, on
`Services.chat`); each task's prompt, schema and heuristic live in its own node module.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, ValidationError

from memory.services.chat import ChatModels, Tier
from memory.services.usage import Usage

log = logging.getLogger("mneme.llm")

T = TypeVar("T", bound=BaseModel)

NOSTREAM: RunnableConfig = {"tags": ["nostream"]}
"""Structured calls are internal decisions; keep them out of the `messages` stream mode."""

RETRY_PROMPT = (
    "Your previous answer could not be used: {error}\n"
    "Answer again by calling the function `{name}` exactly once, with arguments that match its "
    "JSON schema. No prose."
)


MIN_WAIT_S = 0.25
"""Less of the turn's budget than this left: the model is not asked at all."""

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("mneme_turn_deadline", default=None)
"""(the wall-clock time the turn's budget ends, the budget in seconds) inside `turn_budget`."""
_said: dict[float, None] = {}
"""The turns (by their budget's end) whose running out has been logged, newest last."""


@contextmanager
def turn_budget(started_at: float | None, budget_s: float) -> Iterator[None]:
    """Within this block structured calls wait for the model until `budget_s` seconds after
    `started_at` (the turn's start, epoch seconds) at most. No start or a budget of 0: no limit
    beyond MNEME_LLM_TIMEOUT_S."""
    limit = None if started_at is None or budget_s <= 0 else (started_at + budget_s, budget_s)
    token = _deadline.set(limit)
    try:
        yield
    finally:
        _deadline.reset(token)


def _over_budget(task: str) -> None:
    """Log that the turn answers without the model: a warning the first time in a turn, an
    info line for the stages after it."""
    limit = _deadline.get()
    if limit is None:
        return
    if limit[0] in _said:
        log.info("%s: the turn's latency budget is spent; using the heuristic", task)
        return
    _said[limit[0]] = None
    while len(_said) > 1024:
        del _said[next(iter(_said))]
    log.warning(
        "%s: the chat model did not answer within the turn's latency budget "
        "(MNEME_TURN_BUDGET_S=%g); answering this turn without it",
        task,
        limit[1],
    )


def _budget_left() -> float | None:
    """Seconds left of the turn's budget (None outside one)."""
    limit = _deadline.get()
    return None if limit is None else limit[0] - time.time()


# --------------------------------------------------------------------------- calls


def describe_error(exc: BaseException) -> str:
    """A one-line description of an endpoint failure for the log."""
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "timed out"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _raw_text(message: object) -> str:
    if not isinstance(message, AIMessage):
        return ""
    calls = [str(c.get("args", "")) for c in message.invalid_tool_calls]
    calls += [str(c.get("args", "")) for c in message.tool_calls]
    text = message.content if isinstance(message.content, str) else str(message.content)
    return "\n".join([*calls, text]).strip()[:2000] or "(empty answer)"


def _validated(schema: type[T], out: object) -> tuple[T | None, str]:
    if not isinstance(out, dict):
        return None, "the answer was not a function call"
    parsed, error = out.get("parsed"), out.get("parsing_error")
    if error is not None:
        return None, _short_error(error)
    if parsed is None:
        return None, f"you did not call the function `{schema.__name__}`"
    try:
        value = parsed if isinstance(parsed, schema) else schema.model_validate(parsed)
    except ValidationError as exc:
        return None, _short_error(exc)
    return value, ""


def _short_error(error: object) -> str:
    if isinstance(error, ValidationError):
        parts = [
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in error.errors()
        ]
        return "; ".join(parts[:8])
    cause = getattr(error, "__cause__", None)
    if isinstance(cause, ValidationError):
        return _short_error(cause)
    return str(error).strip()[:500] or type(error).__name__


def _tokens(message: BaseMessage | None) -> tuple[int, int]:
    meta = getattr(message, "usage_metadata", None) or {}
    return int(meta.get("input_tokens", 0) or 0), int(meta.get("output_tokens", 0) or 0)


def _request(
    chat: ChatModels, usage: Usage, task: str, message: BaseMessage | None, seconds: float
) -> None:
    tokens = _tokens(message)
    usage.request(task, tokens, seconds)
    chat.totals.add(task, 1, *tokens)


def _outcome(chat: ChatModels, usage: Usage, task: str, outcome: str) -> None:
    usage.outcome(task, outcome)
    if outcome in ("fallback", "error", "offline", "budget"):
        chat.totals.fallback(task)


async def structured(
    task: str,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    fallback: Callable[[], T],
    chat: ChatModels,
    usage: Usage,
    tier: Tier = Tier.STRUCTURED,
    model: str | None = None,
    max_tokens: int = 1024,
    check: Callable[[T], str | None] | None = None,
) -> T:
    """Ask for `schema` through function calling; validate, retry once, else `fallback()`.

    `check` adds validation the schema cannot express (e.g. ids that must exist): it returns
    an error message for the model, or None when the value is usable.
    """
    client = chat.get(tier, model, max_tokens)
    if client is None:
        _outcome(chat, usage, task, "offline")
        return fallback()
    try:
        bound = client.with_structured_output(schema, method="function_calling", include_raw=True)
    except Exception as exc:  # a model class without tool calling
        log.warning(
            "%s: the chat model cannot call functions (%s); using the heuristic",
            task,
            describe_error(exc),
        )
        _outcome(chat, usage, task, "error")
        return fallback()
    convo = list(messages)
    for attempt in (1, 2):
        wait = chat.timeout_s + 1.0
        left = _budget_left()
        if left is not None:
            if left < MIN_WAIT_S:
                _over_budget(task)
                _outcome(chat, usage, task, "budget")
                return fallback()
            wait = min(wait, left)
        started = time.perf_counter()
        try:
            out = await asyncio.wait_for(bound.ainvoke(convo, config=NOSTREAM), timeout=wait)
        except Exception as exc:
            _request(chat, usage, task, None, time.perf_counter() - started)
            if isinstance(exc, TimeoutError) and left is not None and wait < chat.timeout_s + 1.0:
                _over_budget(task)
                _outcome(chat, usage, task, "budget")
                return fallback()
            log.warning(
                "%s: the chat endpoint failed (%s); using the heuristic", task, describe_error(exc)
            )
            _outcome(chat, usage, task, "error")
            return fallback()
        raw = out.get("raw") if isinstance(out, dict) else None
        _request(
            chat,
            usage,
            task,
            raw if isinstance(raw, BaseMessage) else None,
            time.perf_counter() - started,
        )
        value, error = _validated(schema, out)
        if value is not None and check is not None:
            error = check(value) or ""
            value = None if error else value
        if value is not None:
            _outcome(chat, usage, task, "ok" if attempt == 1 else "retried")
            return value
        log.info("%s: attempt %d did not validate: %s", task, attempt, error)
        convo += [
            AIMessage(content=_raw_text(raw)),
            HumanMessage(content=RETRY_PROMPT.format(error=error, name=schema.__name__)),
        ]
    log.warning("%s: the model's answer did not validate twice; using the heuristic", task)
    _outcome(chat, usage, task, "fallback")
    return fallback()


async def generate(
    task: str,
    messages: Sequence[BaseMessage],
    *,
    chat: ChatModels,
    usage: Usage,
    tier: Tier = Tier.RESPOND,
    model: str | None = None,
    max_tokens: int = 512,
) -> str | None:
    """Free-text generation; None when offline, failed or empty (the caller's heuristic answers)."""
    client = chat.get(tier, model, max_tokens)
    if client is None:
        _outcome(chat, usage, task, "offline")
        return None
    started = time.perf_counter()
    try:
        reply = await asyncio.wait_for(client.ainvoke(list(messages)), timeout=chat.timeout_s + 1.0)
    except Exception as exc:
        _request(chat, usage, task, None, time.perf_counter() - started)
        log.warning(
            "%s: the chat endpoint failed (%s); answering without it", task, describe_error(exc)
        )
        _outcome(chat, usage, task, "error")
        return None
    _request(chat, usage, task, reply, time.perf_counter() - started)
    text = reply.text if isinstance(reply, BaseMessage) else ""
    if not text.strip():
        log.warning("%s: the model returned an empty answer; answering without it", task)
        _outcome(chat, usage, task, "fallback")
        return None
    _outcome(chat, usage, task, "ok")
    return text.strip()
